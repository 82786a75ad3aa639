#include "runtime/cluster/node_agent.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <thread>

#include "base/error.h"
#include "base/process_stats.h"
#include "base/system_memory.h"
#include "runtime/staging/stage_cache.h"
#include "runtime/errors.h"
#include "runtime/tls/caf_gateway.h"

namespace partita::runtime {

namespace {

using std::chrono::milliseconds;

// A field of /proc/meminfo in bytes; 0 if it cannot be read.
int64_t disk_free_bytes(const std::string& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return 0;
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

// The agent's own message: (tick, generation) starts its phase's next step. A rejoin
// starts a new generation, so the ticks and replies of the one before are ignored.
using tick_atom = caf::atom_constant<caf::atom("c_tick")>;
using agent_impl = node_agent_actor::extend<caf::reacts_to<tick_atom, uint64_t>>;

struct AgentState {
  NodeAgentOptions options;
  host_actor host;
  head_actor head;  // null while it has to connect again
  uint64_t member = 0;
  bool joined = false;
  uint64_t generation = 0;
  milliseconds period{1000};
  milliseconds deadline{5000};  // of each request
  std::string last_failure;     // logged once, not at every retry
  static inline const char* name = "partita.node_agent";
};

using AgentPointer = agent_impl::stateful_pointer<AgentState>;

agent_impl::behavior_type joining(AgentPointer self);
agent_impl::behavior_type joined(AgentPointer self);

void tick_later(AgentPointer self) {
  self->delayed_send(self, self->state.period, tick_atom::value, self->state.generation);
}

void retry_later(AgentPointer self, const std::string& why) {
  auto& s = self->state;
  if (why != s.last_failure) {
    spdlog::warn("node {}: cannot join the head at {}: {}; retrying every {} ms", s.options.info.name,
                 s.options.head.to_string(), why, s.period.count());
    s.last_failure = why;
  }
  tick_later(self);
}

// Leaves `joined` for `joining`: the head restarted, or no longer knows this node.
void rejoin(AgentPointer self, const std::string& why) {
  auto& s = self->state;
  spdlog::warn("node {}: {}; joining the head at {} again", s.options.info.name, why, s.options.head.to_string());
  if (s.head) self->demonitor(s.head.address());
  s.head = nullptr;
  s.joined = false;
  s.member = 0;
  ++s.generation;
  s.period = s.options.retry_period;
  s.deadline = s.options.request_deadline;
  self->become(joining(self));
  self->send(self, tick_atom::value, s.generation);
}

void join(AgentPointer self) {
  auto& s = self->state;
  const uint64_t generation = s.generation;
  self->request(s.head, s.deadline, join_atom::value, s.options.info, caf::actor_cast<caf::actor>(self))
      .then(
          [self, generation](uint64_t member, int64_t period_ms, int64_t timeout_ms) {
            auto& st = self->state;
            if (generation != st.generation) return;
            st.member = member;
            st.joined = true;
            st.period = milliseconds(std::max<int64_t>(1, period_ms));
            st.deadline = milliseconds(std::max<int64_t>(1, timeout_ms));
            st.last_failure.clear();
            self->monitor(st.head);
            spdlog::info("node {}: joined the head at {} as member {}", st.options.info.name,
                         st.options.head.to_string(), member);
            self->become(joined(self));
            self->send(self, tick_atom::value, st.generation);  // the first heartbeat at once
          },
          [self, generation](caf::error& e) {
            auto& st = self->state;
            if (generation != st.generation) return;
            st.head = nullptr;  // connect again: the head may have restarted
            retry_later(self, describe(self->system(), e));
          });
}

// Connects to the head's address (CAF's middleman, with a deadline), then joins.
void connect_and_join(AgentPointer self) {
  auto& s = self->state;
  const uint64_t generation = s.generation;
  self->request(tls::middleman_actor(self->system()), s.deadline, caf::connect_atom::value, s.options.head.host,
                s.options.head.port)
      .then(
          [self, generation](const caf::node_id&, caf::strong_actor_ptr& ptr, std::set<std::string>& interface) {
            auto& st = self->state;
            if (generation != st.generation) return;
            if (!ptr || !self->system().assignable<head_actor>(interface)) {
              retry_later(self, "what listens there is not a Partita head");
              return;
            }
            st.head = caf::actor_cast<head_actor>(std::move(ptr));
            join(self);
          },
          [self, generation](caf::error& e) {
            if (generation != self->state.generation) return;
            retry_later(self, describe(self->system(), e));
          });
}

void heartbeat(AgentPointer self) {
  auto& s = self->state;
  const uint64_t generation = s.generation;
  self->request(s.host, s.deadline, running_atom::value)
      .then(
          [self, generation](std::vector<std::string>& types, std::vector<std::string>& jobs) {
            auto& st = self->state;
            if (generation != st.generation) return;
            NodeLoad load;
            load.memory_available_bytes = static_cast<int64_t>(available_memory_bytes());
            load.disk_free_bytes = disk_free_bytes(st.options.data_dir);
            load.actor_types = std::move(types);
            load.actor_jobs = std::move(jobs);
            if (!st.options.cache_dir.empty()) {
              load.cached_units = list_cached_units(st.options.cache_dir, kMaxReportedCachedUnits);
              load.staging_cache_bytes = static_cast<int64_t>(cached_unit_bytes(st.options.cache_dir));
            }
            try {
              const ProcessStats p = read_process_stats();
              load.cpu_seconds = p.cpu_seconds;
              load.resident_bytes = p.resident_bytes;
              load.threads = p.threads;
              load.network_received_bytes = p.network_received_bytes;
              load.network_sent_bytes = p.network_sent_bytes;
            } catch (const Error& e) {
              spdlog::debug("node agent: no process figures in this heartbeat: {}", e.what());
            }
            self->request(st.head, st.deadline, heartbeat_atom::value, st.member, std::move(load))
                .then(
                    [self, generation](bool known) {
                      auto& st2 = self->state;
                      if (generation != st2.generation) return;
                      if (!known) {
                        rejoin(self, "the head no longer knows member " + std::to_string(st2.member) +
                                         " (it restarted, or declared this node dead)");
                        return;
                      }
                      tick_later(self);
                    },
                    [self, generation](caf::error& e) {
                      if (generation != self->state.generation) return;
                      rejoin(self, "heartbeat failed: " + describe(self->system(), e));
                    });
          },
          [self, generation](caf::error& e) {
            if (generation != self->state.generation) return;
            spdlog::error("node {}: its host does not answer: {}", self->state.options.info.name,
                          describe(self->system(), e));
            tick_later(self);
          });
}

void stop_node(AgentPointer self) {
  spdlog::info("node {}: the head stops the cluster; shutting down", self->state.options.info.name);
  caf::anon_send(self->state.host, shutdown_atom::value);
}

agent_impl::behavior_type joining(AgentPointer self) {
  return {
      [self](tick_atom, uint64_t generation) {
        if (generation != self->state.generation) return;
        if (self->state.head) {
          join(self);
        } else {
          connect_and_join(self);
        }
      },
      [self](stop_node_atom) { stop_node(self); },
  };
}

agent_impl::behavior_type joined(AgentPointer self) {
  return {
      [self](tick_atom, uint64_t generation) {
        if (generation == self->state.generation) heartbeat(self);
      },
      [self](stop_node_atom) { stop_node(self); },
  };
}

agent_impl::behavior_type agent(AgentPointer self, host_actor host, NodeAgentOptions options, head_actor head) {
  auto& s = self->state;
  s.options = std::move(options);
  s.host = std::move(host);
  s.head = std::move(head);
  s.period = s.options.retry_period;
  s.deadline = s.options.request_deadline;
  // It lives as long as its host.
  self->monitor(s.host);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source == st.host.address()) {
      self->quit(msg.reason);
    } else if (st.head && msg.source == st.head.address() && st.joined) {
      rejoin(self, "lost the head (" + describe(self->system(), msg.reason) + ")");
    }
  });
  self->send(self, tick_atom::value, s.generation);
  return joining(self);
}

}  // namespace

NodeInfo this_node(const std::string& name, const std::string& address) {
  NodeInfo info;
  info.name = name;
  info.address = address;
  info.version = partita_version();
  cpu_set_t set;
  CPU_ZERO(&set);
  info.cores = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                              : static_cast<int32_t>(std::thread::hardware_concurrency());
  info.memory_bytes = static_cast<int64_t>(total_memory_bytes());
  return info;
}

node_agent_actor spawn_node_agent(caf::actor_system& system, host_actor host, NodeAgentOptions options,
                                  head_actor head) {
  return caf::actor_cast<node_agent_actor>(system.spawn(agent, std::move(host), std::move(options), std::move(head)));
}

}  // namespace partita::runtime
