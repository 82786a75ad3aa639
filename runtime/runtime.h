// partita::Runtime: where a job's actors run, behind one interface. Either every actor lives
// in this process (the embedded default: a host actor of our own serves the spawns), or
// on a list of node daemons, one node each. Callers place actors on nodes by index, so a
// job runs the same code in both cases; a partition's actors go to node i mod D.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/actor_system.h"
#include "runtime/client.h"
#include "runtime/host.h"

namespace partita::runtime {

class Runtime {
 public:
  // Every actor in this process, on one node named "in-process". `registry` supplies the
  // actor types, as a daemon's does.
  static std::unique_ptr<Runtime> in_process(const ActorSystemOptions& options, ActorTypeRegistry registry);
  // One node per daemon address ("host:port"), in the given order. Throws UsageError for an
  // empty list, a malformed or repeated address; Error naming the daemon when one does not
  // answer within `timeout`.
  static std::unique_ptr<Runtime> connect(ActorSystemOptions options, const std::vector<std::string>& daemons,
                                          std::chrono::milliseconds timeout);

  // Stops every actor this runtime spawned (on daemons too: they stay up for the next job).
  // Should this process end without running it (killed, or its node lost), each daemon
  // stops them itself when it sees their owner go (host.h).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  caf::actor_system& system() { return system_->get(); }
  bool is_distributed() const { return !daemons_.empty(); }
  int num_nodes() const { return is_distributed() ? static_cast<int>(daemons_.size()) : 1; }
  // "in-process" or the daemon's address, for messages to the user.
  std::string node_name(int node) const;

  // Spawns a registered actor type on `node`, owned by `owner` (a job's driver; none: this
  // runtime): the node stops the actor when its owner goes. Throws UsageError for a node
  // out of range, Error naming the node for an unknown type, a failed spawn or no answer in
  // time.
  caf::actor spawn(int node, const std::string& type, const Settings& settings, const caf::actor& owner = {});
  // The node an actor spawned here lives on, or -1 if this runtime did not spawn it.
  int node_of(const caf::actor_addr& actor) const;

  // The first node found lost (a daemon killed, shut down or silent past the heartbeat
  // timeout), as an Error naming it; std::nullopt if every node is there. Does not wait.
  std::optional<Error> lost_node() const;
  // The same, waiting up to `grace` for a loss to be reported (std::nullopt at once in one
  // process). A job's actor can see a peer's process end (its connection drops) before
  // this process's connection to that daemon reports it: a failure waits this long so its
  // error names the node whose loss caused it.
  std::optional<Error> lost_node_within(std::chrono::milliseconds grace) const;
  // Every node found lost now (indices, in order); empty in one process. Does not wait.
  std::vector<int> lost_nodes() const;

  // Deadline of spawns and checks.
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  Runtime(const ActorSystemOptions& options, std::chrono::milliseconds timeout);

  std::unique_ptr<ActorSystem> system_;
  std::chrono::milliseconds timeout_;
  caf::actor owner_;                        // owns what is spawned without an owner
  host_actor local_host_;                   // in-process only
  std::vector<DaemonConnection> daemons_;   // distributed only
  std::vector<std::pair<caf::actor, int>> spawned_;  // each actor and its node
};

}  // namespace partita::runtime
