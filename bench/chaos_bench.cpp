#include "bench/chaos_bench.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/file_util.h"
#include "base/subprocess.h"
#include "bench/bench_cluster.h"
#include "bench/input_graph.h"
#include "bench/workdir.h"
#include "netns/netns_cluster.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"

namespace partita::bench {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kHosts = 3;
constexpr int kNodes = 3;
constexpr int kPartitions = 3;
constexpr milliseconds kPoll{250};
constexpr milliseconds kHeadTimeout{10000};
constexpr seconds kDetectBound{60};     // after the fault (after SIGCONT for a frozen node)
constexpr seconds kRecoverBound{180};   // after detection: placement (30 s), staging, a first step
constexpr seconds kCalibrationBound{600};
constexpr double kNodeStop[] = {10, 20};  // seconds a node is frozen
constexpr double kHeadStop[] = {2, 3};    // seconds the head is frozen: < the 5 s connection heartbeat timeout

// SIGINT and SIGTERM while the bench runs: a flag its waits check, so that it ends by
// throwing and every destructor (processes, namespaces) runs.
std::atomic<bool> g_interrupted{false};
extern "C" void on_chaos_signal(int) { g_interrupted.store(true); }

struct InterruptGuard {
  struct sigaction int_before {}, term_before {};
  InterruptGuard() {
    struct sigaction action {};
    action.sa_handler = on_chaos_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &int_before);
    sigaction(SIGTERM, &action, &term_before);
  }
  ~InterruptGuard() {
    sigaction(SIGINT, &int_before, nullptr);
    sigaction(SIGTERM, &term_before, nullptr);
  }
};

void check_interrupted() {
  if (g_interrupted.load()) throw Error("bench chaos: interrupted (SIGINT or SIGTERM)");
}

// Sleeps `s` seconds, waking for an interrupt.
void pause_for(double s) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  while (Clock::now() < until) {
    check_interrupted();
    std::this_thread::sleep_for(std::min<Clock::duration>(milliseconds(100), until - Clock::now()));
  }
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Milliseconds since local midnight, as the logs' "[HH:MM:SS.mmm]" tell time.
int64_t ms_of_day(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  localtime_r(&s, &local);
  const int64_t ms = std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count() % 1000;
  return ((local.tm_hour * 60 + local.tm_min) * 60 + local.tm_sec) * 1000 + ms;
}

// Seconds from `from` (ms of day) to `to`, across midnight; negative when `to` is earlier
// (by less than 12 h).
double seconds_between(int64_t from, int64_t to) {
  constexpr int64_t kDay = 86400000;
  int64_t d = ((to - from) % kDay + kDay) % kDay;
  if (d > kDay / 2) d -= kDay;
  return static_cast<double>(d) / 1000.0;
}

struct LogLine {
  int64_t ms = 0;  // of day
  std::string text;
};

// The lines of a driver's log that contain `needle` and match `pattern`, with their times
// (the needle spares the regex the thousands of epoch lines of a long job).
std::vector<LogLine> log_lines(const std::string& log, const std::string& needle, const std::regex& pattern) {
  static const std::regex stamped(R"(^\[(\d\d):(\d\d):(\d\d)\.(\d{3})\] \[\w+\] (.*)$)");
  std::vector<LogLine> lines;
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.find(needle) == std::string::npos) continue;
    if (!std::regex_match(line, m, stamped) || !std::regex_search(m[5].str(), pattern)) continue;
    lines.push_back({((std::stoll(m[1]) * 60 + std::stoll(m[2])) * 60 + std::stoll(m[3])) * 1000 + std::stoll(m[4]),
                     m[5].str()});
  }
  return lines;
}

// The parameter hash a driver logs at its job's end; 0 if none.
uint64_t logged_hash(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex("parameter hash (\\d+)"))) return 0;
  return std::stoull(m[1]);
}

// The bench's view of one cluster's head: status requests from this process (which runs
// in host 0, where the heads are).
class HeadView {
 public:
  HeadView(runtime::ActorSystem& client, const BenchCluster& cluster)
      : client_(client),
        cluster_(cluster),
        handle_(runtime::connect_head(client.get(), runtime::parse_endpoint(cluster.head.address, "head"), kHeadTimeout)) {}

