#include "runtime/cluster/head_client.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <optional>

#include "base/error.h"
#include "runtime/client.h"
#include "runtime/errors.h"
#include "runtime/host.h"
#include "runtime/answered_request.h"

namespace partita::runtime {

head_actor connect_head(caf::actor_system& system, const Endpoint& head, std::chrono::milliseconds timeout) {
  const std::string where = head.to_string();
  if (head.port == 0) throw UsageError("head address '" + where + "': port 0 cannot be connected to");
  PublishedActor published = connect_published(system, head, timeout, "cannot reach the head at");
  const std::set<std::string>& interface = published.interface;
  if (system.assignable<host_actor>(interface)) {
    throw Error(where + " is a Partita node daemon, not a head (start the head with partita daemon --head)");
  }
  if (!system.assignable<head_actor>(interface)) {
    throw Error(where + " is not a Partita head (another program, or another version)");
  }
  return caf::actor_cast<head_actor>(std::move(published.actor));
}

namespace {

// One request to the head; its reply goes to `on_reply`. Throws Error "the head at WHERE
// was lost" when its connection dropped (killed, its machine gone), "head WHERE: WHAT
// failed: ..." when it refused or did not answer in time.
template <typename... Args, typename OnReply>
void ask_head(caf::actor_system& system, const head_actor& head, const std::string& where, const std::string& what,
              std::chrono::milliseconds timeout, OnReply on_reply, Args&&... args) {
  caf::scoped_actor self{system};
  // A lost head's proxy is down: its down message tells loss from slowness, at once when the
  // connection had already dropped (no request is sent to wait for), else after `timeout`.
  self->monitor(head);
  bool lost = false;
  self->receive([&](caf::down_msg&) { lost = true; }, caf::after(std::chrono::milliseconds(0)) >> [] {});
  if (lost) throw Error("the head at " + where + " was lost (" + what + " was not sent)");
  std::optional<caf::error> failed;
  runtime::receive_reply(self, self->request(head, timeout, std::forward<Args>(args)...),
      on_reply, [&](caf::error& err) { failed = std::move(err); });
  if (!failed) return;
  self->receive([&](caf::down_msg&) { lost = true; }, caf::after(std::chrono::milliseconds(0)) >> [] {});
  if (lost) throw Error("the head at " + where + " was lost (" + what + " had no answer)");
  throw Error("head " + where + ": " + what + " failed: " + describe(system, *failed));
}

}  // namespace

ClusterStatus cluster_status(caf::actor_system& system, const head_actor& head, const std::string& where,
                             std::chrono::milliseconds timeout) {
  ClusterStatus status;
  ask_head(system, head, where, "status", timeout, [&](ClusterStatus& s) { status = std::move(s); }, status_atom::value);
  return status;
}

int stop_cluster(caf::actor_system& system, const head_actor& head, const std::string& where,
                 std::chrono::milliseconds timeout) {
  caf::scoped_actor self{system};
  self->monitor(head);
  int32_t nodes = 0;
  ask_head(system, head, where, "stop", timeout, [&](int32_t n) { nodes = n; }, stop_cluster_atom::value);
  self->send(head, stop_ack_atom::value);  // the head waits for it before it goes
  bool gone = false;
  self->receive([&](caf::down_msg&) { gone = true; }, caf::after(timeout) >> [] {});
  if (!gone) throw Error("head " + where + ": told its " + std::to_string(nodes) + " node(s) to stop, but did not stop itself within " +
                         std::to_string(timeout.count() / 1000) + " s");
  return nodes;
}

bool report_job(caf::actor_system& system, const head_actor& head, const std::string& where, const std::string& id,
                const std::string& token, const JobStatus& status, std::chrono::milliseconds timeout) {
  bool known = false;
  ask_head(system, head, where, "report on " + id, timeout, [&](bool k) { known = k; }, job_report_atom::value, id,
           token, status);
  return known;
}

std::string submit_job(caf::actor_system& system, const head_actor& head, const std::string& where,
                       const std::string& name, const std::string& yaml, std::chrono::milliseconds timeout) {
  std::string id;
  ask_head(system, head, where, "submit", timeout, [&](std::string& given) { id = std::move(given); },
           submit_job_atom::value, name, yaml);
  return id;
}

JobLogChunk job_logs(caf::actor_system& system, const head_actor& head, const std::string& where, const std::string& id,
                     int64_t offset, std::chrono::milliseconds timeout) {
  JobLogChunk chunk;
  ask_head(
      system, head, where, "logs of " + id, timeout,
      [&](std::string& bytes, int64_t next, std::string& state) {
        chunk = {std::move(bytes), next, std::move(state)};
      },
      job_logs_atom::value, id, offset);
  return chunk;
}

std::string cancel_job(caf::actor_system& system, const head_actor& head, const std::string& where,
                       const std::string& id, std::chrono::milliseconds timeout) {
  std::string state;
  ask_head(system, head, where, "stop " + id, timeout, [&](std::string& s) { state = std::move(s); },
           cancel_job_atom::value, id);
  return state;
}

std::vector<caf::actor> rendezvous(caf::actor_system& system, const head_actor& head, const std::string& where,
                                   const std::string& group, int rank, int size, const caf::actor& member,
                                   std::chrono::milliseconds timeout) {
  std::vector<caf::actor> members;
  ask_head(
      system, head, where, "rendezvous of group '" + group.substr(0, 64) + "' as rank " + std::to_string(rank), timeout,
      [&](std::vector<caf::actor>& all) { members = std::move(all); }, rendezvous_atom::value, group,
      static_cast<int32_t>(rank), static_cast<int32_t>(size), member);
  if (static_cast<int>(members.size()) != size) {
    throw Error("head " + where + ": the rendezvous of group '" + group.substr(0, 64) + "' answered " +
                std::to_string(members.size()) + " members for " + std::to_string(size) + " ranks");
  }
  return members;
}

std::string resume_job(caf::actor_system& system, const head_actor& head, const std::string& where,
                       const std::string& id, std::chrono::milliseconds timeout) {
  std::string resumed;
  ask_head(system, head, where, "resume " + id, timeout, [&](std::string& given) { resumed = std::move(given); },
           resume_job_atom::value, id);
  return resumed;
}

}  // namespace partita::runtime
