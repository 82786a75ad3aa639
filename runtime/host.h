// The host actor: the one actor a node daemon publishes. Remote callers ask it to spawn
// actors of registered types, check that the daemon is alive, and shut the daemon down.
// The upper layers (actors/) fill the registry with their types; the runtime itself knows
// none of them.
#pragma once

#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/settings.h"

namespace partita::runtime {

// Spawns one actor of a registered type. May throw partita::Error (e.g. a bad setting); the
// host turns that into an error reply naming the type.
using ActorFactory = std::function<caf::actor(caf::actor_system&, const Settings&)>;

// Actor types by name. Filled before the daemon starts and read-only after: the host
// actor reads it from its own thread without locks.
class ActorTypeRegistry {
 public:
  // Throws UsageError if `name` is empty or already registered.
  void add(const std::string& name, ActorFactory factory);
  // nullptr if there is no such type.
  const ActorFactory* find(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, ActorFactory> factories_;
};

using spawn_atom = caf::atom_constant<caf::atom("p_spawn")>;
using ping_atom = caf::atom_constant<caf::atom("p_ping")>;
using pong_atom = caf::atom_constant<caf::atom("p_pong")>;
using shutdown_atom = caf::atom_constant<caf::atom("p_shutdown")>;
using running_atom = caf::atom_constant<caf::atom("p_running")>;

// The protocol. Every argument is a built-in CAF type, so the handle works across
// processes with nothing registered.
//   spawn(type, settings, owner) -> the new actor, or an error naming an unknown type.
//       `owner` (the job's driver; may be a null handle: none) is monitored, across
//       processes too: when it goes (it stops, its process dies, its node falls silent past
//       the heartbeat timeout), the host stops every actor spawned for it, so that nothing
//       of a job outlives its driver;
//   ping -> pong, the daemon's name and Partita version (a health check);
//   running -> (types, jobs): the actors it runs, the type of each and its owner's key
//       (owner_key; "" for an actor without owner), in the order they were spawned;
//   shutdown: stops the spawned actors and the host, which ends the daemon.
using host_actor = caf::typed_actor<
    caf::replies_to<spawn_atom, std::string, Settings, caf::actor>::with<caf::actor>,
    caf::replies_to<ping_atom>::with<pong_atom, std::string, std::string>,
    caf::replies_to<running_atom>::with<std::vector<std::string>, std::vector<std::string>>,
    caf::reacts_to<shutdown_atom>>;

// The key of an owner, the same on every node: its node and actor id
// ("<first 12 characters of its node's host hash>-<process id>-<actor id>").
std::string owner_key(const caf::actor_addr& owner);

struct HostInfo {
  std::string name;     // of the daemon, for logs and health checks
  std::string version;  // Partita's version
};

// The version this build reports in pongs.
std::string partita_version();

// Spawns a host. Actors it spawns are linked to it: they stop when the host stops (so
// shutting the host down leaves no actor behind to block the actor system's exit), and
// a spawned actor that fails is logged without taking the host down. They also stop when
// their owner goes (see spawn above). Once its last spawned actor is gone, the host gives
// the heap memory they freed back to the system (malloc_trim): training keeps freed memory
// in the heap (models/torch_runtime.h, tune_malloc_for_training), which would otherwise
// keep an idle daemon at the size of its largest job.
host_actor spawn_host(caf::actor_system& system, HostInfo info, ActorTypeRegistry registry);

}  // namespace partita::runtime