  // The job's status; throws Error when the head has no such job or does not answer.
  runtime::JobStatus job(const std::string& id) const {
    for (auto& j : runtime::cluster_status(client_.get(), handle_, cluster_.head.address, kHeadTimeout).jobs) {
      if (j.id == id) return j;
    }
    throw Error("bench chaos: the head " + cluster_.head.address + " has no job " + id);
  }

  // Polls the job until `done` says so; throws Error naming `what` after `bound`.
  runtime::JobStatus wait(const std::string& id, const std::string& what, Clock::duration bound,
                          const std::function<bool(const runtime::JobStatus&)>& done) const {
    const auto until = Clock::now() + bound;
    for (;;) {
      check_interrupted();
      runtime::JobStatus j = job(id);
      if (done(j)) return j;
      if (j.finished()) throw Error("bench chaos: job " + id + " " + j.state + " while waiting for " + what + ": " + j.message);
      if (Clock::now() > until) {
        throw Error("bench chaos: no " + what + " within " +
                    std::to_string(std::chrono::duration_cast<seconds>(bound).count()) + " s (job " + id + " " + j.state +
                    ", restarts " + std::to_string(j.restarts) + ")");
      }
      std::this_thread::sleep_for(kPoll);
    }
  }

  // Submits the job file (`partita submit --detach` where the head is); its id.
  std::string submit(const std::string& job_file) const {
    const ProcessResult r = run_process(cluster_.command({self_executable(), "--log-level", "warn", "submit", job_file,
                                                         "--address", cluster_.head.address, "--detach"}),
                                        60);
    std::smatch id;
    if (r.exit_code != 0 || !std::regex_search(r.out, id, std::regex("job (\\S+) submitted to"))) {
      throw Error("bench chaos: submit to " + cluster_.head.address + " failed: " + r.out + r.err);
    }
    return id[1];
  }

  void cancel(const std::string& id) const {
    runtime::cancel_job(client_.get(), handle_, cluster_.head.address, id, kHeadTimeout);
  }

  std::string driver_log(const std::string& id) const { return read_file_if_exists(cluster_.runs + "/" + id + "/driver.log"); }

 private:
  runtime::ActorSystem& client_;
  const BenchCluster& cluster_;
  runtime::head_actor handle_;
};

// Cancels the submitted jobs however the bench ends (before their heads go).
struct CancelOnExit {
  std::vector<std::pair<const HeadView*, std::string>> jobs;
  ~CancelOnExit() {
    for (const auto& [head, id] : jobs) {
      try {
        if (!head->job(id).finished()) head->cancel(id);
      } catch (const Error& e) {
        spdlog::warn("bench chaos: cannot cancel job {}: {}", id, e.what());
      }
    }
  }
};

std::string write_job(const std::string& file, const std::string& parts, const std::string& unused, int epochs, int max_restarts,
                      const ChaosBenchOptions& o) {
  std::ofstream job(file);
  job << "data: {partitions: " << parts << "}\n"
      << "model: {kind: graphsage, hidden: 64, layers: 2}\n"
      << "sampling: {fanouts: [10, 10], batch_size: 20}\n"
      << "train: {epochs: " << epochs << ", checkpoint_every_steps: " << o.checkpoint_every
      << ", max_restarts: " << max_restarts << ", seed: " << o.seed << "}\n"
      << "cluster: {partitions_per_node: 2}\n"
      << "output: " << unused << "\n";
  if (!job) throw Error("bench chaos: cannot write " + file);
  return file;
}

