#include "runtime/transport/worker.h"

#include <pthread.h>

#include <exception>

namespace partita::runtime {

Worker::Worker(std::string name, Report report, std::function<void()> interrupt)
    : name_(std::move(name)),
      report_(std::move(report)),
      interrupt_(std::move(interrupt)),
      thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    tasks_.clear();
  }
  if (interrupt_) interrupt_();
  wake_.notify_all();
  thread_.join();
}

void Worker::post(uint64_t job, Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.emplace_back(job, std::move(task));
  }
  wake_.notify_one();
}

void Worker::loop() {
  ::pthread_setname_np(::pthread_self(), name_.substr(0, 15).c_str());
  for (;;) {
    std::pair<uint64_t, Task> next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      next = std::move(tasks_.front());
      tasks_.pop_front();
    }
    std::string failure;
    try {
      next.second();
    } catch (const std::exception& e) {
      failure = e.what();
      if (failure.empty()) failure = "failed without a reason";
    }
    report_(next.first, std::move(failure));
  }
}

}  // namespace partita::runtime
