// The head: the actor a `partita daemon --head` publishes, which keeps the cluster's
// membership (cluster_protocol.h). It hosts no job actors itself.
//
// Members are alive from their join until their agent's connection drops or no heartbeat
// came for the heartbeat timeout; then they are dead for good (a node that comes back joins
// again as a new member). The head checks the timeout every half heartbeat period, so a
// silent member is declared dead within timeout + period / 2 of its last heartbeat.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <string>

#include "runtime/cluster/cluster_protocol.h"

namespace partita::runtime {

struct HeadOptions {
  std::chrono::milliseconds heartbeat_period{1000};
  std::chrono::milliseconds heartbeat_timeout{5000};
  // Dead members kept for the status, the most recent ones: a node that keeps coming back
  // must not grow the table without bound.
  size_t dead_members_kept = 64;
  // How long `stop_cluster` waits for the nodes it told to stop to go.
  std::chrono::milliseconds stop_deadline{10000};
};

// Throws UsageError unless 0 < period < timeout <= 1 hour.
void check_heartbeat_settings(std::chrono::milliseconds period, std::chrono::milliseconds timeout);

// Spawns a head (checks `options` first, see check_heartbeat_settings).
head_actor spawn_head(caf::actor_system& system, const HeadOptions& options);

}  // namespace partita::runtime
