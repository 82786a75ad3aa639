// The loader of one trainer: the epoch's batches, sampled ahead by worker threads, handed
// out in order. At most `prefetch` batches are sampled but not yet taken: a worker needs a
// credit to start a batch, and the trainer returns one with every batch it takes (CAF has
// no backpressure of its own, and an unbounded queue of mini-batches exhausts memory).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "graph/epoch_plan.h"
#include "graph/mini_batch.h"

namespace partita {

// Samples one batch; one per worker, so it need not be thread-safe (e.g. a
// DistributedSampler). Throws partita::Error on failure.
using BatchSampler = std::function<MiniBatch(Span<const int64_t> seeds, const SampleKey& key)>;

struct LoaderOptions {
  int workers = 1;   // sampling threads
  int prefetch = 2;  // batches sampled ahead of the trainer, at most
  std::chrono::milliseconds deadline{60000};  // for next(): a batch must arrive in time
};

class Loader {
 public:
  // make_sampler is called once per worker, on the constructing thread. Throws UsageError
  // for workers or prefetch below 1.
  Loader(EpochPlan plan, const std::function<BatchSampler()>& make_sampler, LoaderOptions options);
  // Stops the workers (each finishes the batch it is sampling) and joins them.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  int64_t num_batches() const { return plan_.num_batches(); }
  // Whether next() has a batch left to give.
  bool has_next() const { return next_to_take_ < plan_.num_batches(); }

  // The next batch in plan order. Rethrows a worker's error (naming the batch), throws
  // Error when no batch arrives within the deadline or none is left.
  MiniBatch next();

  // Most batches that were ever sampled (or being sampled) but not yet taken.
  int max_ahead() const;

 private:
  void work(BatchSampler sample);

  const EpochPlan plan_;
  const LoaderOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable credit_or_stop_;  // workers wait here
  std::condition_variable batch_ready_;     // next() waits here
  int64_t next_to_start_ = 0;               // the batch the next free worker samples
  int64_t next_to_take_ = 0;                // the batch next() returns
  std::map<int64_t, MiniBatch> ready_;      // sampled, not yet taken
  std::exception_ptr failure_;
  int64_t failed_batch_ = -1;
  bool stopping_ = false;
  int max_ahead_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace partita
