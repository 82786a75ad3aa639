// Vectors whose memory is backed by 2 MB pages where the kernel gives them (transparent
// huge pages in `madvise` mode, as on the project's machines; elsewhere plain pages).
//
// Two costs of a large fresh buffer fall with the page size: first writes fault once per
// page (a 49 MB checkpoint is 12,000 faults on 4 KB pages and 24 on 2 MB ones; on the
// project's machines saving one took 0.27 s on 4 KB pages and 0.03 s on 2 MB pages, a
// memcpy 0.008 s: BENCHMARKS.md, "Saving a job's training state"), and random reads of a
// big array miss the TLB on every 4 KB page (the temporal sampler's time order: a page
// walk on top of each cache miss).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace partita {

// Resizes the empty `v` to `n` value-initialised elements: the allocation is reserved
// untouched, its whole 2 MB pages advised (best effort), then written.
template <typename T>
void resize_on_huge_pages(std::vector<T>& v, size_t n) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  v.reserve(n);
  const uintptr_t first = (reinterpret_cast<uintptr_t>(v.data()) + kHugePage - 1) / kHugePage * kHugePage;
  const uintptr_t last = reinterpret_cast<uintptr_t>(v.data() + n) / kHugePage * kHugePage;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  v.resize(n);
}

}  // namespace partita
