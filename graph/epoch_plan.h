// Cutting an epoch's seeds into batches: the loader's plan, the same on every machine.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/span.h"
#include "graph/hop_sampler.h"

namespace partita {

struct EpochPlan {
  std::vector<int64_t> order;    // the seeds, shuffled with (job seed, epoch)
  std::vector<int64_t> offsets;  // batch b is order[offsets[b], offsets[b+1])
  uint64_t job_seed = 0;
  uint64_t epoch = 0;
  // Link batches (a trainer's plan, not cut from a split): batch b's hops leave out the
  // edges excluded_src/dst[excluded_offsets[b], excluded_offsets[b+1]) and their reverses
  // (BatchAssembly::exclude_edges). Empty: nothing is left out.
  std::vector<int64_t> excluded_src, excluded_dst, excluded_offsets;
  // Temporal sampling: each seed's time bound, as `order`; empty otherwise.
  std::vector<int64_t> times;

  int64_t num_batches() const { return static_cast<int64_t>(offsets.size()) - 1; }
  Span<const int64_t> batch(int64_t b) const {
    return {order.data() + offsets[b], static_cast<size_t>(offsets[b + 1] - offsets[b])};
  }
  bool excludes_edges() const { return !excluded_offsets.empty(); }
  Span<const int64_t> times_of(int64_t b) const {
    if (times.empty()) return {};
    return {times.data() + offsets[b], static_cast<size_t>(offsets[b + 1] - offsets[b])};
  }
  Span<const int64_t> excluded_src_of(int64_t b) const { return excluded(excluded_src, b); }
  Span<const int64_t> excluded_dst_of(int64_t b) const { return excluded(excluded_dst, b); }
  // The key of batch b: what makes its sampling reproducible anywhere.
  SampleKey key(int64_t b) const { return {job_seed, epoch, static_cast<uint64_t>(b)}; }

 private:
  Span<const int64_t> excluded(const std::vector<int64_t>& ends, int64_t b) const {
    return {ends.data() + excluded_offsets[b], static_cast<size_t>(excluded_offsets[b + 1] - excluded_offsets[b])};
  }
};

// Share `share` of `shares` of `count` seeds: the contiguous slice [count * share / shares,
// count * (share + 1) / shares). The shares of 0..shares-1 cover every seed once, and differ
// in size by at most one. Requires 0 <= share < shares. (Trainer t of k per partition trains
// on share t % k of its partition's seeds; its sampler serves that share.)
std::pair<int64_t, int64_t> share_of(int64_t count, int64_t share, int64_t shares);

// Shuffles `seeds` with (job_seed, epoch) (no shuffle if `shuffle` is false) and cuts them
// into batches of batch_size; the last, smaller batch is dropped if drop_last. Throws
// UsageError if batch_size < 1.
EpochPlan plan_epoch(Span<const int64_t> seeds, int64_t batch_size, uint64_t job_seed,
                     uint64_t epoch, bool shuffle = true, bool drop_last = false);

}  // namespace partita
