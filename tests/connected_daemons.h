// Daemons a test spawns actors on itself (partitions, samplers), without a job driver:
// `partita daemon` child processes and a connection from the test's own actor system to
// each. Jobs run on daemons through tests/training/job_runs.h instead.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/error.h"
#include "daemon_process.h"
#include "runtime/client.h"

namespace partita::testing {

struct ConnectedDaemons {
  std::vector<Daemon> daemons;  // node-0, node-1, ...
  std::vector<runtime::DaemonConnection> connections;
  std::vector<std::string> addresses;
};

// Starts `count` daemons named node-0, node-1, ... (tests/daemon_process.h) and connects
// `client` to each, waiting at most 10 s for each. Throws Error naming a daemon that
// printed no address (start_daemon has failed the test then) or did not answer.
inline ConnectedDaemons start_connected_daemons(caf::actor_system& client, int count) {
  ConnectedDaemons d;
  for (int p = 0; p < count; ++p) {
    d.daemons.push_back(start_daemon({"--name", "node-" + std::to_string(p)}));
    if (d.daemons.back().address.empty()) throw Error("daemon node-" + std::to_string(p) + " reported no address");
    d.connections.push_back(runtime::DaemonConnection::connect(client, d.daemons.back().address, std::chrono::seconds(10)));
    d.addresses.push_back(d.daemons.back().address);
  }
  return d;
}

}  // namespace partita::testing
