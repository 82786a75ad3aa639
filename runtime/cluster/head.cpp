#include "runtime/cluster/head.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <signal.h>

#include <cctype>
#include <random>
#include <filesystem>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "base/file_util.h"
#include "base/subprocess.h"
#include "runtime/errors.h"
#include "runtime/host.h"
#include "runtime/tls/peer_roles.h"

namespace partita::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long an answered cluster stop waits for the client's acknowledgement before the head
// goes anyway (a client that died meanwhile).
constexpr milliseconds kStopAckDeadline{5000};

// The head's own messages: the liveness check it schedules for itself, and the end of the
// wait of a cluster stop.
using check_atom = caf::atom_constant<caf::atom("c_check")>;
using stop_deadline_atom = caf::atom_constant<caf::atom("c_stopdl")>;
// The address drivers reach the head at, from the daemon that published it.
using own_address_atom = caf::atom_constant<caf::atom("c_ownaddr")>;
using head_impl = head_actor::extend<caf::reacts_to<check_atom>, caf::reacts_to<stop_deadline_atom>,
                                     caf::replies_to<own_address_atom, std::string>::with<bool>>;

struct Member {
  NodeStatus status;
  node_agent_actor agent;
  Clock::time_point last_heartbeat;
};

// A submitted job: what its driver reported, and the driver process.
struct Job {
  JobStatus status;
  std::unique_ptr<ChildProcess> driver;  // reaped and dropped once it exits
  std::string log;
  uint64_t order = 0;  // submission order
  std::string token;   // its driver's reports carry it
  // Once cancelled: by when its driver must have exited, or it is killed.
  std::optional<Clock::time_point> cancel_by;
  bool killed = false;
  // The memory its placement takes on each node (by address), until that node's heartbeat
  // lists the job's actors (its available memory reflects them from then on).
  std::map<std::string, int64_t> reserved;
};

// A rendezvous group gathering its ranks (head.h).
struct RendezvousGroup {
  int32_t size = 0;
  Clock::time_point deadline;
  struct Arrival {
    caf::actor member;
    caf::typed_response_promise<std::vector<caf::actor>> answer;
  };
  std::map<int32_t, Arrival> arrived;  // by rank
};

struct HeadState {
  HeadOptions options;
  uint64_t next_member = 1;
  std::map<uint64_t, Member> members;  // live and the most recent dead, by id
  // A cluster stop under way: its reply, and the members it waits for.
  std::optional<caf::typed_response_promise<int32_t>> stopping;
  std::set<uint64_t> stopping_members;
  int32_t told_to_stop = 0;
  // A cluster stop first cancels the jobs and waits for their drivers (draining), then
  // tells the nodes to stop.
  bool draining = false;
  // The stop was answered; the head goes once the client acknowledges the answer.
  bool answered = false;
  std::map<std::string, Job> jobs;  // by id
  // The owner keys (runtime/host.h) of the jobs that ended, with when. A node's heartbeat
  // from before a job's end still lists the actors that stop with it: the status leaves
  // them out of that node's listing, so that a job that ended runs nowhere from then on; a
  // heartbeat after the end lists what still runs. Kept for a heartbeat timeout, by when
  // every live node has sent a newer one.
  std::map<std::string, Clock::time_point> ended_owners;
  uint64_t submitted = 0;
  std::string address;  // where drivers reach the head; "" until the daemon told it
  std::map<std::string, RendezvousGroup> groups;  // incomplete rendezvous groups, by name
  // Refused requests from senders other than nodes, for a log line at most every second.
  Clock::time_point last_refusal_log{};
  uint64_t refusals_unsaid = 0;
  static inline const char* name = "partita.head";
};

using HeadPointer = head_impl::stateful_pointer<HeadState>;

void forget_old_dead(HeadState& s) {
  size_t dead = 0;
  for (const auto& [id, m] : s.members) dead += m.status.alive ? 0 : 1;
  for (auto it = s.members.begin(); it != s.members.end() && dead > s.options.dead_members_kept;) {
    if (!it->second.status.alive) {
      it = s.members.erase(it);  // the lowest id: the oldest
      --dead;
    } else {
      ++it;
    }
  }
}

void finish_stop_if_done(HeadPointer self) {
  auto& s = self->state;
  if (!s.stopping || s.draining || !s.stopping_members.empty()) return;
  s.stopping->deliver(s.told_to_stop);
  s.stopping.reset();
  // The head's process ends when the head does, and CAF drops the messages its network
  // broker has not written yet: quitting at once lost the answer on a loaded machine (once
  // in a full suite: `partita stop` timed out on a head that had stopped). So the head
  // waits until the client says it has the answer (stop_cluster in head_client.h does),
  // for at most kStopAckDeadline.
  s.answered = true;
  self->delayed_send(self, kStopAckDeadline, stop_ack_atom::value);
}

