#include "runtime/host.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
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

namespace {

struct HostState {
  HostInfo info;
  ActorTypeRegistry registry;
  std::vector<caf::actor_addr> children;
  static inline const char* name = "partita.host";
};

using HostPointer = host_actor::stateful_pointer<HostState>;

std::string join(const std::vector<std::string>& names) {
  std::string result;
  for (const auto& n : names) result += (result.empty() ? "" : ", ") + n;
  return result.empty() ? "none" : result;
}

caf::result<caf::actor> spawn_child(HostPointer self, const std::string& type, const Settings& settings) {
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
  state.children.push_back(child.address());
  spdlog::debug("host {}: spawned '{}' as actor {}", state.info.name, type, child.id());
  return child;
}

host_actor::behavior_type host(HostPointer self, HostInfo info, ActorTypeRegistry registry) {
  self->state.info = std::move(info);
  self->state.registry = std::move(registry);
  // Links deliver exit messages both ways. From a child: it is gone, forget it, stay up.
  // From anyone else (an anon_send_exit, a linked supervisor): stop, which in turn stops
  // every child through its link.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& children = self->state.children;
    auto it = std::find(children.begin(), children.end(), msg.source);
    if (it != children.end()) {
      children.erase(it);
      if (msg.reason && msg.reason != caf::exit_reason::user_shutdown) {
        spdlog::warn("host {}: a spawned actor failed: {}", self->state.info.name, self->system().render(msg.reason));
      }
      return;
    }
    self->quit(msg.reason);
  });
  return {
      [self](spawn_atom, const std::string& type, const Settings& settings) {
        return spawn_child(self, type, settings);
      },
      [self](ping_atom) -> caf::result<pong_atom, std::string, std::string> {
        return {pong_atom::value, self->state.info.name, self->state.info.version};
      },
      [self](shutdown_atom) {
        spdlog::info("host {}: shutdown requested; stopping {} spawned actor(s)", self->state.info.name,
                     self->state.children.size());
        self->quit(caf::exit_reason::user_shutdown);
      },
  };
}

}  // namespace

host_actor spawn_host(caf::actor_system& system, HostInfo info, ActorTypeRegistry registry) {
  return system.spawn(host, std::move(info), std::move(registry));
}

}  // namespace partita::runtime
