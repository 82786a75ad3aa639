// The consumer's side of a sampler actor: epochs and batches by blocking requests, for a
// thread of the consumer's own (a trainer's, a benchmark's), never an actor's handler.
//
// In one process the batches arrive by move (messages/sampled_batch.h): no copy, no codec.
#pragma once

#include <caf/scoped_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "graph/buffer_pool.h"
#include "graph/epoch_plan.h"
#include "graph/mini_batch.h"

namespace partita {

// Tells `sampler` where the partitions are (protocol.h: partitions) and waits, at most
// `deadline`, until it has connected to them. addresses[p]: "HOST:PORT" of the daemon of
// partition p in another process, or empty (all in this process). Throws Error with the
// sampler's reason (naming the partition) or the transport's.
void wire_sampler(caf::actor_system& system, const sampler_actor& sampler, const std::vector<caf::actor>& partitions,
                  const std::vector<std::string>& addresses, std::chrono::milliseconds deadline);

class SamplerClient {
 public:
  // `deadline` bounds every request: an epoch's acknowledgement, each batch's arrival.
  // `name` ("trainer 3's sampler") starts every error.
  SamplerClient(caf::actor_system& system, sampler_actor sampler, std::chrono::milliseconds deadline,
                std::string name);
  SamplerClient(const SamplerClient&) = delete;
  SamplerClient& operator=(const SamplerClient&) = delete;

  // Plans an epoch of `split` ("train", "val", "test"; see protocol.h) and returns its
  // number of batches. Throws Error naming the sampler when it refuses or does not answer.
  int64_t start_epoch(const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
                      bool shuffle);
  // Makes `plan` (a trainer's own batches: link prediction; protocol.h, link plan) the
  // sampler's epoch and returns its number of batches. Throws Error as start_epoch does.
  int64_t start_link_plan(const EpochPlan& plan);
  // The epoch's next batch, in plan order. Throws Error naming the sampler and why: the
  // sampler's own error (naming the batch and the partition), a deadline, a lost sampler.
  MiniBatch next();
  // The same, with the batch's sampling key.
  MiniBatch next(SampleKey& key);

  // Hands a batch's feature buffer back to the sampler (in this process) once done with
  // it, so that it fills it again instead of faulting in fresh memory; a no-op when the
  // sampler is in another process, or before next() returned a batch (which tells the
  // client where buffers go back: take the batch first). Thread-safe, and safe after the
  // client is gone.
  std::function<void(std::vector<float>&&)> recycler() const;
  void give_back(std::vector<float>&& x) const { recycler()(std::move(x)); }

  const sampler_actor& actor() const { return sampler_; }

 private:
  // Sends `request...` to the sampler and returns the batch count of its ack; Error naming
  // `what()` (what was asked) when the sampler refuses or does not answer in time.
  template <class What, class... Ts>
  int64_t ask_for_epoch(const What& what, Ts&&... request);

  caf::actor_system& system_;
  sampler_actor sampler_;
  std::chrono::milliseconds deadline_;
  std::string name_;
  caf::scoped_actor self_;
  std::weak_ptr<BufferPool> pool_;  // of the sampler, learnt from its batches
};

}  // namespace partita
