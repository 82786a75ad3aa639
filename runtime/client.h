// Talking to a node daemon from another process: connect with a deadline, health-check,
// spawn registered actor types, shut it down, and notice when it is lost. Every failure is
// a partita::Error that names the daemon's address.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_control_block.hpp>

#include <chrono>
#include <optional>
#include <set>
#include <string>

#include "base/error.h"
#include "runtime/address.h"
#include "runtime/host.h"

namespace partita::runtime {

// The actor published at `endpoint` and the interface it declares, through the middleman
// actor so that the connect has a deadline (caf::io::remote_actor waits without one).
// Throws Error "<failure> <endpoint>: why" when nothing answers within `timeout` or nothing
// is published there.
struct PublishedActor {
  caf::strong_actor_ptr actor;
  std::set<std::string> interface;
};
PublishedActor connect_published(caf::actor_system& system, const Endpoint& endpoint,
                                 std::chrono::milliseconds timeout, const std::string& failure);

class DaemonConnection {
 public:
  // Connects to the host actor published at "host:port". Throws UsageError on a malformed
  // address, Error if this process's certificate is a user's (runtime/tls/roles.h: only a
  // node's may run actors on a node), nothing answers within `timeout` or the peer is not a
  // Partita daemon.
  static DaemonConnection connect(caf::actor_system& system, const std::string& address,
                                  std::chrono::milliseconds timeout);

  const std::string& address() const { return address_; }
  const host_actor& host() const { return host_; }

  // The daemon's name and version; throws Error if it does not answer within `timeout`, at
  // once if the daemon is already known to be lost.
  HostInfo ping(std::chrono::milliseconds timeout) const;
  // Spawns a registered actor type on the daemon; throws Error on an unknown type, a
  // failed spawn or no answer within `timeout`. The daemon stops the actor when `owner`
  // goes (host.h); with no owner it lives until stopped or until the daemon stops.
  caf::actor spawn(const std::string& type, const Settings& settings, std::chrono::milliseconds timeout,
                   const caf::actor& owner = {}) const;
  // Asks the daemon to stop; returns at once. Use wait_lost() to see it go.
  void request_shutdown() const;
  // Waits until the daemon's host actor is gone (shut down, killed, or its connection
  // dropped by the heartbeat timeout) and returns an Error naming the address and the
  // reason; std::nullopt if it is still there at the deadline.
  std::optional<Error> wait_lost(std::chrono::milliseconds timeout) const;

 private:
  DaemonConnection(caf::actor_system& system, std::string address, host_actor host)
      : system_(&system), address_(std::move(address)), host_(std::move(host)) {}
  Error failure(const std::string& doing, const caf::error& error) const;
  void fail_if_lost() const;

  caf::actor_system* system_;
  std::string address_;
  host_actor host_;
};

}  // namespace partita::runtime
