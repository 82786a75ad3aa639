// OpenSSL's heap in the TLS fuzz targets: libc's allocator instead of AddressSanitizer's,
// with a leak check of its own. Include before anything that calls OpenSSL (it is set up
// before main, ahead of the definitions that follow the include).
//
// Why: OpenSSL is not built with the sanitizers, so ASan checks nothing inside it; what ASan
// costs it is its allocator on every block a handshake allocates and frees (a mutual TLS 1.3
// handshake with P-256 certificates makes thousands): the stack depot, the quarantine and the
// page faults of recycled memory, and libFuzzer's malloc hooks. Measured (BENCHMARKS.md,
// "Fuzzing", sixth round): a mutual handshake between two SSL objects in one process takes
// ~2.9 ms of CPU with ASan's allocator, ~1.3 ms with libc's, ~1.2 ms without sanitizers; the
// allocator was a third of fuzz_transport_tls's profile.
//
// What stays checked: every access of Partita's code (instrumented), and OpenSSL's copies
// into and out of Partita's buffers (ASan's memcpy/memset interceptors check the ranges
// against Partita's blocks, which stay ASan's). What LeakSanitizer no longer sees, OpenSSL's
// own blocks (an SSL never freed, say), is counted here instead: each_input() runs an input,
// and when more of OpenSSL's blocks are live after it than before, runs it once more; a
// second growth is a leak (abort, naming the count). One growth alone is OpenSSL filling a
// cache or a thread's first error queue, which a second run finds filled: the same rule as
// libFuzzer's own leak check (rerun an input whose mallocs outnumber its frees, then check).
// A block freed with the other allocator (free() on an OpenSSL block, OPENSSL_free on
// Partita's) is an ASan report, as a mismatch should be.
#pragma once

#include <openssl/crypto.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

extern "C" {
// glibc's allocator under its own names, which ASan does not intercept.
void* __libc_malloc(size_t bytes);
void* __libc_realloc(void* block, size_t bytes);
void __libc_free(void* block);
}

namespace partita::fuzz::openssl_heap {

// OpenSSL's blocks allocated and not yet freed, over all threads.
inline std::atomic<long> live_blocks{0};

inline void* allocate(size_t bytes, const char*, int) {
  void* block = __libc_malloc(bytes);
  if (block != nullptr) live_blocks.fetch_add(1, std::memory_order_relaxed);
  return block;
}

// OpenSSL 3 passes every CRYPTO_realloc here, a null block (an allocation) and a size of 0
// (a free) included.
inline void* reallocate(void* block, size_t bytes, const char* file, int line) {
  if (block == nullptr) return allocate(bytes, file, line);
  if (bytes == 0) {
    live_blocks.fetch_sub(1, std::memory_order_relaxed);
    __libc_free(block);
    return nullptr;
  }
  return __libc_realloc(block, bytes);  // on failure the old block stays live
}

inline void release(void* block, const char*, int) {
  if (block == nullptr) return;
  live_blocks.fetch_sub(1, std::memory_order_relaxed);
  __libc_free(block);
}

// Set before main; OpenSSL accepts new functions only before its first allocation.
inline const bool kInstalled = [] {
  if (CRYPTO_set_mem_functions(allocate, reallocate, release) != 1) {
    std::fprintf(stderr, "fuzz: OpenSSL allocated before its allocator could be set (openssl_heap.h)\n");
    std::abort();
  }
  return true;
}();

// Runs `input` (every thread that serves it done with its blocks when it returns), and
// aborts when it leaks OpenSSL blocks: see the header's comment.
template <typename Input>
void each_input(Input&& input) {
  const long before = live_blocks.load();
  input();
  if (live_blocks.load() <= before) return;
  const long again = live_blocks.load();
  input();
  const long after = live_blocks.load();
  if (after > again) {
    std::fprintf(stderr, "fuzz: OpenSSL blocks leaked: %ld more live after each run of this input\n", after - again);
    std::abort();
  }
}

}  // namespace partita::fuzz::openssl_heap
