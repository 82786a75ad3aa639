// The actors behind one Python consumer of batches, and its client: the sampler actor of one
// partition and a partition actor for every other part, spawned through the embedded
// runtime with the settings a training job gives them (actors/actor_types.h), placed and
// wired as the job driver places and wires them (part p on node p mod D; wire_sampler), and
// read through a SamplerClient (epoch, then next; in one process each batch arrives by
// move, from a node as one Cap'n Proto message). It is the one sampling pipeline of training,
// evaluation and benchmarks, with its prefetch: the sampler works `prefetch` batches ahead.
//
// Thread-safe. A consumer blocked in next() is released at once by close() and by the
// runtime's shutdown (the sampler's exit answers every waiting request), so neither waits
// for a batch's deadline.
#pragma once

#include <caf/actor.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/sampler_client.h"
#include "graph/epoch_plan.h"
#include "graph/mini_batch.h"
#include "python/embedded_runtime.h"
#include "python/graph_handle.h"

namespace partita::python {

struct SessionOptions {
  std::vector<int> fanouts;  // per hop; -1 takes every neighbour
  bool replace = false;      // sample with replacement
  bool disjoint = false;     // one tree per seed (MiniBatch::batch)
  int prefetch = 2;          // batches in flight, ahead of next()
  std::chrono::milliseconds deadline{60000};  // for each request, the sampler's and ours
  std::string features = "auto";  // where the partitions keep their features (partition_stores.h)
  // Temporal sampling (actors/actor_types.h: temporal, temporal_strategy): "none", or "edge"
  // (edges at or before each seed's time; needs disjoint), by "uniform" or "last" draws.
  std::string temporal = "none";
  std::string temporal_strategy = "uniform";
};

class SamplerSession : public RuntimeUser {
 public:
  // Spawns and wires the actors for the sampler of partition `part` of `graph`. `name`
  // ("NeighborLoader") starts every error. Throws RuntimeClosed when the runtime is not
  // running; UsageError naming the problem for a part outside the graph or a bad option
  // (the actor types' own checks, naming the setting); Error when an actor fails to start.
  SamplerSession(const GraphHandle& graph, int part, const SessionOptions& options, std::string name);
  ~SamplerSession() override;
  SamplerSession(const SamplerSession&) = delete;
  SamplerSession& operator=(const SamplerSession&) = delete;

  // The trainer's epoch of the partition's split (protocol.h: epoch); its batch count.
  int64_t start_split_epoch(const std::string& split, uint64_t seed, uint64_t epoch, int64_t batch_size,
                            bool shuffle);
  // An epoch of batches planned by the caller (protocol.h: link plan), seeds of any part;
  // its batch count.
  int64_t start_plan(const EpochPlan& plan);
  // The epoch's next batch and its key. Blocks up to the deadline; call without holding
  // Python's lock. Throws RuntimeClosed once the runtime stopped, Error once closed or when
  // the sampler fails (its message names the batch and the partition).
  MiniBatch next(SampleKey& key);
  // Where a batch's feature buffer goes back to the sampler once Python is done with it
  // (SamplerClient::recycler); safe to call after the session is gone.
  std::function<void(std::vector<float>&&)> recycler() const;

  // Stops the actors; every later call throws Error. Idempotent.
  void close();
  void close_for_shutdown() override;

 private:
  // Sends the actors their exit (releasing a waiting consumer), then drops them and the
  // client under the lock; `why` is what later calls say.
  void close_with(const std::string& why, bool runtime_gone);
  // Throws the error of a session that is closed or closing.
  void check_open() const;
  // Runs `request` (a call of the sampler client) under mutex_, open first; an Error from a session
  // closed meanwhile becomes the close's own error.
  template <class Ask>
  auto ask(Ask request);

  const std::string name_;
  mutable std::mutex mutex_;  // held by next() while waiting, and while dropping the client
  std::unique_ptr<SamplerClient> client_;
  std::function<void(std::vector<float>&&)> recycler_;  // the last batch's pool
  mutable std::mutex actors_mutex_;  // never held while waiting; after mutex_ when both are
  std::string closed_;               // why, from the moment closing starts
  bool runtime_gone_ = false;
  caf::actor owner_;
  std::vector<caf::actor> actors_;  // the sampler first
};

}  // namespace partita::python
