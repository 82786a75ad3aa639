// One epoch of a Python loader (NodeLoader, LinkLoader) as the sampler serves it: the
// loader plans its batches over positions in its own inputs (seeds, edges), hands the
// sampler the seeds of that plan (protocol.h: link plan), and takes the batches in plan
// order, each checked against the key the sampler sent with it. The loaders differ only in
// what a batch's seeds are and what Python receives.
//
// Not thread-safe: the loader holds its lock around start() and next().
#pragma once

#include <cstdint>
#include <string>

#include "graph/epoch_plan.h"
#include "graph/mini_batch.h"
#include "python/sampler_session.h"

namespace partita::python {

class EpochCursor {
 public:
  // `name` ("NeighborLoader") starts every error.
  EpochCursor(SamplerSession& session, std::string name) : session_(session), name_(std::move(name)) {}

  // Positions 0..count-1 shuffled with (seed, epoch) unless !shuffle and cut into batches
  // (graph/epoch_plan.h): the plan a loader builds its seeds from.
  static EpochPlan plan_positions(int64_t count, int64_t batch_size, uint64_t seed, uint64_t epoch, bool shuffle,
                                  bool drop_last);

  // Starts the epoch `positions`, whose batches' seeds are `seeds` (a plan of as many
  // batches); what is left of the previous epoch is dropped. Throws as SamplerSession does,
  // and Error when the sampler plans another number of batches.
  void start(EpochPlan positions, const EpochPlan& seeds);
  // The epoch's next batch; `b` is its index in positions(). Blocks until the sampler has
  // it (call without Python's lock). Throws UsageError before an epoch or past its last
  // batch, Error for a batch out of order, and as SamplerSession::next does.
  MiniBatch next(int64_t& b);

  const EpochPlan& positions() const { return positions_; }

 private:
  SamplerSession& session_;
  const std::string name_;
  EpochPlan positions_;
  bool started_ = false;
  int64_t next_batch_ = 0;
};

}  // namespace partita::python