void quit_after_answer(HeadPointer self) {
  if (!self->state.answered) return;  // no stop answered yet: a stray acknowledgement
  spdlog::info("head: cluster stopped; stopping the head");
  self->quit(caf::exit_reason::user_shutdown);
}

void declare_dead(HeadPointer self, Member& m, const std::string& why) {
  if (!m.status.alive) return;
  m.status.alive = false;
  m.status.lost = why;
  if (self->state.stopping_members.count(m.status.member) > 0) {
    // Told to stop by a cluster stop: it leaves, as asked.
    spdlog::info("head: member {} ({}, {}) left: the cluster is stopping", m.status.member, m.status.info.name,
                 m.status.info.address);
  } else {
    spdlog::warn("head: member {} ({}, {}) is dead: {}", m.status.member, m.status.info.name, m.status.info.address,
                 why);
  }
  self->demonitor(m.agent.address());
  self->state.stopping_members.erase(m.status.member);
  finish_stop_if_done(self);
  forget_old_dead(self->state);
}

// Records the end of `job`'s current attempt (its owner key) for listed_load.
void note_end(HeadState& s, const Job& job) {
  if (!job.status.owner.empty()) s.ended_owners.emplace(job.status.owner, Clock::now());
}

// The ended jobs' entries that no live node's listing can hold any more.
void forget_old_ends(HeadState& s) {
  const auto old = Clock::now() - s.options.heartbeat_timeout;
  for (auto it = s.ended_owners.begin(); it != s.ended_owners.end();) {
    it = it->second < old ? s.ended_owners.erase(it) : std::next(it);
  }
}

// What `m`'s last heartbeat lists, without the actors of the jobs that ended after it.
NodeLoad listed_load(const HeadState& s, const Member& m) {
  const NodeLoad& load = m.status.load;
  NodeLoad kept = load;
  if (s.ended_owners.empty()) return kept;
  kept.actor_types.clear();
  kept.actor_jobs.clear();
  const size_t n = std::max(load.actor_types.size(), load.actor_jobs.size());
  for (size_t i = 0; i < n; ++i) {
    if (i < load.actor_jobs.size()) {
      auto ended = s.ended_owners.find(load.actor_jobs[i]);
      if (ended != s.ended_owners.end() && ended->second > m.last_heartbeat) continue;
      kept.actor_jobs.push_back(load.actor_jobs[i]);
    }
    if (i < load.actor_types.size()) kept.actor_types.push_back(load.actor_types[i]);
  }
  return kept;
}

std::vector<JobStatus> jobs_of(const HeadState& s) {
  // Submitted jobs by the key of their driver's actors, then the jobs known only by their
  // actors (partita submit --daemons).
  std::map<std::string, JobStatus> jobs;
  std::map<std::string, std::string> submitted_owner;
  for (const auto& [id, job] : s.jobs) {
    JobStatus status = job.status;
    status.nodes.clear();
    status.node_actors.clear();
    status.actors = 0;
    std::string key = std::to_string(job.order);
    key = "0-" + std::string(20 - key.size(), '0') + key;  // submission order first
    if (!status.owner.empty()) submitted_owner[status.owner] = key;
    jobs[key] = std::move(status);
  }
  for (const auto& [id, m] : s.members) {
    if (!m.status.alive) continue;
    const NodeLoad load = listed_load(s, m);
    for (size_t i = 0; i < load.actor_jobs.size(); ++i) {
      if (load.actor_jobs[i].empty()) continue;
      auto owned = submitted_owner.find(load.actor_jobs[i]);
      const std::string key = owned != submitted_owner.end() ? owned->second : "1-" + load.actor_jobs[i];
      JobStatus& job = jobs[key];
      if (owned == submitted_owner.end()) {
        job.id = load.actor_jobs[i];
        job.state = "running";
      }
      ++job.actors;
      const auto at = std::find(job.nodes.begin(), job.nodes.end(), m.status.info.name);
      if (at == job.nodes.end()) {
        job.nodes.push_back(m.status.info.name);
        job.node_actors.push_back(1);
      } else {
        ++job.node_actors[static_cast<size_t>(at - job.nodes.begin())];
      }
    }
  }
  std::vector<JobStatus> result;
  for (auto& [key, job] : jobs) result.push_back(std::move(job));
  return result;
}

// The memory that placed jobs take on `node` beyond what its last heartbeat reported: the
// reservations of the running jobs whose actors it does not list yet. Placement reads the
// available memory net of them, so two jobs placed between heartbeats do not both count on
// the same bytes.
int64_t reserved_on(HeadState& s, const NodeStatus& node) {
  int64_t bytes = 0;
  for (auto& [id, job] : s.jobs) {
    auto r = job.reserved.find(node.info.address);
    if (r == job.reserved.end()) continue;
    const std::vector<std::string>& listed = node.load.actor_jobs;
    if (job.status.finished() ||
        (!job.status.owner.empty() && std::find(listed.begin(), listed.end(), job.status.owner) != listed.end())) {
      job.reserved.erase(r);  // ended, or reflected in the node's own figure
      continue;
    }
    bytes += r->second;
  }
  return bytes;
}

