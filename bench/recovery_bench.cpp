#include "bench/recovery_bench.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <algorithm>
#include <functional>
#include <regex>
#include <thread>

#include "base/error.h"
#include "base/subprocess.h"
#include "bench/input_graph.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "runtime/daemon_child.h"

namespace partita::bench {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kTrialBound{60000};  // ends a trial that hangs
constexpr milliseconds kPoll{5};

struct Trial {
  std::string signal;
  double detect_s = 0, head_s = 0, recover_s = 0;
  int64_t redone = 0;
};

void print_summary(const std::vector<Trial>& trials, const std::string& signal) {
  std::vector<double> detect, head, recover, redone;
  for (const Trial& t : trials) {
    if (t.signal != signal) continue;
    detect.push_back(t.detect_s);
    head.push_back(t.head_s);
    recover.push_back(t.recover_s);
    redone.push_back(static_cast<double>(t.redone));
  }
  if (detect.empty()) return;
  auto max = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  std::printf("%-8s %2zu trials  job detects: median %6.2f s max %6.2f s | head declares dead: median %6.2f s max %6.2f s"
              " | first step after: median %6.2f s max %6.2f s | steps re-done: median %4.0f max %4.0f\n",
              signal.c_str(), detect.size(), median(detect), max(detect), median(head), max(head), median(recover),
              max(recover), median(redone), max(redone));
}

}  // namespace

