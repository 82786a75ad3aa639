#include "actors/loader.h"

#include <string>

#include "base/error.h"

namespace partita {

Loader::Loader(EpochPlan plan, const std::function<BatchSampler()>& make_sampler, LoaderOptions options)
    : plan_(std::move(plan)), options_(options) {
  if (options_.workers < 1) throw UsageError("loader: workers must be at least 1");
  if (options_.prefetch < 1) throw UsageError("loader: prefetch must be at least 1");
  std::vector<BatchSampler> samplers;
  for (int w = 0; w < options_.workers; ++w) samplers.push_back(make_sampler());
  for (auto& sampler : samplers) workers_.emplace_back([this, s = std::move(sampler)]() mutable { work(std::move(s)); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  credit_or_stop_.notify_all();
  for (auto& w : workers_) w.join();
}

void Loader::work(BatchSampler sample) {
  while (true) {
    int64_t batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // A credit: fewer than `prefetch` batches between the trainer and the next start.
      credit_or_stop_.wait(lock, [this] {
        return stopping_ || failure_ || next_to_start_ >= plan_.num_batches() ||
               next_to_start_ - next_to_take_ < options_.prefetch;
      });
      if (stopping_ || failure_ || next_to_start_ >= plan_.num_batches()) return;
      batch = next_to_start_++;
      max_ahead_ = std::max(max_ahead_, static_cast<int>(next_to_start_ - next_to_take_));
    }
    try {
      MiniBatch result = sample(plan_.batch(batch), plan_.key(batch));
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.emplace(batch, std::move(result));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_) {
        failure_ = std::current_exception();
        failed_batch_ = batch;
      }
    }
    batch_ready_.notify_all();
    credit_or_stop_.notify_all();  // a failure stops the other workers too
  }
}

MiniBatch Loader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_to_take_ >= plan_.num_batches()) {
    throw Error("loader: all " + std::to_string(plan_.num_batches()) + " batches of epoch " +
                std::to_string(plan_.epoch) + " were taken");
  }
  const int64_t batch = next_to_take_;
  bool arrived = batch_ready_.wait_for(lock, options_.deadline, [&] {
    return ready_.count(batch) > 0 || (failure_ && failed_batch_ <= batch);
  });
  if (ready_.count(batch) == 0) {
    if (failure_) {
      try {
        std::rethrow_exception(failure_);
      } catch (const std::exception& e) {
        throw Error("loader: batch " + std::to_string(failed_batch_) + " of epoch " +
                    std::to_string(plan_.epoch) + ": " + e.what());
      }
    }
    if (!arrived) {
      throw Error("loader: batch " + std::to_string(batch) + " did not arrive within " +
                  std::to_string(options_.deadline.count()) + " ms");
    }
  }
  MiniBatch result = std::move(ready_.at(batch));
  ready_.erase(batch);
  ++next_to_take_;
  lock.unlock();
  credit_or_stop_.notify_all();  // the credit this batch held goes back to the workers
  return result;
}

int Loader::max_ahead() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_ahead_;
}

}  // namespace partita