// A job id: the name's letters, digits, '-' and '_' (at most 40; "job" if none), then the
// first -N whose folder does not exist under the runs folder (ids stay unique across head
// restarts that keep the folder).
std::string new_job_id(const HeadState& s, const std::string& name) {
  std::string base;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') base += c;
    if (base.size() >= 40) break;
  }
  if (base.empty()) base = "job";
  for (uint64_t n = 1;; ++n) {
    const std::string id = base + "-" + std::to_string(n);
    if (!s.jobs.count(id) && !std::filesystem::exists(std::filesystem::path(s.options.runs_dir) / id)) return id;
  }
}

void forget_old_jobs(HeadState& s) {
  std::vector<std::pair<uint64_t, std::string>> finished;
  for (const auto& [id, job] : s.jobs) {
    if (job.status.finished() && !job.driver) finished.emplace_back(job.order, id);
  }
  std::sort(finished.begin(), finished.end());
  for (size_t i = 0; i + s.options.finished_jobs_kept < finished.size(); ++i) s.jobs.erase(finished[i].second);
}

// Kills the drivers of cancelled jobs that are past their deadline, and reaps the drivers
// that exited: a job whose driver did not report its end is cancelled if it was cancelled,
// failed otherwise.
void reap_drivers(HeadState& s) {
  const auto now = Clock::now();
  for (auto& [id, job] : s.jobs) {
    if (!job.driver || job.killed || !job.cancel_by || now < *job.cancel_by) continue;
    spdlog::warn("head: the driver of job {} did not stop within {} ms of its cancel; killing it", id,
                 s.options.cancel_deadline.count());
    job.driver->kill();
    job.killed = true;
  }
  for (auto& [id, job] : s.jobs) {
    if (!job.driver || job.driver->running()) continue;
    const int code = job.driver->exit_code();
    job.driver.reset();
    if (!job.status.finished()) {
      note_end(s, job);
      job.status.state = job.cancel_by ? "cancelled" : code == 0 ? "done" : "failed";
      job.status.message = job.killed ? "cancelled; its driver did not stop within " +
                                            std::to_string(s.options.cancel_deadline.count()) + " ms and was killed"
                                      : "its driver exited with status " + std::to_string(code) + " (see " + job.log + ")";
    }
    spdlog::info("head: job {} ended: {}{}", id, job.status.state,
                 job.status.message.empty() ? "" : " (" + job.status.message + ")");
  }
  forget_old_jobs(s);
}

// 128 random bits as hex.
std::string new_token() {
  std::random_device random;
  std::string token;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof(part), "%08x", static_cast<unsigned>(random()));
    token += part;
  }
  return token;
}

// Why the head cannot start a driver now; "" if it can.
std::string cannot_start_driver(const HeadState& s) {
  if (!s.options.driver_command) return "this head runs no jobs";
  if (s.stopping) return "the cluster is stopping";
  if (s.address.empty()) return "the head is still starting; submit again";
  size_t running = 0;
  for (const auto& [id, job] : s.jobs) running += job.driver ? 1 : 0;
  if (running >= s.options.max_running_jobs) {
    return "the head already runs " + std::to_string(running) + " jobs, its most; wait for one to end";
  }
  return "";
}

// Starts the driver of `job` (its output folder `dir` holds submitted.yaml), appending to
// its log; a resumed job's driver continues from the folder's last checkpoint.
void start_driver(HeadState& s, const std::string& id, const std::filesystem::path& dir, bool resume, Job& job) {
  job.token = new_token();
  job.log = (dir / "driver.log").string();
  DriverLaunch launch{s.address, id, (dir / "submitted.yaml").string(), dir.string(), job.token, resume};
  job.driver = std::make_unique<ChildProcess>(s.options.driver_command(launch), job.log);
}

caf::result<std::string> submit(HeadState& s, const std::string& name, const std::string& yaml) {
  if (const std::string why = cannot_start_driver(s); !why.empty()) {
    return caf::make_error(caf::sec::invalid_argument, why);
  }
  if (yaml.size() > kMaxSubmittedJobBytes) {
    return caf::make_error(caf::sec::invalid_argument, "the job is " + std::to_string(yaml.size()) +
                                                           " bytes; a job file is at most " +
                                                           std::to_string(kMaxSubmittedJobBytes));
  }
  const std::string id = new_job_id(s, name);
  const std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(s.options.runs_dir) / id);
  Job job;
  try {
    std::filesystem::create_directories(dir);
    write_file_atomically((dir / "submitted.yaml").string(), yaml);
    start_driver(s, id, dir, false, job);
  } catch (const std::exception& e) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);  // no folder of a job that never ran
    return caf::make_error(caf::sec::runtime_error, "cannot start job " + id + ": " + e.what());
  }
  job.status.id = id;
  job.status.state = "starting";
  job.status.submitted = true;
  job.status.output = dir.string();
  job.order = ++s.submitted;
  spdlog::info("head: job {} submitted; its driver (pid {}) logs to {}", id, job.driver->pid(), job.log);
  s.jobs.emplace(id, std::move(job));
  return id;
}