void run_recovery_bench(const RecoveryBenchOptions& o) {
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  Workdir workdir(o.work_dir, "recovery-bench");
  const std::string parts = sbm_in_metis_parts(workdir, o.num_nodes, 2, o.seed);
  const std::string runs = workdir.path() + "/runs";
  const std::string exe = self_executable();
  runtime::DaemonChild head = runtime::start_daemon_child(exe, {"--head", "--runs", runs}, {"--log-level", "warn"});
  std::vector<runtime::DaemonChild> nodes;
  int named = 0;
  auto add_node = [&] {
    nodes.push_back(runtime::start_daemon_child(exe, {"--join", head.address, "--name", "node-" + std::to_string(named++)},
                                                {"--log-level", "warn"}));
  };
  for (int i = 0; i < 4; ++i) add_node();

  runtime::ActorSystemOptions client_options;
  client_options.threads = 2;
  client_options.networking = true;
  runtime::ActorSystem client(client_options);
  const runtime::head_actor handle =
      runtime::connect_head(client.get(), runtime::parse_endpoint(head.address, "head"), std::chrono::seconds(10));
  auto status = [&] { return runtime::cluster_status(client.get(), handle, head.address, std::chrono::seconds(10)); };
  auto wait = [&](const std::string& what, const std::function<bool(const runtime::ClusterStatus&)>& done) {
    const auto until = Clock::now() + kTrialBound;
    for (;;) {
      runtime::ClusterStatus s = status();
      if (done(s)) return s;
      if (Clock::now() > until) throw Error("recovery bench: no " + what + " within " + std::to_string(kTrialBound.count() / 1000) + " s");
      std::this_thread::sleep_for(kPoll);
    }
  };
  auto job_in = [](const runtime::ClusterStatus& s) -> const runtime::JobStatus* {
    for (const auto& j : s.jobs) {
      if (j.submitted && !j.finished()) return &j;
    }
    return nullptr;
  };
  wait("4 live nodes", [](const runtime::ClusterStatus& s) {
    return std::count_if(s.nodes.begin(), s.nodes.end(), [](const auto& n) { return n.alive; }) == 4;
  });

  const int total = 2 * o.trials;
  const std::string job_file = workdir.path() + "/recovery.yaml";
  {
    std::ofstream job(job_file);
    job << "data: {partitions: " << parts << "}\n"
        << "model: {kind: graphsage, hidden: 64, layers: 2}\n"
        << "sampling: {fanouts: [10, 10], batch_size: 20}\n"
        << "train: {epochs: 100000, checkpoint_every_steps: " << o.checkpoint_every << ", max_restarts: " << total
        << ", seed: " << o.seed << "}\n"
        << "cluster: {partitions_per_node: 1}\n"
        << "output: " << workdir.path() << "/unused\n";
  }
  ProcessResult submitted =
      run_process({exe, "--log-level", "warn", "submit", job_file, "--address", head.address, "--detach"}, 60);
  if (submitted.exit_code != 0) throw Error("recovery bench: submit failed: " + submitted.err);
  std::smatch submitted_id;
  if (!std::regex_search(submitted.out, submitted_id, std::regex("job (\\S+) submitted to"))) {
    throw Error("recovery bench: submit printed no job id: " + submitted.out);
  }
  // The job ends with the benchmark, however it ends (its driver also dies with the head).
  struct CancelOnExit {
    runtime::ActorSystem& client;
    const runtime::head_actor& head;
    std::string where, id;
    ~CancelOnExit() {
      try {
        runtime::cancel_job(client.get(), head, where, id, std::chrono::seconds(10));
      } catch (const Error& e) {
        spdlog::warn("recovery bench: cannot cancel job {}: {}", id, e.what());
      }
    }
  } cancel_on_exit{client, handle, head.address, submitted_id[1]};
  std::printf("head %s, 4 nodes, job on %s (2 partitions, a checkpoint every %lld steps); %d trials per signal\n",
              head.address.c_str(), parts.c_str(), static_cast<long long>(o.checkpoint_every), o.trials);

  std::vector<Trial> trials;
  int resumed = 0;  // the epoch the job was in at the last signal
  for (int t = 0; t < total; ++t) {
    const bool stop = t % 2 == 1;
    // Mid-epoch of a running attempt: a few steps past its start.
    // Two epochs into the attempt.
    runtime::ClusterStatus s = wait("running job", [&](const runtime::ClusterStatus& s) {
      const runtime::JobStatus* j = job_in(s);
      return j != nullptr && j->state == "running" && j->restarts == t && j->epoch >= resumed + 2 &&
             j->partitions.size() == 2;
    });
    resumed = job_in(s)->epoch;
    // That was an epoch's end: land the signal 20-80% into the next epoch (by its rate so far).
    const runtime::JobStatus& now = *job_in(s);
    const double epoch_s = now.steps_per_second > 0 ? static_cast<double>(now.steps) / now.steps_per_second : 0.0;
    std::this_thread::sleep_for(std::chrono::duration<double>(epoch_s * (0.2 + 0.6 * ((t * 7) % 10) / 10.0)));
    const std::string victim = job_in(s)->partitions[0];
    runtime::DaemonChild* node = nullptr;
    for (auto& n : nodes) {
      if (n.address == victim && n.process->running()) node = &n;
    }
    if (node == nullptr) throw Error("recovery bench: no running node at " + victim);
    const auto start = Clock::now();
    node->process->signal(stop ? SIGSTOP : SIGKILL);
    Trial trial;
    trial.signal = stop ? "SIGSTOP" : "SIGKILL";
    bool head_saw = false, job_saw = false;
    auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    wait("detection", [&](const runtime::ClusterStatus& s) {
      for (const auto& n : s.nodes) {
        if (!head_saw && n.info.address == victim && !n.alive) {
          head_saw = true;
          trial.head_s = seconds();
        }
      }
      const runtime::JobStatus* j = job_in(s);
      if (!job_saw && j != nullptr && j->restarts == t + 1) {
        job_saw = true;
        trial.detect_s = seconds();
        std::smatch m;
        if (std::regex_search(j->message, m, std::regex("(\\d+) step\\(s\\) to re-do"))) trial.redone = std::stoll(m[1]);
      }
      return head_saw && job_saw;
    });
    wait("first step after recovery", [&](const runtime::ClusterStatus& s) {
      const runtime::JobStatus* j = job_in(s);
      return j != nullptr && j->restarts == t + 1 && j->state == "running";
    });
    trial.recover_s = seconds();
    std::printf("trial %2d %-7s job detects %6.2f s, head %6.2f s, first step after %6.2f s, %lld step(s) re-done\n",
                t + 1, trial.signal.c_str(), trial.detect_s, trial.head_s, trial.recover_s,
                static_cast<long long>(trial.redone));
    std::fflush(stdout);
    trials.push_back(trial);
    node->process->kill();  // a frozen one too: it would join again as a new member
    add_node();
  }
  print_summary(trials, "SIGKILL");
  print_summary(trials, "SIGSTOP");
}

}  // namespace partita::bench
