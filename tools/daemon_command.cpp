// partita daemon [--listen HOST:PORT] [--name NAME] [--head [--dashboard PORT] | --join HEAD:PORT]:
// the node daemon (runtime/daemon.h), the head of a cluster (runtime/cluster/head.h) with
// its status page (dashboard/), or a node that joins one (runtime/cluster/node_agent.h),
// in the foreground.
// partita start --head | --address HEAD [--block] [daemon flags]: the same daemon in the
// background (its log in ~/.partita/logs/, its pid in ~/.partita/), once it listens; a head
// writes its address to ~/.partita/head_address for the commands that follow
// (tools/head_address.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "actors/protocol.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/subprocess.h"
#include "dashboard/cluster_jobs.h"
#include "dashboard/status_board.h"
#include "dashboard/status_server.h"
#include "runtime/daemon.h"
#include "runtime/launcher/launcher.h"
#include "runtime/staging/stager.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "tools/commands.h"
#include "tools/head_address.h"
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

struct DaemonArgs {
  std::string listen;
  std::string name;
  bool head = false;
  std::string join;
  int heartbeat_ms = 1000;
  int heartbeat_timeout_ms = 5000;
  int join_timeout_s = 10;
  std::string dashboard;
  std::string runs = "partita-runs";
  size_t max_jobs = 4;
  bool max_jobs_given = false;
  bool runs_given = false;
  std::string cache = "partita-cache";
  int64_t cache_max_mb = 20480;
};

constexpr const char* kReadyLine = "partita daemon listening on ";

// The flags `daemon` and `start` share (all but the role's: --head, --join / --address).
void add_daemon_flags(CLI::App* cmd, DaemonArgs& o) {
  cmd->add_option("--listen", o.listen,
                  "HOST:PORT to accept connections on; port 0 picks a free port (printed when ready) "
                  "[default: 127.0.0.1:0, with --head " + std::string(kDefaultHeadAddress) + "]");
  cmd->add_option("--name", o.name, "name reported to clients and in logs (default: the host name)");
  cmd->add_option("--heartbeat-ms", o.heartbeat_ms, "with --head: how often nodes send heartbeats")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--heartbeat-timeout-ms", o.heartbeat_timeout_ms,
                  "with --head: a node silent this long is dead")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--join-timeout", o.join_timeout_s, "with --join: seconds to wait for the head at start-up")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--dashboard", o.dashboard,
                  "with --head: serve the cluster's status page on [HOST:]PORT (loopback unless a host is given; "
                  "0 picks a free port, printed)");
  cmd->add_option("--max-jobs", o.max_jobs, "with --head: the most submitted jobs that run at once")
      ->check(cli::positive())
      ->capture_default_str();
  cmd->add_option("--runs", o.runs, "with --head: the folder of the submitted jobs' outputs and logs")
      ->capture_default_str();
  cmd->add_option("--cache", o.cache,
                  "the folder where this node keeps the data staged to it by jobs submitted to a head")
      ->capture_default_str();
  cmd->add_option("--cache-max-mb", o.cache_max_mb,
                  "the most the staging cache keeps, in MB: least recently used parts go first (0: no bound)")
      ->check(cli::in_range(0, 1e9))
      ->capture_default_str();
}

// Runs the daemon `o` describes until it is stopped; `on_ready` (if any) once it listens.
void run_daemon_command(DaemonArgs& o, const GlobalOptions& global,
                        const std::function<void(const runtime::Endpoint&)>& on_ready) {
  if (!o.dashboard.empty() && !o.head) throw UsageError("--dashboard needs --head: the head serves the cluster's page");
  if (o.runs_given && !o.head) throw UsageError("--runs needs --head: the head keeps the submitted jobs' outputs");
  if (o.max_jobs_given && !o.head) throw UsageError("--max-jobs needs --head: the head runs the submitted jobs");
  runtime::DaemonOptions options;
  options.listen = !o.listen.empty() ? o.listen : o.head ? kDefaultHeadAddress : "127.0.0.1:0";
  options.name = o.name;
  options.head = o.head;
  options.join = o.join;
  options.heartbeat_period = std::chrono::milliseconds(o.heartbeat_ms);
  options.heartbeat_timeout = std::chrono::milliseconds(o.heartbeat_timeout_ms);
  options.join_timeout = std::chrono::seconds(o.join_timeout_s);
  // Every argument is checked before anything is created (a cluster's CA, a status port).
  runtime::check_daemon_options(options);
  if (global.insecure) {
    runtime::tls::check_plaintext_bind(runtime::parse_endpoint(options.listen, "--listen").host, "--listen");
  }
  std::optional<runtime::Endpoint> page;
  if (!o.dashboard.empty()) page = dashboard::parse_dashboard_address(o.dashboard);
  if (o.head && !global.insecure) create_cluster_if_new(global, o.name);
  install_credentials(global);
  std::shared_ptr<dashboard::StatusBoard> board;
  std::unique_ptr<dashboard::StatusServer> server;
  if (page) {
    board = std::make_shared<dashboard::StatusBoard>();
    server = std::make_unique<dashboard::StatusServer>(board, *page);
    std::cout << "status page on " << server->url() << std::endl;
  }
  options.system.threads = global.threads;
  if (o.head) {
    options.runs_dir = o.runs;
    options.max_jobs = o.max_jobs;
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
      if (d.resume) command.push_back("--resume");
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
  options.cache_dir = o.cache;
  runtime::StageCacheOptions cache;
  cache.dir = o.cache;
  cache.max_bytes = static_cast<uint64_t>(o.cache_max_mb) << 20;
  runtime::add_stager_type(types, cache);
  // A Python job's processes (runtime/launcher/launcher.h): run from the folders this cache
  // stages, with this daemon's credentials (they are members of the cluster like the node).
  runtime::LauncherOptions launcher;
  launcher.cache_dir = std::filesystem::absolute(o.cache).lexically_normal().string();
  if (!global.insecure) launcher.tls_dir = std::filesystem::absolute(runtime::tls::credentials_dir(global.tls_dir)).string();
  runtime::add_launcher_type(types, launcher);
  runtime::run_daemon(options, std::move(types), [&on_ready](const runtime::Endpoint& bound, const std::string&) {
    // The one line on stdout, for scripts and tests to learn the port; logs go to stderr.
    std::cout << kReadyLine << bound.to_string() << std::endl;
    if (on_ready) on_ready(bound);
  });
}

}  // namespace