// A cancelled or failed job, continued from its last checkpoint by a new driver in its own
// folder. A job this head does not know (it ran under an earlier head that kept the runs
// folder) resumes from its folder.
caf::result<std::string> resume(HeadState& s, const std::string& id) {
  auto it = s.jobs.find(id);
  if (it != s.jobs.end() && (it->second.driver || !it->second.status.finished())) {
    return caf::make_error(caf::sec::invalid_argument,
                           "job " + id + " is " + it->second.status.state + "; only a cancelled or failed job resumes");
  }
  if (it != s.jobs.end() && it->second.status.state == "done") {
    return caf::make_error(caf::sec::invalid_argument, "job " + id + " is done: nothing to resume");
  }
  const bool id_ok = !id.empty() && id.size() <= 64 &&
                     std::all_of(id.begin(), id.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
                     });
  const std::filesystem::path dir = std::filesystem::absolute(std::filesystem::path(s.options.runs_dir) / id);
  if (it == s.jobs.end() && (!id_ok || !std::filesystem::exists(dir / "submitted.yaml"))) {
    return caf::make_error(caf::sec::invalid_argument, "no job '" + id + "' on this head or in its runs folder (" +
                                                           s.options.runs_dir + ")");
  }
  if (const std::string why = cannot_start_driver(s); !why.empty()) {
    return caf::make_error(caf::sec::invalid_argument, why);
  }
  Job fresh;
  Job& job = it != s.jobs.end() ? it->second : fresh;
  job.cancel_by.reset();
  job.killed = false;
  job.reserved.clear();
  try {
    start_driver(s, id, dir, true, job);
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::runtime_error, "cannot resume job " + id + ": " + e.what());
  }
  const int32_t restarts = job.status.restarts;
  job.status = JobStatus();
  job.status.id = id;
  job.status.state = "starting";
  job.status.submitted = true;
  job.status.output = dir.string();
  job.status.restarts = restarts;
  job.order = ++s.submitted;  // the status lists it with the latest
  spdlog::info("head: job {} resumed; its driver (pid {}) logs to {}", id, job.driver->pid(), job.log);
  if (it == s.jobs.end()) s.jobs.emplace(id, std::move(fresh));
  return id;
}

// Asks the job's driver to stop (SIGTERM); reap_drivers kills it past the deadline.
void cancel(HeadState& s, const std::string& id, Job& job) {
  if (!job.driver || job.status.finished() || job.cancel_by) return;
  spdlog::info("head: cancelling job {}", id);
  job.driver->signal(SIGTERM);
  job.cancel_by = Clock::now() + s.options.cancel_deadline;
}

// A cluster stop: once no driver runs any more, tell the live nodes to stop.
void continue_stop(HeadPointer self) {
  auto& s = self->state;
  if (!s.stopping || !s.draining) return;
  reap_drivers(s);
  for (const auto& [id, job] : s.jobs) {
    if (job.driver) return;  // the next check comes back
  }
  s.draining = false;
  s.told_to_stop = 0;
  for (auto& [id, m] : s.members) {
    if (!m.status.alive) continue;
    self->send(m.agent, stop_node_atom::value);
    s.stopping_members.insert(id);
    ++s.told_to_stop;
  }
  spdlog::info("head: stopping the cluster: {} node(s)", s.told_to_stop);
  self->delayed_send(self, s.options.stop_deadline, stop_deadline_atom::value);
  finish_stop_if_done(self);
}

// Why a driver's report is not one: "" if it is.
std::string invalid_report(const JobStatus& r) {
  static const std::set<std::string> states = {"starting", "running", "recovering", "done", "failed", "cancelled"};
  if (!states.count(r.state)) return "unknown state '" + r.state.substr(0, 40) + "'";
  if (r.partition_bytes.size() > r.partitions.size()) return "more partition sizes than partitions";
  if (r.new_steps.size() > kMaxStepsPerReport) {
    return std::to_string(r.new_steps.size()) + " steps in one report; at most " + std::to_string(kMaxStepsPerReport);
  }
  size_t bytes = r.message.size() + r.owner.size() + r.id.size() + r.output.size();
  for (const auto& p : r.partitions) bytes += p.size() + 1;
  for (const auto& n : r.nodes) bytes += n.size() + 1;
  if (bytes > kMaxReportBytes) {
    return "a report of " + std::to_string(bytes) + " bytes of text; at most " + std::to_string(kMaxReportBytes);
  }
  return "";
}

caf::error unknown_job(const std::string& id) {
  return caf::make_error(caf::sec::invalid_argument, "no job '" + id + "' on this head (partita status lists them)");
}

