// A member of an allreduce group: the actor that owns one rank's ring connections and runs
// its operations (runtime/collective/ring.h) on a worker thread, so that it stays
// responsive to down messages and aborts while an operation runs.
//
// Phases, each a behaviour the actor switches to with `become`:
//   unwired -(listen)-> listening -(wire)-> wiring -(ring up)-> ready
//   wiring or ready -(a member lost, an abort, a ring failure)-> failed
// A sum may arrive in any phase: before `ready` it waits for the wiring until its deadline;
// in `failed` it is refused with the group's first failure. A group that failed stays failed
// (a checkpoint restart wires a new one). Stop members only after every member's last
// operation returned.
//
// Failures: a member that is lost (process killed, actor stopped) fails the operation on
// every member with an Error naming its rank: its ring neighbours see the connection close,
// members see CAF down messages, and a member that fails tells all the others.
#pragma once

#include <caf/fwd.hpp>

#include <string>

#include "runtime/collective/allreduce_protocol.h"
#include "runtime/settings.h"

namespace partita::runtime {

struct AllreduceConfig {
  int rank = 0;
  int size = 1;
  // The address this member accepts its ring connection on, as the other members reach it:
  // loopback for a single machine, the node's address in a cluster.
  std::string host = "127.0.0.1";
};

// Throws UsageError unless 0 <= rank < size and host is not empty.
allreduce_member spawn_allreduce_member(caf::actor_system& system, const AllreduceConfig& config);

// Settings of the "allreduce" actor type: rank, size, host (optional). Throws UsageError
// naming the setting.
AllreduceConfig allreduce_config_from(const Settings& settings);

}  // namespace partita::runtime
