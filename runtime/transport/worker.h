// A thread that does an actor's blocking work (connecting, moving bulk bytes with
// deadlines) and reports each piece of work back, so that the actor itself never blocks and
// stays responsive to down messages, aborts and new requests meanwhile.
//
// Tasks run one at a time in the order posted. After each, the Worker calls `report` on its
// own thread with the task's job number and "" or why the task failed (the text of the
// exception it threw); report_to() makes a Report that sends this to an actor as a message.
// Destroying the Worker calls `interrupt` (which must make the running task's waits end at
// once, e.g. notify the Wakeup they wait with), drops the queued tasks unreported, and joins
// the thread: whatever a task touches must outlive the Worker.
#pragma once

#include <caf/actor_cast.hpp>
#include <caf/actor_addr.hpp>
#include <caf/send.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace partita::runtime {

class Worker {
 public:
  using Task = std::function<void()>;
  using Report = std::function<void(uint64_t job, std::string failure)>;

  // `name` names the thread (at most 15 characters show in top and perf).
  Worker(std::string name, Report report, std::function<void()> interrupt);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Queues `task` as `job`. Thread-safe.
  void post(uint64_t job, Task task);

 private:
  void loop();

  const std::string name_;
  const Report report_;
  const std::function<void()> interrupt_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<uint64_t, Task>> tasks_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

// A Report that sends (prefix..., job, failure) to `owner` as long as it is alive, as
// `Handle` (the typed interface that declares that message). A report to an actor that is
// gone is dropped.
template <typename Handle, typename... Prefix>
Worker::Report report_to(caf::actor_addr owner, Prefix... prefix) {
  return [owner = std::move(owner), prefix...](uint64_t job, std::string failure) {
    if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(owner)) {
      caf::anon_send(caf::actor_cast<Handle>(strong), prefix..., job, std::move(failure));
    }
  };
}

}  // namespace partita::runtime