// What only a node may do (join, heartbeat, report on a job its driver runs), asked by a
// sender whose certificate is not a node's (runtime/tls/peer_roles.h): the refusal, logged
// (at most one line a second, with the count since), or none for a node.
caf::error refuse_non_node(HeadPointer self, const std::string& what) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (tls::sender_is_node(self->system(), sender)) return {};
  const std::optional<tls::PeerIdentity> peer =
      sender ? tls::node_identity(self->system(), sender->node()) : std::optional<tls::PeerIdentity>();
  const std::string who = !sender ? "an anonymous sender"
                          : peer  ? "the certificate '" + peer->certificate + "' (role " +
                                       tls::role_name(peer->role) + ")"
                                  : "a node this head has no connection from";
  auto& s = self->state;
  ++s.refusals_unsaid;
  if (Clock::now() - s.last_refusal_log >= std::chrono::seconds(1)) {
    spdlog::warn("head: refused {} from {} (node {}; {} refusal(s) since the last line): only a node's certificate "
                 "may do that", what, who, sender ? caf::to_string(sender->node()) : "none", s.refusals_unsaid);
    s.last_refusal_log = Clock::now();
    s.refusals_unsaid = 0;
  }
  return make_runtime_error(RuntimeErrc::refused, "head: " + what + " refused: it came from " + who +
                                                      "; only a node's certificate may do that (partita cluster cert "
                                                      "NAME --role node)");
}

// Fails every rank waiting in `name` with `why`, and forgets the group.
void fail_group(HeadPointer self, const std::string& name, const std::string& why) {
  auto it = self->state.groups.find(name);
  if (it == self->state.groups.end()) return;
  spdlog::warn("head: rendezvous of group '{}' failed: {}", name, why);
  for (auto& [rank, arrival] : it->second.arrived) {
    self->demonitor(arrival.member.address());
    arrival.answer.deliver(make_runtime_error(RuntimeErrc::refused, "rendezvous of group '" + name + "': " + why));
  }
  self->state.groups.erase(it);
}

// The ranks of `group` that have not arrived, as "1, 3" (at most 10 named).
std::string missing_ranks(const RendezvousGroup& group) {
  std::string text;
  int named = 0;
  for (int32_t r = 0; r < group.size; ++r) {
    if (group.arrived.count(r)) continue;
    if (named == 10) return text + ", ...";
    text += (named++ ? ", " : "") + std::to_string(r);
  }
  return text;
}

caf::result<std::vector<caf::actor>> rendezvous(HeadPointer self, const std::string& name, int32_t rank, int32_t size,
                                                const caf::actor& member) {
  auto& s = self->state;
  auto refuse_with = [&](const std::string& why) -> caf::result<std::vector<caf::actor>> {
    spdlog::warn("head: rendezvous of group '{}' refused: {}", name.substr(0, 64), why);
    return make_runtime_error(RuntimeErrc::refused, "rendezvous of group '" + name.substr(0, 64) + "': " + why);
  };
  if (name.empty()) return refuse_with("the group has no name");
  if (name.size() > kMaxGroupNameBytes) {
    return refuse_with("a name of " + std::to_string(name.size()) + " bytes; at most " +
                       std::to_string(kMaxGroupNameBytes));
  }
  if (size < 1 || size > kMaxGroupSize) {
    return refuse_with("world size " + std::to_string(size) + " (must be 1 to " + std::to_string(kMaxGroupSize) + ")");
  }
  if (rank < 0 || rank >= size) {
    return refuse_with("rank " + std::to_string(rank) + " is not below the world size " + std::to_string(size) +
                       (rank < 0 ? " (a rank is 0 or more)" : ""));
  }
  if (!member) return refuse_with("rank " + std::to_string(rank) + " came without its allreduce member");
  if (s.stopping) return refuse_with("the cluster is stopping");
  auto it = s.groups.find(name);
  if (it == s.groups.end()) {
    if (s.groups.size() >= kMaxOpenGroups) {
      return refuse_with("the head already gathers " + std::to_string(s.groups.size()) + " groups, its most");
    }
    RendezvousGroup group;
    group.size = size;
    group.deadline = Clock::now() + s.options.rendezvous_deadline;
    it = s.groups.emplace(name, std::move(group)).first;
  }
  RendezvousGroup& group = it->second;
  if (group.size != size) {
    const std::string why = "rank " + std::to_string(rank) + " has world size " + std::to_string(size) +
                            ", the ranks before it " + std::to_string(group.size) +
                            " (every rank must give the same world size)";
    fail_group(self, name, why);
    return refuse_with(why);
  }
  if (group.arrived.count(rank)) return refuse_with("rank " + std::to_string(rank) + " has arrived already");
  auto answer = self->make_response_promise<std::vector<caf::actor>>();
  self->monitor(member);
  group.arrived.emplace(rank, RendezvousGroup::Arrival{member, answer});
  if (static_cast<int32_t>(group.arrived.size()) < group.size) return answer;
  std::vector<caf::actor> members;
  for (auto& [r, arrival] : group.arrived) members.push_back(arrival.member);
  for (auto& [r, arrival] : group.arrived) {
    self->demonitor(arrival.member.address());
    arrival.answer.deliver(members);
  }
  spdlog::info("head: rendezvous of group '{}': its {} ranks are in", name, group.size);
  s.groups.erase(it);
  return answer;
}

