// libtorch process settings: intra-op threads, and a check that matrix products run on an
// optimised BLAS. Debian's libtorch calls whatever libblas.so.3 the alternatives system
// points at; with the reference BLAS, matmul is 15-25x slower, silently.
#pragma once

#include <cstdint>
#include <string>

namespace partita {

// Sets the cores a process computes on (0 = all): OpenBLAS's pool, which runs the matrix
// products, gets `threads`; libtorch's own intra-op pool (OpenMP: element-wise operations,
// the kernels of aggregate.h and keyed_dropout.h) gets one thread whatever `threads` is.
//
// Why: the two pools fight over the cores. After each parallel region libgomp's workers
// spin, slowing the product that follows, and after each product OpenBLAS's idle workers
// spin, so an element-wise operation split over 2 threads waits for a core (dropout's
// backward took 25 ms on 2 threads against 10 on one). Measured on the benchmark graph's
// 3-layer GraphSAGE step (`bench train`, BENCHMARKS.md), with 2 cores: 260-660 ms with 2
// threads in both pools, 180-310 ms with one intra-op thread, as fast as libgomp told not to
// spin (OMP_WAIT_POLICY=PASSIVE, which only works from the environment); the products ran at
// 100-200 GFLOP/s either way, whichever share of the machine others left.
void set_torch_threads(int threads);
int torch_threads();  // libtorch's intra-op threads: 1 after set_torch_threads
// OpenBLAS's thread count, or 0 when the loaded BLAS is not OpenBLAS.
int blas_threads();

// Keeps freed memory in glibc's heap instead of returning it to the system, and makes
// libtorch take CPU tensors from plain malloc so that the heap's freed chunks are reused.
// Without the first, glibc serves each tensor of more than a few MB with a fresh mmap that
// every training step page-faults and zero-fills again (a quarter of a GAT step's time);
// without the second, libtorch's aligned allocations are never reused by glibc 2.36 and
// the kept heap grows by every step's tensors (a job's memory grew without bound). For
// processes that train; call before the first step. Idempotent.
void tune_malloc_for_training();

// Gives the heap's free pages back to the system (malloc_trim), once per epoch in a process
// whatever the number of its trainers: the first caller for `epoch` trims, later callers for
// the same epoch return at once. Called by a trainer as it starts an epoch, after the
// previous epoch's evaluation and checkpoint freed their buffers. Why: the heap kept by
// tune_malloc_for_training is spread over one glibc arena per thread that allocated, and
// chunks freed in one arena are not reused by another, so a process that drives a job and
// trains in it grew by 1-2% over 2,000 epochs (bench/soak.sh) where one arena stayed flat.
// Trimming between epochs costs no page faults inside an epoch's steps.
void release_heap_between_epochs(uint64_t epoch);

// The BLAS library loaded into this process ("openblas", "reference", or the library's
// file name), read from the process's loaded shared objects after a matmul forced it in.
std::string loaded_blas();

// Logs a warning naming the fix when the loaded BLAS is not an optimised one.
void warn_if_slow_blas();

}  // namespace partita