// Seconds per epoch of the job when it and its undisturbed twin run at once: a job of
// kCalibrationEpochs on both clusters, timed from its first step to its end (so its data
// is staged on the nodes, too).
constexpr int kCalibrationEpochs = 5;
double calibrate(const HeadView& a, const HeadView& b, const std::string& job_file) {
  const HeadView* heads[] = {&a, &b};
  const std::string ids[] = {a.submit(job_file), b.submit(job_file)};
  std::optional<Clock::time_point> started[2], ended[2];
  const auto until = Clock::now() + kCalibrationBound;
  while (!ended[0] || !ended[1]) {
    check_interrupted();
    for (int i = 0; i < 2; ++i) {
      if (ended[i]) continue;
      const runtime::JobStatus j = heads[i]->job(ids[i]);
      if (!started[i] && (j.state == "running" || j.state == "done")) started[i] = Clock::now();
      if (j.state == "done") ended[i] = Clock::now();
      if (j.finished() && j.state != "done") throw Error("bench chaos: the calibration job " + ids[i] + " " + j.state + ": " + j.message);
    }
    if (Clock::now() > until) {
      throw Error("bench chaos: the calibration jobs did not end within " + std::to_string(kCalibrationBound.count()) + " s");
    }
    std::this_thread::sleep_for(kPoll);
  }
  double slowest = 0;
  for (int i = 0; i < 2; ++i) {
    slowest = std::max(slowest, std::chrono::duration<double>(*ended[i] - *started[i]).count() / kCalibrationEpochs);
  }
  return slowest;
}

enum class FaultKind { kill_node, stop_node, stop_head };

const char* kind_name(FaultKind k) {
  switch (k) {
    case FaultKind::kill_node: return "kill -9 node";
    case FaultKind::stop_node: return "SIGSTOP node";
    case FaultKind::stop_head: return "SIGSTOP head";
  }
  return "?";
}

struct Fault {
  FaultKind kind;
  double at = 0;  // seconds after the job's first step
  std::string target;
  double stopped_s = 0;  // SIGSTOP: how long
  double injected_s = 0;
  std::optional<double> detected_s, recovered_s;
  int64_t redone = 0;
  int restarts = 0;  // the job's restarts it caused
};

// The faults: `n` of them, fault k at a random point of the middle of interval k, the kinds
// shuffled in blocks of 3 so that each comes once in every 3.
std::vector<Fault> plan_faults(int n, double interval, std::mt19937_64& random) {
  std::vector<Fault> faults;
  std::uniform_real_distribution<double> within(0.2, 0.8);
  std::vector<FaultKind> kinds;
  for (int k = 0; k < n; ++k) {
    if (kinds.empty()) {
      kinds = {FaultKind::kill_node, FaultKind::stop_node, FaultKind::stop_head};
      std::shuffle(kinds.begin(), kinds.end(), random);
    }
    Fault f;
    f.kind = kinds.back();
    kinds.pop_back();
    f.at = (k + within(random)) * interval;
    faults.push_back(f);
  }
  return faults;
}

// The chaos job's cluster as the faults see it.
struct Target {
  BenchCluster& cluster;
  const HeadView& head;
  std::string id;
  int named = kNodes;  // nodes started so far: the next one's name
};

// The node that runs one of the job's partitions, drawn at random; throws Error if none runs.
size_t random_job_node(const Target& t, std::mt19937_64& random) {
  const runtime::JobStatus j = t.head.job(t.id);
  std::vector<size_t> candidates;
  for (size_t n = 0; n < t.cluster.nodes.size(); ++n) {
    const bool runs_one = std::find(j.partitions.begin(), j.partitions.end(), t.cluster.nodes[n].address) != j.partitions.end();
    if (runs_one && t.cluster.nodes[n].process->running()) candidates.push_back(n);
  }
  if (candidates.empty()) throw Error("bench chaos: no running node of the job's partitions");
  return candidates[std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(random)];
}

// The names the nodes were started with, in order: node-0 ... (a fresh one takes the next).
std::string node_name(size_t n) {
  return "node-" + std::to_string(n);
}

// The restart line of restart `restart` in the job's log, which must name `node`.
std::optional<LogLine> restart_line(const Target& t, int restart, const std::string& node) {
  const std::vector<LogLine> lines =
      log_lines(t.head.driver_log(t.id), "] lost ", std::regex("^lost .*; restart " + std::to_string(restart) + " of"));
  if (lines.empty()) return std::nullopt;
  if (lines.front().text.find(node + " (") == std::string::npos) {
    throw Error("bench chaos: the job's restart " + std::to_string(restart) + " names another node than " + node + ": " +
                lines.front().text);
  }
  return lines.front();
}

