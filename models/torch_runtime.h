// libtorch process settings: intra-op threads, and a check that matrix products run on an
// optimised BLAS. Debian's libtorch calls whatever libblas.so.3 the alternatives system
// points at; with the reference BLAS, matmul is 15-25x slower, silently.
#pragma once

#include <string>

namespace partita {

// Sets libtorch's intra-op thread count (it starts at 1 on this platform); 0 = all cores.
// OpenBLAS keeps a thread pool of its own, sized to all cores whatever libtorch is told:
// it gets the same count, so that `threads` bounds the matrix products too.
void set_torch_threads(int threads);
int torch_threads();
// OpenBLAS's thread count, or 0 when the loaded BLAS is not OpenBLAS.
int blas_threads();

// Keeps freed memory in glibc's heap instead of returning it to the system. libtorch's CPU
// allocator is plain malloc, and glibc serves each tensor of more than a few MB with a
// fresh mmap that every training step page-faults and zero-fills again (a quarter of a
// GAT step's time). For processes that train; call before the first step.
void tune_malloc_for_training();

// The BLAS library loaded into this process ("openblas", "reference", or the library's
// file name), read from the process's loaded shared objects after a matmul forced it in.
std::string loaded_blas();

// Logs a warning naming the fix when the loaded BLAS is not an optimised one.
void warn_if_slow_blas();

}  // namespace partita
