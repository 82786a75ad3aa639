// The CAF actor system every Partita process runs, configured for this workload: many small
// request/reply messages between a few long-lived actors, plus large byte buffers of
// features, over loopback or a LAN. See actor_system.cpp for the measured reasons.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace partita::runtime {

// Upper layers register their message types (add_message_type) and error categories here:
// an unregistered type compiles and only fails at run time, when it crosses the network.
using ConfigHook = std::function<void(caf::actor_system_config&)>;

struct ActorSystemOptions {
  int threads = 0;             // scheduler threads (the --threads option); 0 = all cores
  bool networking = true;      // load the io middleman (publish, remote_actor)
  // Heartbeats between connected nodes, and how long a silent connection may stay open.
  // Both sides must send heartbeats: a peer with them off looks dead after the timeout.
  // An interval of 0 turns them off (CAF's default), and with them the timeout check.
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds connection_timeout{5000};
  std::vector<ConfigHook> hooks;
};

// Fills `config` with the tuning below, the runtime's own types and then every hook.
// The config must outlive the actor_system built from it (CAF keeps a reference).
void configure(caf::actor_system_config& config, const ActorSystemOptions& options);

// An actor system together with the config it refers to, destroyed in the right order.
// Destruction waits for every actor to finish, so stop them first.
// With networking and the process's TLS credentials (runtime/tls/credentials.h), every
// connection and published port goes through the TLS gateway (runtime/tls/caf_gateway.h);
// without credentials CAF speaks plaintext, and publishes on loopback only.
class ActorSystem {
 public:
  explicit ActorSystem(const ActorSystemOptions& options = {});
  ~ActorSystem();
  ActorSystem(const ActorSystem&) = delete;
  ActorSystem& operator=(const ActorSystem&) = delete;

  caf::actor_system& get() { return *system_; }
  operator caf::actor_system&() { return *system_; }

 private:
  std::unique_ptr<caf::actor_system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor gateway_;  // its middleman actor (tls::start_gateway), with networking
};

}  // namespace partita::runtime
