// libtorch process settings: intra-op threads, and a check that matrix products run on an
// optimised BLAS. Debian's libtorch calls whatever libblas.so.3 the alternatives system
// points at; with the reference BLAS, matmul is 15-25x slower, silently.
#pragma once

#include <string>

namespace partita {

// Sets libtorch's intra-op thread count (it starts at 1 on this platform); 0 = all cores.
void set_torch_threads(int threads);
int torch_threads();

// The BLAS library loaded into this process ("openblas", "reference", or the library's
// file name), read from the process's loaded shared objects after a matmul forced it in.
std::string loaded_blas();

// Logs a warning naming the fix when the loaded BLAS is not an optimised one.
void warn_if_slow_blas();

}  // namespace partita