// A member of an incomplete rendezvous group was lost (its process ended, or it gave up and
// stopped its member): its arrival is forgotten, and the rank may arrive again.
bool lost_group_member(HeadPointer self, const caf::down_msg& msg) {
  auto& groups = self->state.groups;
  for (auto g = groups.begin(); g != groups.end(); ++g) {
    for (auto a = g->second.arrived.begin(); a != g->second.arrived.end(); ++a) {
      if (a->second.member.address() != msg.source) continue;
      spdlog::info("head: rendezvous of group '{}': rank {} left before the group was complete", g->first, a->first);
      a->second.answer.deliver(make_runtime_error(
          RuntimeErrc::refused, "rendezvous of group '" + g->first + "': rank " + std::to_string(a->first) +
                                    "'s member was lost (" + self->system().render(msg.reason) + ")"));
      g->second.arrived.erase(a);
      if (g->second.arrived.empty()) groups.erase(g);
      return true;
    }
  }
  return false;
}

// A member's agent went: its process died, or its connection dropped (CAF's connection
// heartbeats drop a silent one).
void lost_agent(HeadPointer self, const caf::down_msg& msg) {
  if (lost_group_member(self, msg)) return;
  for (auto& [id, m] : self->state.members) {
    if (m.status.alive && m.agent.address() == msg.source) {
      declare_dead(self, m,
                   "its connection was lost (" +
                       (msg.reason == caf::exit_reason::user_shutdown ? std::string("it stopped")
                                                                       : self->system().render(msg.reason)) +
                       ")");
      return;
    }
  }
}

// A node joins: its member id, and the heartbeat period and timeout it must keep (ms).
caf::result<uint64_t, int64_t, int64_t> admit_member(HeadPointer self, NodeInfo& info, caf::actor& agent) {
  auto& s = self->state;
  if (caf::error refused = refuse_non_node(self, "join as " + info.name)) return refused;
  if (!agent) return caf::make_error(caf::sec::invalid_argument, "join without an agent");
  if (s.stopping) return caf::make_error(caf::sec::invalid_argument, "the cluster is stopping");
  Member m;
  m.status.member = s.next_member++;
  m.status.info = std::move(info);
  m.status.alive = true;
  m.agent = caf::actor_cast<node_agent_actor>(agent);
  m.last_heartbeat = Clock::now();
  self->monitor(agent);
  spdlog::info("head: member {} joined: {} at {} ({} cores, {} MB)", m.status.member, m.status.info.name,
               m.status.info.address, m.status.info.cores, m.status.info.memory_bytes >> 20);
  const uint64_t id = m.status.member;
  s.members.emplace(id, std::move(m));
  return {id, static_cast<int64_t>(s.options.heartbeat_period.count()),
          static_cast<int64_t>(s.options.heartbeat_timeout.count())};
}

// A member's heartbeat with its load: false for a member unknown or declared dead.
caf::result<bool> record_heartbeat(HeadPointer self, uint64_t member, NodeLoad& load) {
  if (caf::error refused = refuse_non_node(self, "a heartbeat of member " + std::to_string(member))) {
    return refused;
  }
  auto it = self->state.members.find(member);
  if (it == self->state.members.end() || !it->second.status.alive) return false;
  it->second.last_heartbeat = Clock::now();
  // A unit's key is 16 hex digits (runtime/staging/stage_cache.h); anything else is not one.
  const auto not_a_key = [](const std::string& key) {
    return key.size() != 16 || key.find_first_not_of("0123456789abcdef") != std::string::npos;
  };
  load.cached_units.erase(std::remove_if(load.cached_units.begin(), load.cached_units.end(), not_a_key),
                          load.cached_units.end());
  if (load.cached_units.size() > kMaxReportedCachedUnits) load.cached_units.resize(kMaxReportedCachedUnits);
  it->second.status.load = std::move(load);
  return true;
}

// The nodes (net of the reservations of jobs they do not list yet, which it drops once
// listed or ended) and the jobs.
ClusterStatus status_of_cluster(HeadState& s) {
  ClusterStatus status;
  status.version = partita_version();
  status.heartbeat_ms = s.options.heartbeat_period.count();
  status.heartbeat_timeout_ms = s.options.heartbeat_timeout.count();
  const auto now = Clock::now();
  for (auto& [id, m] : s.members) {
    NodeStatus node = m.status;
    node.load = listed_load(s, m);
    node.ms_since_heartbeat = std::chrono::duration_cast<milliseconds>(now - m.last_heartbeat).count();
    if (node.alive) node.load.memory_available_bytes -= reserved_on(s, node);
    status.nodes.push_back(std::move(node));
  }
  status.jobs = jobs_of(s);
  return status;
}

