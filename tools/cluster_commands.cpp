// partita status [--address HEAD] [--json]: the cluster's nodes and jobs, as the head knows them.
// partita stop JOB [--address HEAD]: cancels one job submitted to the head.
// partita down [--yes] (or stop --cluster [--yes]): stops the cluster (its jobs, every live
// node, then the head), after a confirmation on a terminal; without one, only with --yes.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "base/error.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "runtime/cluster/status_json.h"
#include "tools/commands.h"
#include "tools/head_address.h"

namespace partita::cli {

namespace {

struct HeadOptions {
  std::string address;  // "": head_address.h's precedence
  int timeout_s = 10;
};

void add_head_options(CLI::App* cmd, HeadOptions& o) {
  cmd->add_option("--address", o.address, kHeadAddressHelp);
  cmd->add_option("--timeout", o.timeout_s, "seconds to wait for the head")
      ->check(cli::positive())
      ->capture_default_str();
}

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

// "partition x2, sampler x2"; "-" for none.
std::string actor_summary(const std::vector<std::string>& types) {
  std::map<std::string, int> counts;
  for (const auto& t : types) ++counts[t];
  std::string text;
  for (const auto& [type, n] : counts) text += (text.empty() ? "" : ", ") + type + (n > 1 ? " x" + std::to_string(n) : "");
  return text.empty() ? "-" : text;
}

void print_table(const runtime::ClusterStatus& s, const std::string& head) {
  size_t alive = 0;
  for (const auto& n : s.nodes) alive += n.alive ? 1 : 0;
  std::printf("head %s (partita %s): heartbeat every %lld ms, a node silent for %lld ms is dead\n", head.c_str(),
              s.version.c_str(), static_cast<long long>(s.heartbeat_ms), static_cast<long long>(s.heartbeat_timeout_ms));
  std::printf("nodes: %zu alive, %zu dead\n", alive, s.nodes.size() - alive);
  if (!s.nodes.empty()) {
    std::printf("  %-6s %-16s %-22s %-6s %5s %10s %10s %10s  %s\n", "member", "name", "address", "state", "cores",
                "memory", "available", "disk free", "actors");
  }
  for (const auto& n : s.nodes) {
    // What runs there: its actors, and the jobs they belong to.
    std::string what = n.alive ? actor_summary(n.load.actor_types) : n.lost;
    std::string jobs;
    for (const std::string& id : runtime::jobs_on_node(s, n)) jobs += (jobs.empty() ? "" : ", ") + id;
    if (!jobs.empty()) what += " (jobs " + jobs + ")";
    std::printf("  %-6llu %-16s %-22s %-6s %5d %10s %10s %10s  %s\n", static_cast<unsigned long long>(n.member),
                n.info.name.c_str(), n.info.address.c_str(), n.alive ? "alive" : "dead", n.info.cores,
                gib(n.info.memory_bytes).c_str(), gib(n.load.memory_available_bytes).c_str(),
                gib(n.load.disk_free_bytes).c_str(), what.c_str());
  }
  std::printf("jobs: %zu\n", s.jobs.size());
  for (const auto& j : s.jobs) {
    std::string nodes;
    for (const auto& n : j.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
    if (!j.submitted) {
      std::printf("  %s  %s  %lld actor(s) on %s\n", j.id.c_str(), j.state.c_str(), static_cast<long long>(j.actors),
                  nodes.c_str());
      continue;
    }
    std::printf("  %s  %s  epoch %d/%d step %lld/%lld  %.2f steps/s  loss %.4f acc %.4f  restarts %d  %lld actor(s)%s%s\n",
                j.id.c_str(), j.state.c_str(), j.epoch, j.epochs, static_cast<long long>(j.step),
                static_cast<long long>(j.steps), j.steps_per_second, j.loss, j.accuracy, j.restarts,
                static_cast<long long>(j.actors), nodes.empty() ? "" : " on ", nodes.c_str());
    if (!j.message.empty()) std::printf("      %s\n", j.message.c_str());
  }
}

}  // namespace

void print_head_jobs(const std::string& address, const std::string& id, bool json, const GlobalOptions& global) {
  const runtime::Endpoint head = runtime::parse_endpoint(head_address(address), "--address");
  install_credentials(global);
  runtime::ActorSystem system(head_client_options());
  const auto timeout = std::chrono::seconds(10);
  runtime::ClusterStatus status =
      runtime::cluster_status(system, runtime::connect_head(system, head, timeout), head.to_string(), timeout);
  std::vector<runtime::JobStatus> jobs;
  for (auto& j : status.jobs) {
    if (j.submitted && (id.empty() || j.id == id)) jobs.push_back(j);
  }
  if (!id.empty() && jobs.empty()) throw Error("head " + head.to_string() + ": no job '" + id + "' (partita job list lists them)");
  if (json) {
    std::cout << (id.empty() ? runtime::jobs_json(jobs) : runtime::job_json(jobs.front())) << std::endl;
    return;
  }
  if (id.empty()) {
    std::printf("%-24s %-10s %9s %15s %8s %8s  %s\n", "job", "state", "epoch", "step", "loss", "restarts", "nodes");
    for (const auto& j : jobs) {
      std::string nodes;
      for (const auto& n : j.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
      std::printf("%-24s %-10s %9s %15s %8.4f %8d  %s\n", j.id.c_str(), j.state.c_str(),
                  (std::to_string(j.epoch) + "/" + std::to_string(j.epochs)).c_str(),
                  (std::to_string(j.step) + "/" + std::to_string(j.steps)).c_str(), j.loss, j.restarts,
                  nodes.empty() ? "-" : nodes.c_str());
    }
    if (jobs.empty()) std::printf("no jobs on %s\n", head.to_string().c_str());
    return;
  }
  const runtime::JobStatus& j = jobs.front();
  std::string nodes, partitions;
  for (const auto& n : j.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
  for (const auto& p : j.partitions) partitions += (partitions.empty() ? "" : ", ") + p;
  std::printf("job %s: %s\n", j.id.c_str(), j.state.c_str());
  if (!j.message.empty()) std::printf("  %s\n", j.message.c_str());
  std::printf("  epoch %d/%d, step %lld/%lld, %.2f steps/s, loss %.4f, accuracy %.4f, restarts %d\n", j.epoch, j.epochs,
              static_cast<long long>(j.step), static_cast<long long>(j.steps), j.steps_per_second, j.loss, j.accuracy,
              j.restarts);
  std::printf("  %lld actor(s) on %s; partitions on %s\n", static_cast<long long>(j.actors),
              nodes.empty() ? "-" : nodes.c_str(), partitions.empty() ? "-" : partitions.c_str());
  std::printf("  output %s (on the head's machine)\n", j.output.c_str());
}

runtime::ActorSystemOptions head_client_options() {
  runtime::ActorSystemOptions options;
  options.threads = 2;
  options.networking = true;
  return options;
}

void add_status_command(CLI::App& app, const GlobalOptions& global) {
  struct Options : HeadOptions {
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("status", "show a cluster's nodes and jobs (asks its head)");
  add_head_options(cmd, *o);
  cmd->add_flag("--json", o->json, "print the status as JSON");
  cmd->callback([o, &global] {
    const runtime::Endpoint head = runtime::parse_endpoint(head_address(o->address), "--address");
    install_credentials(global);
    runtime::ActorSystem system(head_client_options());
    const auto timeout = std::chrono::seconds(o->timeout_s);
    const runtime::ClusterStatus status =
        runtime::cluster_status(system, runtime::connect_head(system, head, timeout), head.to_string(), timeout);
    if (o->json) {
      std::cout << runtime::status_json(status, head.to_string()) << std::endl;
    } else {
      print_table(status, head.to_string());
    }
  });
}

void stop_job_on_head(const std::string& address, const std::string& id, int timeout_s, const GlobalOptions& global) {
  const runtime::Endpoint head = runtime::parse_endpoint(head_address(address), "--address");
  install_credentials(global);
  runtime::ActorSystem system(head_client_options());
  const auto timeout = std::chrono::seconds(timeout_s);
  const runtime::head_actor handle = runtime::connect_head(system, head, timeout);
  // The timeout bounds the whole command: the cancel, then until its driver has stopped the
  // job's actors and reported the end.
  const auto until = std::chrono::steady_clock::now() + timeout;
  const auto left = [&until] {
    using std::chrono::milliseconds;
    return std::max(milliseconds(100), std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now()));
  };
  runtime::cancel_job(system, handle, head.to_string(), id, timeout);
  for (;;) {
    for (const auto& job : runtime::cluster_status(system, handle, head.to_string(), left()).jobs) {
      if (job.id == id && job.finished()) {
        std::cout << "job " << job.id << " " << job.state << (job.message.empty() ? "" : ": " + job.message) << "\n";
        return;
      }
    }
    if (std::chrono::steady_clock::now() >= until) {
      throw partita::Error("job " + id + " did not stop within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

namespace {

// Removes the pid files in ~/.partita of daemons that `partita start` started and that are
// gone, waiting up to kPidFileWait for those of this machine that are still exiting.
void forget_gone_daemons() {
  constexpr auto kPidFileWait = std::chrono::seconds(5);
  const auto until = std::chrono::steady_clock::now() + kPidFileWait;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(partita_home(), ec)) {
    if (entry.path().extension() != ".pid") continue;
    std::ifstream in(entry.path());
    long pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    const auto runs = [pid] { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; };
    while (runs() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!runs()) std::filesystem::remove(entry.path(), ec);
  }
}

// The whole cluster: its jobs, every live node, then the head. On a terminal without
// `yes`, asks first; elsewhere `yes` is required (a script must say it means it).
void stop_whole_cluster(const HeadOptions& o, bool yes, const GlobalOptions& global) {
  const runtime::Endpoint head = runtime::parse_endpoint(head_address(o.address), "--address");
  const bool terminal = ::isatty(STDIN_FILENO) == 1;
  if (!yes && !terminal) {
    throw UsageError("stopping the whole cluster of " + head.to_string() +
                     " needs --yes when there is no terminal to confirm it on (one job: partita job stop JOB)");
  }
  install_credentials(global);
  runtime::ActorSystem system(head_client_options());
  const auto timeout = std::chrono::seconds(o.timeout_s);
  const runtime::head_actor handle = runtime::connect_head(system, head, timeout);
  if (!yes) {
    const runtime::ClusterStatus status = runtime::cluster_status(system, handle, head.to_string(), timeout);
    size_t nodes = 0, running = 0;
    for (const auto& n : status.nodes) nodes += n.alive ? 1 : 0;
    for (const auto& j : status.jobs) running += j.finished() ? 0 : 1;
    std::cout << "stop the whole cluster of " << head.to_string() << ": " << running << " running job(s), " << nodes
              << " node(s) and the head? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") throw Error("not confirmed; nothing was stopped");
  }
  const int nodes = runtime::stop_cluster(system, handle, head.to_string(), timeout);
  std::cout << "stopped the cluster of " << head.to_string() << ": " << nodes << " node(s) and the head\n";
  forget_head_address(head.to_string());
  forget_gone_daemons();
}

}  // namespace

void add_stop_command(CLI::App& app, const GlobalOptions& global) {
  struct Options : HeadOptions {
    std::string job;
    bool cluster = false;
    bool yes = false;
  };
  auto o = std::make_shared<Options>();
  o->timeout_s = 30;
  CLI::App* cmd = app.add_subcommand("stop", "cancel one job on a cluster (partita job stop); --cluster: stop the cluster");
  cmd->add_option("job", o->job, "a job's id: cancel that job (its output keeps its last checkpoint)");
  cmd->add_flag("--cluster", o->cluster, "stop the whole cluster, as partita down does");
  cmd->add_flag("-y,--yes", o->yes, "with --cluster: do not ask for confirmation (required without a terminal)");
  add_head_options(cmd, *o);
  cmd->callback([o, &global] {
    if (o->cluster && !o->job.empty()) {
      throw UsageError("stop: a job's id or --cluster, not both (" + o->job + " and --cluster)");
    }
    if (o->cluster) return stop_whole_cluster(*o, o->yes, global);
    if (o->yes) throw UsageError("stop: --yes is for --cluster");
    if (o->job.empty()) {
      throw UsageError("stop needs a job's id: partita job stop JOB cancels one job; partita down (or stop --cluster) "
                       "stops the whole cluster");
    }
    stop_job_on_head(o->address, o->job, o->timeout_s, global);
  });
}

void add_down_command(CLI::App& app, const GlobalOptions& global) {
  struct Options : HeadOptions {
    bool yes = false;
  };
  auto o = std::make_shared<Options>();
  o->timeout_s = 30;
  CLI::App* cmd = app.add_subcommand("down", "stop the whole cluster: its jobs, every node, then its head");
  cmd->add_flag("-y,--yes", o->yes, "do not ask for confirmation (required without a terminal)");
  add_head_options(cmd, *o);
  cmd->callback([o, &global] { stop_whole_cluster(*o, o->yes, global); });
}

}  // namespace partita::cli
