// The node agent: what makes a node daemon a member of a cluster (`partita daemon --join`).
// It registers the node with the head, sends a heartbeat with the node's load every period
// the head gave it, and joins again whenever the head stops knowing it: the head restarted
// (its connection dropped), or declared the node dead (it was frozen or cut off longer than
// the timeout). On the head's `stop_node` it shuts its daemon's host down.
//
// Its phases are behaviours switched with `become`: `joining` (connect to the head's
// address and join, retried every period until it works) and `joined` (heartbeats). Every
// request has a deadline (the heartbeat timeout), so a head that stops answering sends the
// agent back to `joining` instead of leaving it waiting.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <functional>

#include "runtime/address.h"
#include "runtime/cluster/cluster_protocol.h"
#include "runtime/host.h"

namespace partita::runtime {

struct NodeAgentOptions {
  Endpoint head;       // where the head listens
  NodeInfo info;       // this node, as it joins
  std::string data_dir = ".";  // whose free space the heartbeats report
  std::string cache_dir;       // the staging cache whose units the heartbeats report ("": none)
  // Until the first join tells it the head's: how often to retry joining, and each
  // request's deadline.
  std::chrono::milliseconds retry_period{1000};
  std::chrono::milliseconds request_deadline{5000};
};

// What this machine offers, as a node joining with `name` at `address`: its cores (this
// process's CPU affinity), memory and Partita's version.
NodeInfo this_node(const std::string& name, const std::string& address);

// Spawns the agent of the node whose host is `host`. It joins `head` (as connect_head in
// head_client.h returned it) at once, and the head at options.head whenever it has to join again.
// It stops with `host`.
node_agent_actor spawn_node_agent(caf::actor_system& system, host_actor host, NodeAgentOptions options,
                                  head_actor head);

}  // namespace partita::runtime