// A job driver's report on its job, with the token the head gave it: false for a job
// unknown or finished; an error for a report without the token or one that is invalid.
caf::result<bool> record_report(HeadPointer self, const std::string& id, const std::string& token, JobStatus& report) {
  if (caf::error refused = refuse_non_node(self, "a report on job " + id)) return refused;
  auto it = self->state.jobs.find(id);
  if (it == self->state.jobs.end() || it->second.status.finished()) return false;
  if (token != it->second.token) {
    spdlog::warn("head: a report on job {} without its driver's token: refused", id);
    return caf::make_error(caf::sec::invalid_argument, "a report on job " + id + " without its driver's token");
  }
  if (const std::string why = invalid_report(report); !why.empty()) {
    spdlog::warn("head: a report on job {} refused: {}", id, why);
    return caf::make_error(caf::sec::invalid_argument, "report on job " + id + " refused: " + why);
  }
  Job& job = it->second;
  JobStatus& status = job.status;
  if (report.partitions != status.partitions || report.owner != status.owner) {
    // A new placement (an attempt): reserve its memory on its nodes.
    job.reserved.clear();
    if (report.partition_bytes.size() == report.partitions.size()) {
      for (size_t p = 0; p < report.partitions.size(); ++p) {
        job.reserved[report.partitions[p]] += std::max<int64_t>(0, report.partition_bytes[p]);
      }
    }
  }
  if (report.state != status.state) spdlog::info("head: job {}: {}", id, report.state);
  report.id = status.id;
  report.output = status.output;
  report.submitted = true;
  if (self->state.options.on_job_report) {
    try {
      self->state.options.on_job_report(report);
    } catch (const std::exception& e) {
      spdlog::warn("head: a listener of job {}'s reports failed: {}", id, e.what());
    }
  }
  report.new_steps.clear();
  status = std::move(report);
  if (status.finished()) note_end(self->state, job);
  return true;
}

// At most kMaxLogChunkBytes of job `id`'s log from `offset`, the offset after them, and the
// job's state.
caf::result<std::string, int64_t, std::string> log_chunk(const HeadState& s, const std::string& id, int64_t offset) {
  auto it = s.jobs.find(id);
  if (it == s.jobs.end()) return unknown_job(id);
  std::string bytes;
  std::ifstream in(it->second.log, std::ios::binary);
  if (in && offset >= 0) {
    in.seekg(0, std::ios::end);
    const int64_t size = static_cast<int64_t>(in.tellg());
    if (offset < size) {
      bytes.resize(static_cast<size_t>(std::min(size - offset, kMaxLogChunkBytes)));
      in.seekg(offset);
      in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      bytes.resize(static_cast<size_t>(in.gcount()));
    }
  }
  const int64_t next = std::max<int64_t>(0, offset) + static_cast<int64_t>(bytes.size());
  return {std::move(bytes), next, it->second.status.state};
}

// Cancels job `id`: its state after the request.
caf::result<std::string> cancel_on_request(HeadState& s, const std::string& id) {
  auto it = s.jobs.find(id);
  if (it == s.jobs.end()) return unknown_job(id);
  cancel(s, id, it->second);
  return it->second.status.state;
}

// Stops the cluster: cancels every job, waits for their drivers, then stops the nodes; the
// reply (the nodes told to stop) comes once they have.
caf::result<int32_t> begin_stop(HeadPointer self) {
  auto& s = self->state;
  if (s.stopping || s.answered) {
    return caf::make_error(caf::sec::invalid_argument, "the cluster is already stopping");
  }
  size_t running = 0;
  for (auto& [id, job] : s.jobs) {
    cancel(s, id, job);
    running += job.driver ? 1 : 0;
  }
  if (running > 0) spdlog::info("head: stopping the cluster: its {} job(s) first", running);
  s.stopping = self->make_response_promise<int32_t>();
  s.draining = true;
  auto promise = *s.stopping;
  continue_stop(self);
  return promise;
}

// The address drivers reach the head at, told once by the daemon of its own process.
bool learn_own_address(HeadPointer self, const std::string& address) {
  auto& s = self->state;
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!s.address.empty() || !sender || sender->node() != self->node() || address.empty()) return false;
  s.address = address;
  return true;
}

