#include "runtime/host.h"

#include <caf/all.hpp>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "base/error.h"
#include "runtime/errors.h"

namespace partita::runtime {

void ActorTypeRegistry::add(const std::string& name, ActorFactory factory) {
  if (name.empty()) throw UsageError("an actor type needs a name");
  if (!factory) throw UsageError("actor type '" + name + "' has no factory");
  if (!factories_.emplace(name, std::move(factory)).second) {
    throw UsageError("actor type '" + name + "' is registered twice");
  }
}

const ActorFactory* ActorTypeRegistry::find(const std::string& name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> ActorTypeRegistry::names() const {
  std::vector<std::string> result;
  for (const auto& entry : factories_) result.push_back(entry.first);
  return result;
}

std::string partita_version() { return PARTITA_VERSION; }

std::string owner_key(const caf::actor_addr& owner) {
  // CAF prints a node as "<host hash>#<process id>".
  std::string node = owner.node() ? caf::to_string(owner.node()) : std::string("local");
  std::string pid;
  if (const auto hash = node.find('#'); hash != std::string::npos) {
    pid = node.substr(hash + 1);
    node.resize(hash);
  }
  if (node.size() > 12) node.resize(12);
  return node + "-" + pid + "-" + std::to_string(owner.id());
}

namespace {

// How long after its last spawned actor stopped the host trims the heap: the actors' memory
// is freed when the last reference to them goes, a moment after their exit reaches the host.
constexpr std::chrono::milliseconds kTrimDelay{1000};

using trim_atom = caf::atom_constant<caf::atom("p_trim")>;
// The host's own interface: the protocol, plus the trim it schedules for itself.
using host_impl = host_actor::extend<caf::reacts_to<trim_atom>>;

struct Child {
  caf::actor_addr actor;
  caf::actor_addr owner;  // null: none
  std::string type;
  std::string job;        // owner_key(owner); "" without
};

struct HostState {
  HostInfo info;
  ActorTypeRegistry registry;
  std::vector<Child> children;
  std::vector<caf::actor_addr> owners;  // monitored; each owns at least one child
  static inline const char* name = "partita.host";
};

using HostPointer = host_impl::stateful_pointer<HostState>;

std::string join(const std::vector<std::string>& names) {
  std::string result;
  for (const auto& n : names) result += (result.empty() ? "" : ", ") + n;
  return result.empty() ? "none" : result;
}

caf::result<caf::actor> spawn_child(HostPointer self, const std::string& type, const Settings& settings,
                                    const caf::actor& owner) {
  auto& state = self->state;
  const ActorFactory* factory = state.registry.find(type);
  if (factory == nullptr) {
    return make_runtime_error(RuntimeErrc::unknown_actor_type,
                              "daemon " + state.info.name + ": unknown actor type '" + type +
                                  "' (registered: " + join(state.registry.names()) + ")");
  }
  caf::actor child;
  try {
    child = (*factory)(self->system(), settings);
  } catch (const std::exception& e) {
    return make_runtime_error(RuntimeErrc::spawn_failed,
                              "daemon " + state.info.name + ": cannot spawn '" + type + "': " + e.what());
  }
  if (!child) {
    return make_runtime_error(RuntimeErrc::spawn_failed,
                              "daemon " + state.info.name + ": the factory of '" + type + "' returned no actor");
  }
  self->link_to(child);
  state.children.push_back(Child{child.address(), owner ? owner.address() : caf::actor_addr{}, type,
                                 owner ? owner_key(owner.address()) : std::string()});
  if (owner && std::find(state.owners.begin(), state.owners.end(), owner.address()) == state.owners.end()) {
    // At once if the owner is already gone: its down message then stops the new child.
    self->monitor(owner);
    state.owners.push_back(owner.address());
  }
  spdlog::debug("host {}: spawned '{}' as actor {}", state.info.name, type, child.id());
  return child;
}

// An owner went: stop what it owned. Their exits reach the exit handler, which forgets them.
void on_owner_down(HostPointer self, const caf::down_msg& msg) {
  auto& state = self->state;
  auto owner = std::find(state.owners.begin(), state.owners.end(), msg.source);
  if (owner == state.owners.end()) return;
  state.owners.erase(owner);
  std::string types;
  size_t count = 0;
  for (const Child& child : state.children) {
    if (child.owner != msg.source) continue;
    if (auto actor = caf::actor_cast<caf::actor>(child.actor)) {
      caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    }
    types += (count++ == 0 ? "" : ", ") + child.type;
  }
  if (count == 0) return;
  const std::string why = msg.reason == caf::exit_reason::user_shutdown || msg.reason == caf::exit_reason::normal
                              ? "it stopped"
                              : self->system().render(msg.reason);
  spdlog::info("host {}: the owner of {} actor(s) ({}) is gone ({}); stopping them", state.info.name, count, types,
               why);
}

// Gives the memory of the actors that stopped back to the system, if none was spawned since.
void trim_if_idle(HostPointer self) {
  if (!self->state.children.empty()) return;
  const bool released = ::malloc_trim(0) != 0;
  spdlog::debug("host {}: no spawned actors left ({} actors run in this process); heap trimmed ({})",
                self->state.info.name, self->system().registry().running(),
                released ? "memory released" : "nothing to release");
}

host_impl::behavior_type host(HostPointer self, HostInfo info, ActorTypeRegistry registry) {
  self->state.info = std::move(info);
  self->state.registry = std::move(registry);
  // Links deliver exit messages both ways. From a child: it is gone, forget it, stay up.
  // From anyone else (an anon_send_exit, a linked supervisor): stop, which in turn stops
  // every child through its link.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& children = self->state.children;
    auto it = std::find_if(children.begin(), children.end(), [&](const Child& c) { return c.actor == msg.source; });
    if (it != children.end()) {
      if (msg.reason && msg.reason != caf::exit_reason::user_shutdown) {
        spdlog::warn("host {}: a spawned '{}' failed: {}", self->state.info.name, it->type,
                     self->system().render(msg.reason));
      }
      children.erase(it);
      if (children.empty()) self->delayed_send(self, kTrimDelay, trim_atom::value);
      return;
    }
    self->quit(msg.reason);
  });
  self->set_down_handler([self](caf::down_msg& msg) { on_owner_down(self, msg); });
  return {
      [self](spawn_atom, const std::string& type, const Settings& settings, const caf::actor& owner) {
        return spawn_child(self, type, settings, owner);
      },
      [self](ping_atom) -> caf::result<pong_atom, std::string, std::string> {
        return {pong_atom::value, self->state.info.name, self->state.info.version};
      },
      [self](shutdown_atom) {
        spdlog::info("host {}: shutdown requested; stopping {} spawned actor(s)", self->state.info.name,
                     self->state.children.size());
        self->quit(caf::exit_reason::user_shutdown);
      },
      [self](running_atom) -> caf::result<std::vector<std::string>, std::vector<std::string>> {
        std::vector<std::string> types, jobs;
        for (const Child& child : self->state.children) {
          types.push_back(child.type);
          jobs.push_back(child.job);
        }
        return {std::move(types), std::move(jobs)};
      },
      [self](trim_atom) { trim_if_idle(self); },
  };
}

}  // namespace

host_actor spawn_host(caf::actor_system& system, HostInfo info, ActorTypeRegistry registry) {
  return caf::actor_cast<host_actor>(system.spawn(host, std::move(info), std::move(registry)));
}

}  // namespace partita::runtime
