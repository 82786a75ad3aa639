// partita status [--address HEAD] [--json]: the cluster's nodes and jobs, as the head knows them.
// partita stop [JOB] [--address HEAD]: stops the cluster (its jobs, every live node, then the head), or
// cancels one job submitted to the head.
#include <cstdio>
#include <iostream>
#include <map>
#include <thread>

#include "base/error.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "runtime/cluster/status_json.h"
#include "tools/commands.h"

namespace partita::cli {

namespace {

struct HeadOptions {
  std::string address = kDefaultHeadAddress;
  int timeout_s = 10;
};

void add_head_options(CLI::App* cmd, HeadOptions& o) {
  cmd->add_option("--address", o.address, "HOST:PORT of the head")->capture_default_str();
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
    const runtime::Endpoint head = runtime::parse_endpoint(o->address, "--address");
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

void add_stop_command(CLI::App& app, const GlobalOptions& global) {
  struct Options : HeadOptions {
    std::string job;
  };
  auto o = std::make_shared<Options>();
  o->timeout_s = 30;
  CLI::App* cmd = app.add_subcommand("stop", "stop a cluster (every node, then its head), or one job on it");
  cmd->add_option("job", o->job, "a job's id: cancel that job only (its output keeps its last checkpoint)");
  add_head_options(cmd, *o);
  cmd->callback([o, &global] {
    const runtime::Endpoint head = runtime::parse_endpoint(o->address, "--address");
    install_credentials(global);
    runtime::ActorSystem system(head_client_options());
    const auto timeout = std::chrono::seconds(o->timeout_s);
    const runtime::head_actor handle = runtime::connect_head(system, head, timeout);
    if (o->job.empty()) {
      const int nodes = runtime::stop_cluster(system, handle, head.to_string(), timeout);
      std::cout << "stopped the cluster of " << head.to_string() << ": " << nodes << " node(s) and the head\n";
      return;
    }
    // --timeout bounds the whole command: the cancel, then until its driver has stopped the
    // job's actors and reported the end.
    const auto until = std::chrono::steady_clock::now() + timeout;
    const auto left = [&until] {
      using std::chrono::milliseconds;
      return std::max(milliseconds(100),
                      std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now()));
    };
    runtime::cancel_job(system, handle, head.to_string(), o->job, timeout);
    for (;;) {
      for (const auto& job : runtime::cluster_status(system, handle, head.to_string(), left()).jobs) {
        if (job.id == o->job && job.finished()) {
          std::cout << "job " << job.id << " " << job.state << (job.message.empty() ? "" : ": " + job.message) << "\n";
          return;
        }
      }
      if (std::chrono::steady_clock::now() >= until) {
        throw partita::Error("job " + o->job + " did not stop within " + std::to_string(o->timeout_s) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
}

}  // namespace partita::cli
