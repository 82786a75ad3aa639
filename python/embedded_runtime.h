// The runtime of a Python process: `partita.init()` starts it, `partita.shutdown()` (or the
// interpreter's exit) stops it. One per process, as `partita run` has one: the embedded
// partita::runtime::Runtime with the job's actor types (training/job_types.h), so that a
// loader's partition and sampler actors are spawned exactly as a training job's are; or,
// given a cluster's head, the runtime connected to the cluster's nodes, which spawn them.
//
// Whatever holds actors of the runtime (a loader) attaches as a RuntimeUser, so that
// stopping the runtime first closes it: its actors are stopped, a consumer waiting for a
// batch is released at once, and every later call raises RuntimeClosed instead of touching
// an actor system that is gone.
#pragma once

#include <caf/actor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/runtime.h"

namespace partita::python {

// The runtime is not running: never started, or stopped. Its message says which, and what
// to do about it.
class RuntimeClosed : public Error {
 public:
  explicit RuntimeClosed(const std::string& what) : Error(what) {}
};

class RuntimeUser {
 public:
  virtual ~RuntimeUser() = default;
  // Stops the user's actors and drops everything that refers to the actor system. Called
  // when the runtime stops (from any thread), or when the user's setup failed; must be safe
  // at any stage of that setup, must release a consumer blocked on one of its actors before
  // taking its own lock, and must wait for nothing else.
  virtual void close_for_shutdown() = 0;
};

struct RuntimeOptions {
  int threads = 0;  // scheduler threads; 0: all cores
  // A cluster's head ("HOST:PORT"): the actors go to its live nodes, over mutual TLS with the
  // credentials of `tls_dir` (runtime/tls/credentials.h: empty, $PARTITA_TLS_DIR or
  // ~/.partita/tls), as `partita submit --daemons` places a job's. Empty: every actor in
  // this process.
  std::string address;
  std::string tls_dir;
  std::chrono::milliseconds timeout{10000};  // to reach the head and each node
};

class EmbeddedRuntime {
 public:
  // The process's one instance. Never destroyed: shutdown() ends the runtime, not static
  // destruction, which would run after the interpreter is gone.
  static EmbeddedRuntime& instance();

  // Starts the runtime. Throws UsageError when it is running already or for a malformed
  // address; Error naming the head or node that does not answer, or a cluster without a
  // live node.
  void start(const RuntimeOptions& options);
  // Closes every attached user, then stops every actor and the actor system. Does nothing
  // when not running.
  void stop();
  bool running() const;
  // The runtime's nodes: "in-process", or each node's address. Throws RuntimeClosed.
  std::vector<std::string> nodes() const;
  // The cluster head's address given to start() ("HOST:PORT"), or "" in one process.
  // Throws RuntimeClosed.
  std::string head_address() const;

  // Runs `setup` with the running runtime, under the lock that stop() takes (so the runtime
  // cannot stop half-way through it), then attaches `user`. Throws RuntimeClosed naming
  // `what` when the runtime is not running; when `setup` throws, closes `user` and rethrows.
  void attach(RuntimeUser* user, const std::string& what, const std::function<void(runtime::Runtime&)>& setup);
  // Forgets `user`; each user detaches before it is destroyed.
  void detach(RuntimeUser* user);

 private:
  EmbeddedRuntime() = default;

  mutable std::mutex mutex_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::string head_;  // the head's address, when connected to a cluster
  std::set<RuntimeUser*> users_;
  bool stopped_ = false;  // started and stopped at least once
};

// A fresh actor of `system` that does nothing but exist, to own a user's actors: when it
// exits, the node stops every actor spawned for it (runtime/host.h).
caf::actor spawn_owner(caf::actor_system& system);

}  // namespace partita::python