// The periodic check: silent members declared dead, late rendezvous groups failed, exited
// drivers reaped, old ends forgotten, a cluster stop moved on; and the next check.
void periodic_check(HeadPointer self) {
  auto& s = self->state;
  const auto now = Clock::now();
  // Ids first: declare_dead forgets old dead members, erasing from the map.
  std::vector<uint64_t> silent;
  for (const auto& [id, m] : s.members) {
    if (m.status.alive && now - m.last_heartbeat > s.options.heartbeat_timeout) silent.push_back(id);
  }
  for (uint64_t id : silent) {
    auto it = s.members.find(id);
    if (it == s.members.end()) continue;
    const auto quiet = std::chrono::duration_cast<milliseconds>(now - it->second.last_heartbeat).count();
    declare_dead(self, it->second, "no heartbeat for " + std::to_string(quiet) + " ms");
  }
  std::vector<std::string> late;
  for (const auto& [name, group] : s.groups) {
    if (now >= group.deadline) late.push_back(name);
  }
  for (const std::string& name : late) {
    const RendezvousGroup& group = s.groups.at(name);
    fail_group(self, name, "rank(s) " + missing_ranks(group) + " of " + std::to_string(group.size) +
                               " did not arrive within " + std::to_string(s.options.rendezvous_deadline.count()) +
                               " ms");
  }
  reap_drivers(s);
  forget_old_ends(s);
  continue_stop(self);
  self->delayed_send(self, std::max(milliseconds(1), s.options.heartbeat_period / 2), check_atom::value);
}

caf::result<std::vector<caf::actor>> node_rendezvous(HeadPointer self, const std::string& name, int32_t rank,
                                                     int32_t size, const caf::actor& member) {
  if (caf::error refused = refuse_non_node(self, "a rendezvous of group " + name.substr(0, 64))) return refused;
  return rendezvous(self, name, rank, size, member);
}

// A cluster stop's wait for its nodes ended: those that did not stop are given up on.
void give_up_stopping_nodes(HeadPointer self) {
  auto& s = self->state;
  if (!s.stopping) return;
  spdlog::warn("head: {} node(s) did not stop within {} ms", s.stopping_members.size(),
               s.options.stop_deadline.count());
  s.stopping_members.clear();
  finish_stop_if_done(self);
}

head_impl::behavior_type head(HeadPointer self, HeadOptions options) {
  self->state.options = std::move(options);
  const milliseconds check_every = std::max(milliseconds(1), self->state.options.heartbeat_period / 2);
  self->delayed_send(self, check_every, check_atom::value);
  self->set_down_handler([self](caf::down_msg& msg) { lost_agent(self, msg); });
  return {
      [self](join_atom, NodeInfo& info, caf::actor& agent) { return admit_member(self, info, agent); },
      [self](heartbeat_atom, uint64_t member, NodeLoad& load) { return record_heartbeat(self, member, load); },
      [self](status_atom) { return status_of_cluster(self->state); },
      [self](submit_job_atom, const std::string& name, const std::string& yaml) {
        return submit(self->state, name, yaml);
      },
      [self](resume_job_atom, const std::string& id) { return resume(self->state, id); },
      [self](job_report_atom, const std::string& id, const std::string& token, JobStatus& report) {
        return record_report(self, id, token, report);
      },
      [self](job_logs_atom, const std::string& id, int64_t offset) { return log_chunk(self->state, id, offset); },
      [self](cancel_job_atom, const std::string& id) { return cancel_on_request(self->state, id); },
      [self](stop_cluster_atom) { return begin_stop(self); },
      [self](own_address_atom, const std::string& address) { return learn_own_address(self, address); },
      [self](check_atom) { periodic_check(self); },
      [self](rendezvous_atom, const std::string& name, int32_t rank, int32_t size, const caf::actor& member) {
        return node_rendezvous(self, name, rank, size, member);
      },
      [self](stop_ack_atom) { quit_after_answer(self); },
      [self](stop_deadline_atom) { give_up_stopping_nodes(self); },
  };
}

}  // namespace

void check_heartbeat_settings(milliseconds period, milliseconds timeout) {
  if (period.count() <= 0) throw UsageError("heartbeat period must be positive, got " + std::to_string(period.count()) + " ms");
  if (timeout <= period) {
    throw UsageError("heartbeat timeout (" + std::to_string(timeout.count()) + " ms) must be longer than the period (" +
                     std::to_string(period.count()) + " ms)");
  }
  if (timeout > milliseconds(3600 * 1000)) throw UsageError("heartbeat timeout must be at most one hour");
}

head_actor spawn_head(caf::actor_system& system, const HeadOptions& options) {
  check_heartbeat_settings(options.heartbeat_period, options.heartbeat_timeout);
  return caf::actor_cast<head_actor>(system.spawn(head, options));
}

void tell_head_its_address(caf::actor_system& system, const head_actor& head, const std::string& address,
                           milliseconds timeout) {
  caf::scoped_actor self{system};
  bool taken = false;
  std::string failure;
  self->request(caf::actor_cast<caf::actor>(head), timeout, own_address_atom::value, address)
      .receive([&](bool ok) { taken = ok; }, [&](caf::error& e) { failure = system.render(e); });
  if (!failure.empty()) throw Error("the head did not take its address " + address + ": " + failure);
  if (!taken) throw Error("the head already has an address; not " + address);
}

}  // namespace partita::runtime
