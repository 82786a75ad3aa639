#include "python/embedded_runtime.h"

#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "actors/protocol.h"
#include "training/job_types.h"

namespace partita::python {

EmbeddedRuntime& EmbeddedRuntime::instance() {
  static EmbeddedRuntime* const runtime = new EmbeddedRuntime();
  return *runtime;
}

void EmbeddedRuntime::start(const RuntimeOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (runtime_) throw UsageError("partita.init(): the runtime is running already in this process");
  if (options.threads < 0) throw UsageError("partita.init(): threads must be 0 (all cores) or more");
  runtime::ActorSystemOptions system;
  system.threads = options.threads;
  add_protocol_types(system);
  runtime_ = runtime::Runtime::in_process(system, job_actor_types());
}

void EmbeddedRuntime::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_) return;
  // Users first: each stops its actors and drops its clients of the actor system, which
  // the runtime's destruction below waits for.
  const std::set<RuntimeUser*> users = std::move(users_);
  users_.clear();
  for (RuntimeUser* user : users) user->close_for_shutdown();
  runtime_.reset();
  stopped_ = true;
}

bool EmbeddedRuntime::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runtime_ != nullptr;
}

void EmbeddedRuntime::attach(RuntimeUser* user, const std::string& what,
                             const std::function<void(runtime::Runtime&)>& setup) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_) {
    throw RuntimeClosed(what + ": the partita runtime " +
                        (stopped_ ? std::string("was shut down (partita.shutdown()); call partita.init() again")
                                  : std::string("is not running; call partita.init() first")));
  }
  try {
    setup(*runtime_);
  } catch (...) {
    user->close_for_shutdown();
    throw;
  }
  users_.insert(user);
}

void EmbeddedRuntime::detach(RuntimeUser* user) {
  std::lock_guard<std::mutex> lock(mutex_);
  users_.erase(user);
}

caf::actor spawn_owner(caf::actor_system& system) {
  return system.spawn([]() -> caf::behavior { return {[](caf::ok_atom) {}}; });
}

}  // namespace partita::python
