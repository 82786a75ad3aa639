// The most any cache of k rows can serve. When batches are independent draws (random seeds,
// as a loader's batches are), a cache's contents when a batch is looked up do not depend on
// that batch, and the batch asks for each row once, so the rows it serves in expectation are
// the sum, over the rows held, of the probability that a batch asks for the row: at most the
// sum of the k largest. The static cache of the k rows most batches ask for therefore serves
// the most in expectation; no policy blind to the batches to come, static or dynamic, beats
// it (the independent reference model at batch granularity; A0 of Aho, Denning and Ullman,
// 1971). Estimated here by counting,
// over a sample of batches, the batches that ask for each row, then scoring the top k of a
// ranking on batches: in-sample (ranked and scored on the same batches: optimistic, as the
// ranking fits the sample's noise) or held out (ranked on some, scored on others: what a
// policy that counted those batches first would reach). A loader's plan is known ahead, so a
// cache could also look at the batches to come: lookahead_coverage measures that, up to
// knowing every batch to come.
//
// Measured on the shared RMAT graph in 2 partitions (`partita bench loader
// --cache-percents`, BENCHMARKS.md "A cache of remote rows"): with 10% of the remote rows,
// the static top k serves 0.40 of the rows a batch asks for (held out; the degree policy
// 0.395), a cache that knew every batch to come 0.499 (one that sees the next batch: 0.498),
// and k rows could serve at most 0.51 of a batch's 100,857: no cache of 10% cuts the remote
// bytes by half there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/span.h"

namespace partita {

// How many batches of a sample ask for each row id in [0, num_ids).
class RowDemand {
 public:
  explicit RowDemand(int64_t num_ids);

  // Counts one batch asking for `ids` (an id repeated within the batch counts once: a batch
  // fetches a row once). Throws Error naming an id outside [0, num_ids).
  void add_batch(Span<const int64_t> ids);

  int64_t num_ids() const { return static_cast<int64_t>(batches_asking_.size()); }
  int64_t batches() const { return batches_; }
  // Rows asked for, summed over the batches: the lookups a cache would see.
  uint64_t asked() const { return asked_; }
  // The batches that asked for `id` (0 for an id outside [0, num_ids)).
  uint32_t batches_asking(int64_t id) const;
  // The ids asked for at least once, most batches first (ties: smaller id first), the
  // first `limit` of them: the static top-k cache's contents, best first.
  std::vector<int64_t> ranked(size_t limit) const;

 private:
  std::vector<uint32_t> batches_asking_;
  std::vector<int64_t> last_batch_;  // per id: the batch that last counted it (-1: none)
  int64_t batches_ = 0;
  uint64_t asked_ = 0;
};

// For each k in `sizes`: the share of the rows `batches` ask for (an id repeated within a
// batch counts once) that a cache of k rows serves when it sees the next `window` batches'
// rows: after each batch it keeps, of the rows it held and those the batch fetched, first the
// rows the window asks for, soonest first, then the first of `ranking`; rows in neither are
// dropped. It starts warm, with the k best by the same rule before batch 0 (as the static top
// k is scored). A window of batches.size() or more knows every batch to come: Belady's MIN at
// batch granularity (`ranking` is then unused), which no policy beats on the same batches,
// clairvoyant or not: the bound on the rows (and so the bytes) any cache of k rows saves. A
// window of 0 is the static cache of the top k of `ranking`. A loader knows the rows of the
// batches it has sampled ahead: a window of its batches in flight is a policy it could run.
// Throws Error naming an id outside [0, num_ids), or a negative window.
std::vector<double> lookahead_coverage(const std::vector<std::vector<int64_t>>& batches, int64_t num_ids,
                                       int64_t window, Span<const int64_t> ranking, Span<const size_t> sizes);

// For each k in `sizes`: the share of `scored`'s asked rows held by a cache of the first k
// ids of `ranking` (sum of their batches_asking over scored.asked(); 0 when nothing was
// asked). A ranking shorter than k holds only its ids. Repeated ids in `ranking` count once.
std::vector<double> cache_coverage(Span<const int64_t> ranking, const RowDemand& scored, Span<const size_t> sizes);

}  // namespace partita
