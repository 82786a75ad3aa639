// partita daemon [--listen HOST:PORT] [--name NAME] [--head [--dashboard PORT] | --join HEAD:PORT]:
// the node daemon (runtime/daemon.h), the head of a cluster (runtime/cluster/head.h) with
// its status page (dashboard/), or a node that joins one (runtime/cluster/node_agent.h).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include "actors/protocol.h"
#include "base/error.h"
#include "base/subprocess.h"
#include "dashboard/cluster_jobs.h"
#include "dashboard/status_board.h"
#include "dashboard/status_server.h"
#include "runtime/daemon.h"
#include "runtime/staging/stager.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "tools/commands.h"
#include "training/job_actor_types.h"

namespace partita::cli {

namespace {

// The first `daemon --head` of a cluster creates its CA and the head's identity where the
// credentials are looked for (--tls-dir, PARTITA_TLS_DIR, ~/.partita/tls), as `partita
// cluster init` would, when that folder holds no CA, CA key or certificate: a cluster
// starts with one command. A folder with any of them is left alone (loading then names what is
// missing or wrong).
void create_cluster_if_new(const GlobalOptions& global, const std::string& head_name) {
  namespace tls = runtime::tls;
  const std::filesystem::path dir = tls::credentials_dir(global.tls_dir);
  for (const char* file : {tls::kCaCertFile, tls::kCaKeyFile, tls::kCertFile}) {
    if (std::filesystem::exists(dir / file)) return;
  }
  std::string name = head_name.empty() ? "head" : head_name;
  try {
    tls::check_identity_name(name);
  } catch (const UsageError&) {
    name = "head";  // a daemon's name may hold what a certificate's may not
  }
  tls::init_cluster(dir, name);
  std::cout << "created the cluster's certificate authority and the head's certificate (" << name << ") in "
            << dir.string() << "; give each node a certificate with `partita cluster cert NAME`" << std::endl;
}

}  // namespace

void add_daemon_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string listen;
    std::string name;
    bool head = false;
    std::string join;
    int heartbeat_ms = 1000;
    int heartbeat_timeout_ms = 5000;
    int join_timeout_s = 10;
    std::string dashboard;
    std::string runs = "partita-runs";
    bool runs_given = false;
    size_t max_jobs = 4;
    std::string cache = "partita-cache";
    int64_t cache_max_mb = 20480;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("daemon", "run the node daemon that hosts actors for distributed jobs, or a cluster's head");
  cmd->add_option("--listen", o->listen,
                  "HOST:PORT to accept connections on; port 0 picks a free port (printed when ready) "
                  "[default: 127.0.0.1:0, with --head " + std::string(kDefaultHeadAddress) + "]");
  cmd->add_option("--name", o->name, "name reported to clients and in logs (default: the host name)");
  cmd->add_flag("--head", o->head, "be the head of a cluster: keep its membership (nodes join with --join)");
  cmd->add_option("--join", o->join, "HEAD:PORT of the head whose cluster this node joins");
  cmd->add_option("--heartbeat-ms", o->heartbeat_ms, "with --head: how often nodes send heartbeats")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--heartbeat-timeout-ms", o->heartbeat_timeout_ms,
                  "with --head: a node silent this long is dead")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--join-timeout", o->join_timeout_s, "with --join: seconds to wait for the head at start-up")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--dashboard", o->dashboard,
                  "with --head: serve the cluster's status page on [HOST:]PORT (loopback unless a host is given; "
                  "0 picks a free port, printed)");
  CLI::Option* max_jobs = cmd->add_option("--max-jobs", o->max_jobs, "with --head: the most submitted jobs that run at once")
      ->check(cli::positive())
      ->capture_default_str();
  CLI::Option* runs = cmd->add_option("--runs", o->runs, "with --head: the folder of the submitted jobs' outputs and logs")
                          ->capture_default_str();
  cmd->add_option("--cache", o->cache,
                  "the folder where this node keeps the data staged to it by jobs submitted to a head")
      ->capture_default_str();
  cmd->add_option("--cache-max-mb", o->cache_max_mb,
                  "the most the staging cache keeps, in MB: least recently used parts go first (0: no bound)")
      ->check(cli::in_range(0, 1e9))
      ->capture_default_str();
  cmd->callback([o, runs, max_jobs, &global] {
    o->runs_given = runs->count() > 0;
    if (!o->dashboard.empty() && !o->head) throw UsageError("--dashboard needs --head: the head serves the cluster's page");
    if (o->runs_given && !o->head) throw UsageError("--runs needs --head: the head keeps the submitted jobs' outputs");
    if (max_jobs->count() > 0 && !o->head) throw UsageError("--max-jobs needs --head: the head runs the submitted jobs");
    runtime::DaemonOptions options;
    options.listen = !o->listen.empty() ? o->listen : o->head ? kDefaultHeadAddress : "127.0.0.1:0";
    options.name = o->name;
    options.head = o->head;
    options.join = o->join;
    options.heartbeat_period = std::chrono::milliseconds(o->heartbeat_ms);
    options.heartbeat_timeout = std::chrono::milliseconds(o->heartbeat_timeout_ms);
    options.join_timeout = std::chrono::seconds(o->join_timeout_s);
    // Every argument is checked before anything is created (a cluster's CA, a status port).
    runtime::check_daemon_options(options);
    if (global.insecure) {
      runtime::tls::check_plaintext_bind(runtime::parse_endpoint(options.listen, "--listen").host, "--listen");
    }
    std::optional<runtime::Endpoint> page;
    if (!o->dashboard.empty()) page = dashboard::parse_dashboard_address(o->dashboard);
    if (o->head && !global.insecure) create_cluster_if_new(global, o->name);
    install_credentials(global);
    std::shared_ptr<dashboard::StatusBoard> board;
    std::unique_ptr<dashboard::StatusServer> server;
    if (page) {
      board = std::make_shared<dashboard::StatusBoard>();
      server = std::make_unique<dashboard::StatusServer>(board, *page);
      std::cout << "status page on " << server->url() << std::endl;
    }
    options.system.threads = global.threads;
    if (o->head) {
      options.runs_dir = o->runs;
      options.max_jobs = o->max_jobs;
      // A job's driver: this program again, a child of the head (runtime/cluster/head.h);
      // --head-pid lets it tell whether the head died before it asked to die with it.
      options.driver_command = [exe = self_executable(), &global](const runtime::DriverLaunch& d) {
        std::vector<std::string> command{exe, "--log-level", global.log_level, "--threads", std::to_string(global.threads)};
        // The head's credentials (or its --insecure): the driver connects to the head and the nodes.
        if (global.insecure) command.push_back("--insecure");
        if (!global.tls_dir.empty()) {
          command.insert(command.end(), {"--tls-dir", std::filesystem::absolute(global.tls_dir).string()});
        }
        command.insert(command.end(), {"job-driver", "--head", d.head, "--head-pid", std::to_string(::getpid()),
                                       "--job", d.id, "--token", d.token, "--output", d.output, d.job_file});
        return command;
      };
    }
    add_protocol_types(options.system);
    if (board) {
      auto jobs = std::make_shared<dashboard::ClusterJobsFeed>(board);
      options.on_cluster_status = [board, jobs](const runtime::ClusterStatus& status) {
        board->set_nodes(dashboard::cluster_nodes(status));
        jobs->update(status);
      };
    }
    runtime::ActorTypeRegistry types = job_actor_types();
    options.cache_dir = o->cache;
    runtime::StageCacheOptions cache;
    cache.dir = o->cache;
    cache.max_bytes = static_cast<uint64_t>(o->cache_max_mb) << 20;
    runtime::add_stager_type(types, cache);
    runtime::run_daemon(options, std::move(types), [](const runtime::Endpoint& bound, const std::string&) {
      // The one line on stdout, for scripts and tests to learn the port; logs go to stderr.
      std::cout << "partita daemon listening on " << bound.to_string() << std::endl;
    });
  });
}

}  // namespace partita::cli
