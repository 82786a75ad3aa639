// The node daemon: an actor system with networking that publishes one host actor (see
// host.h) and runs until SIGTERM/SIGINT or a `shutdown` message.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/host.h"

namespace partita::runtime {

struct DaemonOptions {
  // HOST:PORT to listen on. Loopback unless told otherwise: the protocol has no
  // authentication, so exposing it is the operator's explicit choice. Port 0: any free port.
  std::string listen = "127.0.0.1:0";
  std::string name;  // empty: the machine's host name
  ActorSystemOptions system;
  // From the shutdown request to the end of run_daemon. Past it the process exits with
  // status 1 (std::_Exit): an actor that ignores its exit message must not keep a daemon
  // that was told to stop alive.
  std::chrono::milliseconds shutdown_deadline{10000};
};

// Runs the daemon and returns after a clean shutdown. `on_ready` is called once the host
// actor is reachable, with the bound address (the real port when asked for port 0).
// SIGTERM and SIGINT start a clean shutdown, whichever thread receives them: their handlers
// are replaced while the daemon runs and restored on return.
// Throws UsageError for a malformed listen address, Error when it cannot listen there
// (host does not resolve, port in use) or when the host actor fails.
void run_daemon(const DaemonOptions& options, ActorTypeRegistry registry,
                const std::function<void(const Endpoint& bound, const std::string& name)>& on_ready);

}  // namespace partita::runtime