// A node fault: the job detects it (a restart), then trains again. Fills the fault's times.
void node_fault(Target& t, Fault& f, size_t n, const Clock::time_point start, int64_t start_ms) {
  const int before = t.head.job(t.id).restarts;
  ChildProcess& node = *t.cluster.nodes[n].process;
  const std::string name = node_name(n);
  const bool stop = f.kind == FaultKind::stop_node;
  node.signal(stop ? SIGSTOP : SIGKILL);
  // Polled while the node is frozen too: the job recovers without it meanwhile.
  const auto cont_at = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(f.stopped_s));
  bool frozen = stop;
  std::optional<Clock::time_point> detected;
  for (;;) {
    check_interrupted();
    if (frozen && Clock::now() >= cont_at) {
      node.signal(SIGCONT);  // it joins the head again, as a new member
      frozen = false;
    }
    const runtime::JobStatus j = t.head.job(t.id);
    if (!detected && j.restarts > before) detected = Clock::now();
    if (!f.recovered_s && detected && j.state == "running") f.recovered_s = since(start);
    if (f.recovered_s && !frozen) break;
    if (j.finished()) throw Error("bench chaos: job " + t.id + " " + j.state + " after " + kind_name(f.kind) + " of " + name + ": " + j.message);
    const bool late = detected ? Clock::now() > *detected + kRecoverBound : Clock::now() > cont_at + kDetectBound;
    if (late && !frozen) {
      throw Error("bench chaos: no " + std::string(detected ? "first step after the restart" : "restart") + " after " +
                  kind_name(f.kind) + " of " + name + " within " +
                  std::to_string((detected ? kRecoverBound : kDetectBound).count()) + " s (job " + t.id + " " + j.state + ")");
    }
    std::this_thread::sleep_for(kPoll);
  }
  if (!stop) add_node(t.cluster, t.cluster.node_hosts[n], node_name(static_cast<size_t>(t.named++)));  // in its place, on its host
  f.restarts = t.head.job(t.id).restarts - before;
  if (const auto line = restart_line(t, before + 1, name)) {
    f.detected_s = seconds_between(start_ms, line->ms);
    std::smatch m;
    if (std::regex_search(line->text, m, std::regex("(\\d+) step\\(s\\) to re-do"))) f.redone = std::stoll(m[1]);
  }
}

// The head's fault: frozen for less than the heartbeat timeout; the job goes on, and its
// driver logs the head's silence and its answer again.
void head_fault(Target& t, Fault& f, int64_t start_ms) {
  const int before = t.head.job(t.id).restarts;
  t.cluster.head.process->signal(SIGSTOP);
  pause_for(f.stopped_s);
  t.cluster.head.process->signal(SIGCONT);
  const auto until = Clock::now() + kDetectBound;
  for (;;) {
    check_interrupted();
    const std::string log = t.head.driver_log(t.id);
    const auto after = [&](const std::vector<LogLine>& lines) -> std::optional<LogLine> {
      for (const LogLine& l : lines) {
        if (seconds_between(start_ms, l.ms) >= 0) return l;
      }
      return std::nullopt;
    };
    const auto silent = after(log_lines(log, " has not answered", std::regex("^the head at \\S+ has not answered")));
    const auto again = after(log_lines(log, " answers again", std::regex("^the head at \\S+ answers again")));
    if (silent && again) {
      f.detected_s = seconds_between(start_ms, silent->ms);
      f.recovered_s = seconds_between(start_ms, again->ms);
      break;
    }
    if (Clock::now() > until) {
      throw Error("bench chaos: the job's log names no silence of the head and its answer within " +
                  std::to_string(kDetectBound.count()) + " s of its SIGCONT");
    }
    std::this_thread::sleep_for(kPoll);
  }
  const runtime::JobStatus j = t.head.wait(t.id, "the job running after the head's SIGSTOP", kRecoverBound,
                                           [](const runtime::JobStatus& j) { return j.state == "running"; });
  f.restarts = j.restarts - before;
}

