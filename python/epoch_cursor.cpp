#include "python/epoch_cursor.h"

#include <numeric>
#include <utility>
#include <vector>

#include "base/error.h"

namespace partita::python {

EpochPlan EpochCursor::plan_positions(int64_t count, int64_t batch_size, uint64_t seed, uint64_t epoch, bool shuffle,
                                      bool drop_last) {
  std::vector<int64_t> positions(static_cast<size_t>(count));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  return plan_epoch(Span<const int64_t>(positions), batch_size, seed, epoch, shuffle, drop_last);
}

void EpochCursor::start(EpochPlan positions, const EpochPlan& seeds) {
  positions_ = std::move(positions);
  started_ = false;
  const int64_t batches = session_.start_plan(seeds);
  if (batches != positions_.num_batches()) {
    throw Error(name_ + ": the sampler planned " + std::to_string(batches) + " batches for an epoch of " +
                std::to_string(positions_.num_batches()));
  }
  started_ = true;
  next_batch_ = 0;
}

MiniBatch EpochCursor::next(int64_t& b) {
  if (!started_) throw UsageError(name_ + ": next batch before an epoch was started");
  if (next_batch_ >= positions_.num_batches()) {
    throw UsageError(name_ + ": all " + std::to_string(positions_.num_batches()) + " batches of epoch " +
                     std::to_string(positions_.epoch) + " were taken");
  }
  SampleKey key;
  MiniBatch batch = session_.next(key);
  b = next_batch_++;
  if (key.epoch != positions_.epoch || key.batch != static_cast<uint64_t>(b)) {
    throw Error(name_ + ": the sampler sent batch " + std::to_string(key.batch) + " of epoch " +
                std::to_string(key.epoch) + " for batch " + std::to_string(b) + " of epoch " +
                std::to_string(positions_.epoch));
  }
  return batch;
}

}  // namespace partita::python