namespace {

namespace fs = std::filesystem;

// How long `start` waits for the daemon it started to listen (a node joins its head first:
// --join-timeout, 10 s by default).
constexpr std::chrono::seconds kStartDeadline{60};

// The pid in `file`, if the process still runs; 0 otherwise.
pid_t live_pid(const fs::path& file) {
  std::ifstream in(file);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return 0;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH ? static_cast<pid_t>(pid) : 0;
}

// Starts `argv` in a session of its own, stdin from /dev/null, stdout and stderr appended to
// `log`, no other file descriptor inherited; returns its pid. It is not reaped here unless
// it exits while `start` waits for it.
pid_t spawn_detached(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) throw Error("cannot open " + log.string() + ": " + std::strerror(errno));
  const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(out);
    if (in >= 0) ::close(in);
    throw Error(std::string("cannot start the daemon: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::setsid();
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::close_range(3, ~0U, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out);
  if (in >= 0) ::close(in);
  return pid;
}

// The daemon's flags again, for `partita daemon`: every flag of `start` given on its
// command line, --address as --join, without --block.
std::vector<std::string> daemon_arguments(CLI::App* cmd, const GlobalOptions& global) {
  std::vector<std::string> argv{self_executable(), "--log-level", global.log_level, "--threads",
                                std::to_string(global.threads)};
  if (global.insecure) argv.push_back("--insecure");
  if (!global.tls_dir.empty()) argv.insert(argv.end(), {"--tls-dir", fs::absolute(global.tls_dir).string()});
  argv.push_back("daemon");
  for (const CLI::Option* option : cmd->get_options()) {
    const std::string name = option->get_name();
    if (option->count() == 0 || name == "--block" || name.rfind("--", 0) != 0) continue;
    if (name == "--head") {
      argv.push_back(name);
      continue;
    }
    for (const std::string& value : option->results()) {
      argv.push_back(name == "--address" ? "--join" : name);
      // Folders as this command's working folder sees them: the daemon runs in the same one,
      // but its arguments should not depend on that.
      const bool folder = name == "--runs" || name == "--cache";
      argv.push_back(folder ? fs::absolute(value).string() : value);
    }
  }
  return argv;
}

// The address the head is reached at from this machine (loopback for a wildcard one).
std::string local_address(const runtime::Endpoint& bound) {
  const bool wildcard = bound.host == "0.0.0.0" || bound.host == "::" || bound.host.empty();
  return runtime::Endpoint{wildcard ? "127.0.0.1" : bound.host, bound.port}.to_string();
}

// Waits for the daemon's ready line in `log` past `offset`; returns the address it listens
// on and echoes its other stdout lines (a new cluster's CA, the status page). Throws Error
// with the log's last lines when it exits first or says nothing within kStartDeadline (then
// it is stopped).
std::string wait_until_listening(pid_t pid, const fs::path& log, std::streamoff offset) {
  const auto until = std::chrono::steady_clock::now() + kStartDeadline;
  const auto tail = [&] {
    std::ifstream in(log);
    in.seekg(offset);
    std::string line, last;
    std::vector<std::string> lines;
    while (std::getline(in, line)) lines.push_back(line);
    for (size_t i = lines.size() > 5 ? lines.size() - 5 : 0; i < lines.size(); ++i) last += (last.empty() ? "" : " | ") + lines[i];
    return last;
  };
  for (;;) {
    std::ifstream in(log);
    in.seekg(offset);
    std::string line;
    std::vector<std::string> said;
    while (std::getline(in, line)) {
      if (line.rfind(kReadyLine, 0) == 0) {
        for (const auto& s : said) std::cout << s << "\n";
        return line.substr(std::string(kReadyLine).size());
      }
      if (!line.empty() && line.front() != '[') said.push_back(line);
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      throw Error("the daemon exited at start-up (status " + std::to_string(code) + "): " + tail() + " (log: " +
                  log.string() + ")");
    }
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGTERM);
      throw Error("the daemon did not listen within " + std::to_string(kStartDeadline.count()) + " s; stopped it (log: " +
                  log.string() + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// A node's files are named by its --name, or node-N (the first N without a live pid file).
std::string node_file_name(const std::string& name) {
  std::string safe;
  for (char c : name) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  if (!safe.empty()) return "node-" + safe;
  for (int n = 1;; ++n) {
    const std::string candidate = "node-" + std::to_string(n);
    if (live_pid(partita_home() / (candidate + ".pid")) == 0) return candidate;
  }
}

void start(CLI::App* cmd, DaemonArgs& o, bool block, const GlobalOptions& global) {
  if (o.head == !o.join.empty()) {
    throw UsageError(o.head ? "start: --head or --address HEAD, not both (a head joins no other)"
                            : "start needs --head (start a cluster's head) or --address HEAD (join that head's cluster)");
  }
  const fs::path home = partita_home();
  const std::string file = o.head ? "head" : node_file_name(o.name);
  const fs::path pid_file = home / (file + ".pid");
  if (const pid_t running = live_pid(pid_file); running != 0) {
    throw Error(std::string(o.head ? "a head" : "a node named " + file) + " started by partita start runs already (pid " +
                std::to_string(running) + ", " + pid_file.string() + "); partita down stops the cluster");
  }
  if (!o.join.empty()) runtime::parse_endpoint(o.join, "--address");  // named before anything starts
  fs::create_directories(home / "logs");
  if (block) {
    run_daemon_command(o, global, [&](const runtime::Endpoint& bound) {
      write_file_atomically(pid_file.string(), std::to_string(::getpid()) + "\n");
      if (o.head) remember_head_address(local_address(bound));
    });
    std::error_code ignored;
    fs::remove(pid_file, ignored);
    return;
  }
  const fs::path log = home / "logs" / (file + ".log");
  std::error_code ec;
  const std::streamoff offset = fs::exists(log, ec) ? static_cast<std::streamoff>(fs::file_size(log, ec)) : 0;
  const pid_t pid = spawn_detached(daemon_arguments(cmd, global), log);
  const std::string bound = wait_until_listening(pid, log, offset);
  write_file_atomically(pid_file.string(), std::to_string(pid) + "\n");
  if (o.head) {
    const std::string address = local_address(runtime::parse_endpoint(bound, "the daemon's address"));
    remember_head_address(address);
    std::cout << "started the head of a cluster (pid " << pid << ") on " << bound << "; its log: " << log.string()
              << "\nnodes join it with: partita start --address " << address
              << "\njobs: partita job submit JOB.yaml; the cluster: partita status; stop it all: partita down" << std::endl;
  } else {
    std::cout << "started node " << file << " (pid " << pid << ") on " << bound << ", in the cluster of " << o.join
              << "; its log: " << log.string() << "\nit stops with its cluster (partita down), or alone: kill " << pid
              << std::endl;
  }
}

}  // namespace

void add_start_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<DaemonArgs>();
  auto block = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("start", "start a cluster's head (--head) or a node that joins one (--address HEAD) "
                                              "in the background; logs in ~/.partita/logs/");
  cmd->add_flag("--head", o->head, "start the head of a cluster; later commands find it (~/.partita/head_address)");
  cmd->add_option("--address", o->join, "HEAD:PORT of the head whose cluster this node joins");
  cmd->add_flag("--block", *block, "stay in the foreground (as partita daemon) instead of detaching");
  add_daemon_flags(cmd, *o);
  cmd->callback([o, block, cmd, &global] {
    o->runs_given = cmd->get_option("--runs")->count() > 0;
    o->max_jobs_given = cmd->get_option("--max-jobs")->count() > 0;
    start(cmd, *o, *block, global);
  });
}

void add_daemon_command(CLI::App& app, const GlobalOptions& global) {
  auto o = std::make_shared<DaemonArgs>();
  CLI::App* cmd = app.add_subcommand("daemon", "run the node daemon that hosts actors for distributed jobs, or a cluster's head, in the foreground (partita start detaches)");
  cmd->add_flag("--head", o->head, "be the head of a cluster: keep its membership (nodes join with --join)");
  cmd->add_option("--join", o->join, "HEAD:PORT of the head whose cluster this node joins");
  add_daemon_flags(cmd, *o);
  cmd->callback([o, cmd, &global] {
    o->runs_given = cmd->get_option("--runs")->count() > 0;
    o->max_jobs_given = cmd->get_option("--max-jobs")->count() > 0;
    run_daemon_command(*o, global, nullptr);
  });
}

}  // namespace partita::cli