// The table of the injected faults; "restarts" are the job's restarts each caused (1 for a
// node's, 0 for the head's).
void print_faults(const std::vector<Fault>& faults) {
  std::printf("\n%-3s %-13s %-36s %6s %11s %12s %13s %9s\n", "#", "fault", "target", "time", "detected s",
              "recovered s", "steps redone", "restarts");
  int k = 0;
  for (const Fault& f : faults) {
    if (f.target.empty()) continue;
    char time[16], detected[16] = "-", recovered[16] = "-";
    std::snprintf(time, sizeof time, "%02d:%02d", static_cast<int>(f.injected_s) / 60, static_cast<int>(f.injected_s) % 60);
    if (f.detected_s) std::snprintf(detected, sizeof detected, "%.2f", *f.detected_s);
    if (f.recovered_s) std::snprintf(recovered, sizeof recovered, "%.2f", *f.recovered_s);
    std::printf("%-3d %-13s %-36s %6s %11s %12s %13lld %9d\n", ++k, kind_name(f.kind), f.target.c_str(), time, detected,
                recovered, static_cast<long long>(f.redone), f.restarts);
  }
}

}  // namespace

void run_chaos_bench(const ChaosBenchOptions& o) {
  if (o.minutes <= 0) throw UsageError("--minutes must be positive");
  if (o.interval <= 0) throw UsageError("--interval must be positive");
  const int n_faults = std::max(1, static_cast<int>(std::floor(o.minutes * 60 / o.interval)));
  InterruptGuard interrupt_guard;
  g_interrupted.store(false);
  {  // before the graph is generated and partitioned: can this process make hosts?
    const NetnsCluster probe(kHosts);
    if (!probe.unavailable().empty()) throw Error("bench chaos: no separate hosts: " + probe.unavailable());
  }
  Workdir workdir(o.work_dir, "chaos-bench");
  const std::string parts = sbm_in_metis_parts(workdir, o.num_nodes, kPartitions, o.seed);
  const std::string dir = workdir.path() + "/clusters";
  std::filesystem::remove_all(dir);

  NetnsCluster hosts(kHosts);
  if (!hosts.unavailable().empty()) throw Error("bench chaos: no separate hosts: " + hosts.unavailable());
  hosts.enter(0);  // this thread, and the client's threads it starts, talk to the heads from host 0
  std::unique_ptr<BenchCluster> chaos = start_cluster(&hosts, kNodes, dir + "/chaos", 7070, "info");
  std::unique_ptr<BenchCluster> calm = start_cluster(&hosts, kNodes, dir + "/undisturbed", 7071, "info");
  runtime::ActorSystemOptions client_options;
  client_options.threads = 2;
  client_options.networking = true;
  runtime::ActorSystem client(client_options);
  const HeadView chaos_head(client, *chaos), calm_head(client, *calm);
  std::printf("3 hosts (network namespaces); the job's cluster: head %s, nodes %s %s %s; the undisturbed one's: head %s\n",
              chaos->head.address.c_str(), chaos->nodes[0].address.c_str(), chaos->nodes[1].address.c_str(),
              chaos->nodes[2].address.c_str(), calm->head.address.c_str());
  std::fflush(stdout);

  const double epoch_s = calibrate(chaos_head, calm_head, write_job(workdir.path() + "/calibration.yaml", parts, workdir.path() + "/unused", kCalibrationEpochs, 3, o));
  const int epochs = std::max(2, static_cast<int>(std::ceil(1.1 * o.minutes * 60 / epoch_s)));
  const std::string job_file = write_job(workdir.path() + "/chaos.yaml", parts, workdir.path() + "/unused", epochs, n_faults + 3, o);
  std::printf("SBM %lld nodes in %d partitions (up to 2 per node), GraphSAGE, a checkpoint every %lld steps; %.1f s per "
              "epoch with both jobs running: %d epochs; %d faults, one per %.0f s\n",
              static_cast<long long>(o.num_nodes), kPartitions, static_cast<long long>(o.checkpoint_every), epoch_s,
              epochs, n_faults, o.interval);
  std::fflush(stdout);

  CancelOnExit cancel_on_exit;
  const std::string calm_id = calm_head.submit(job_file);
  cancel_on_exit.jobs.push_back({&calm_head, calm_id});
  Target target{*chaos, chaos_head, chaos_head.submit(job_file)};
  cancel_on_exit.jobs.push_back({&chaos_head, target.id});
  const seconds job_bound(static_cast<int64_t>(std::max(600.0, 3 * epochs * epoch_s)));
  chaos_head.wait(target.id, "first step of the job", kCalibrationBound,
                  [](const runtime::JobStatus& j) { return j.state == "running"; });
  const auto start = Clock::now();
  const auto start_wall = std::chrono::system_clock::now();

  std::mt19937_64 random(o.seed);
  std::vector<Fault> faults = plan_faults(n_faults, o.interval, random);
  for (Fault& f : faults) {
    pause_for(f.at - since(start));
    if (chaos_head.job(target.id).finished()) break;
    f.injected_s = since(start);
    const int64_t at_ms = ms_of_day(start_wall) + static_cast<int64_t>(f.injected_s * 1000);
    const auto at = Clock::now();
    if (f.kind == FaultKind::stop_head) {
      f.stopped_s = std::uniform_real_distribution<double>(kHeadStop[0], kHeadStop[1])(random);
      f.target = "head " + chaos->head.address;
      head_fault(target, f, at_ms);
    } else {
      f.stopped_s = f.kind == FaultKind::stop_node ? std::uniform_real_distribution<double>(kNodeStop[0], kNodeStop[1])(random) : 0;
      const size_t n = random_job_node(target, random);
      f.target = node_name(n) + " " + chaos->nodes[n].address;
      node_fault(target, f, n, at, at_ms);
    }
    if (f.stopped_s > 0) {
      char stopped[32];
      std::snprintf(stopped, sizeof stopped, " for %.1f s", f.stopped_s);
      f.target += stopped;
    }
    std::printf("fault %zu at %.0f s: %s, %s: detected after %.2f s, recovered after %.2f s, %lld step(s) re-done%s\n",
                static_cast<size_t>(&f - faults.data()) + 1, f.injected_s, kind_name(f.kind), f.target.c_str(),
                f.detected_s.value_or(-1), f.recovered_s.value_or(-1), static_cast<long long>(f.redone),
                f.detected_s ? "" : " (not named in the job's log)");
    std::fflush(stdout);
  }

  const runtime::JobStatus chaos_end = chaos_head.wait(target.id, "end of the job", job_bound, [](const runtime::JobStatus& j) {
    return j.state == "done";
  });
  const runtime::JobStatus calm_end = calm_head.wait(calm_id, "end of the undisturbed job", job_bound,
                                                     [](const runtime::JobStatus& j) { return j.state == "done"; });
  const double job_s = since(start);
  const uint64_t chaos_hash = logged_hash(chaos_head.driver_log(target.id));
  const uint64_t calm_hash = logged_hash(calm_head.driver_log(calm_id));

  print_faults(faults);
  int injected = 0, unnamed = 0, by_kind[3] = {0, 0, 0};
  for (const Fault& f : faults) {
    if (f.target.empty()) continue;
    ++injected;
    ++by_kind[static_cast<int>(f.kind)];
    unnamed += f.detected_s ? 0 : 1;
  }
  const bool equal = chaos_hash != 0 && chaos_hash == calm_hash;
  std::printf("\njob %s: %d epochs in %.0f s, %d restart(s); undisturbed job %s: %d restart(s)\n", target.id.c_str(),
              epochs, job_s, chaos_end.restarts, calm_id.c_str(), calm_end.restarts);
  std::printf("faults: %d of %d planned (%d kill -9 node, %d SIGSTOP node, %d SIGSTOP head), named in the job's log: %d"
              "\nparameter hash equal: %s (%llu, undisturbed %llu)\nhangs: 0\n",
              injected, n_faults, by_kind[0], by_kind[1], by_kind[2], injected - unnamed, equal ? "yes" : "no",
              static_cast<unsigned long long>(chaos_hash), static_cast<unsigned long long>(calm_hash));
  std::fflush(stdout);
  if (unnamed > 0) throw Error("bench chaos: " + std::to_string(unnamed) + " fault(s) not named in the job's log");
  if (!equal) throw Error("bench chaos: the job's parameter hash differs from the undisturbed job's");
}

}  // namespace partita::bench
