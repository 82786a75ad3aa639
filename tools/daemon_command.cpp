// partita daemon [--listen HOST:PORT] [--name NAME] [--head [--dashboard PORT] | --join HEAD:PORT]:
// the node daemon (runtime/daemon.h), the head of a cluster (runtime/cluster/head.h) with
// its status page (dashboard/), or a node that joins one (runtime/cluster/node_agent.h),
// in the foreground.
// partita start --head | --address HEAD [--block] [daemon flags]: the same daemon in the
// background (its log in ~/.partita/logs/, its pid in ~/.partita/), once it listens; a head
// writes its address to ~/.partita/head_address for the commands that follow
// (tools/head_address.h).
// partita start --slurm [--submit JOB.yaml]: under srun, task 0 of the step runs the head
// and a node, every other task a node that joins it (runtime/cluster/slurm_allocation.h).
#include <fcntl.h>
#include <netdb.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
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
#include "runtime/cluster/head_client.h"
#include "runtime/cluster/slurm_allocation.h"
#include "runtime/daemon.h"
#include "runtime/launcher/launcher.h"
#include "runtime/staging/stager.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "tools/commands.h"
#include "tools/head_address.h"
#include "training/job_actor_types.h"
#include "training/job_config.h"

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
    options.on_job_report = [jobs](const runtime::JobStatus& report) { jobs->on_report(report); };
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
                            : "start needs --head (start a cluster's head), --address HEAD (join that head's cluster) or "
                            "--slurm (under srun: the allocation's cluster)");
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

// ---- partita start --slurm ------------------------------------------------------------
//
// Every task of the step runs `partita start --slurm` in the foreground (srun waits for its
// tasks). Task 0 issues the allocation's credentials, runs the head and a node as its
// children, and with --submit submits the job once every task's node has joined, follows it
// and stops the cluster; every other task waits for its credentials and runs a node that
// joins the head, in its own process. The step's end (scancel: SIGTERM, then SIGKILL after
// Slurm's KillWait) stops every daemon: SIGTERM reaches each one from Slurm and from task 0,
// and task 0's children die with it (PR_SET_PDEATHSIG) if it is killed.

struct SlurmArgs {
  bool slurm = false;
  std::string submit;
  int port = 0;         // 0: runtime::slurm_head_port(the job's id)
  int wait_s = 300;     // for the credentials, the head and every node to join
};

// The numeric address `host` resolves to (IPv4 first). Throws Error naming `what` when it
// does not resolve, or resolves to loopback in an allocation of several nodes (a host name
// that /etc/hosts maps to 127.0.1.1, as Debian's installer does: other nodes cannot reach it).
std::string resolve_slurm_host(const std::string& host, const std::string& what, int nodes) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw Error(what + " '" + host + "' does not resolve to an address: " + ::gai_strerror(rc));
  }
  std::string best;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) != 0) continue;
    if (a->ai_family == AF_INET) {
      best = text;
      break;
    }
    if (best.empty()) best = text;
  }
  ::freeaddrinfo(found);
  if (best.empty()) throw Error(what + " '" + host + "' has no numeric address");
  if (nodes > 1 && (best.rfind("127.", 0) == 0 || best == "::1")) {
    throw Error(what + " '" + host + "' resolves to the loopback address " + best +
                ", which the allocation's other nodes cannot reach (fix /etc/hosts or DNS on that node)");
  }
  return best;
}

// Where task 0 publishes the allocation's credentials: $SLURM_SUBMIT_DIR (else the working
// folder), which every node of a Slurm cluster usually shares, in a folder of mode 0700.
fs::path slurm_credentials_dir(const runtime::SlurmAllocation& a) {
  const fs::path base = a.submit_dir.empty() ? fs::current_path() : fs::path(a.submit_dir);
  return base / (".partita-slurm-" + a.job_id);
}

std::string node_folder(const std::string& host) { return "node-" + host; }

// Task 0: a fresh CA in DIR/ca (with the head's identity) and a node certificate for each of
// the allocation's hosts in DIR/node-HOST. DIR/ready comes later, once the head listens
// (run_slurm_head), so that a task that sees it finds them all and a head to join.
void issue_allocation_credentials(const fs::path& dir, const runtime::SlurmAllocation& a) {
  namespace tls = runtime::tls;
  for (const auto& host : a.hosts) tls::check_identity_name(host);
  std::error_code ec;
  fs::remove_all(dir, ec);  // a requeued job's (the same id)
  if (::mkdir(dir.c_str(), 0700) != 0) {
    throw Error("cannot create the allocation's credentials folder " + dir.string() + ": " + std::strerror(errno));
  }
  tls::init_cluster(dir / "ca", "head");
  for (const auto& host : a.hosts) tls::issue_to_folder(dir / "ca", host, tls::MemberRole::node, dir / node_folder(host));
}

// Other tasks: waits (at most `wait`) for DIR/ready, checks that DIR is this user's and
// closed to others, and returns this host's credentials folder.
fs::path wait_for_allocation_credentials(const fs::path& dir, const std::string& host, std::chrono::seconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  std::error_code ec;
  while (!fs::exists(dir / "ready", ec)) {
    if (std::chrono::steady_clock::now() >= until) {
      throw Error("no credentials from the head's task (task 0) in " + dir.string() + " within " +
                  std::to_string(wait.count()) + " s (is SLURM_SUBMIT_DIR on a file system every node shares?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw Error("the credentials folder " + dir.string() + " is not this user's or is open to others; refusing it");
  }
  const fs::path mine = dir / node_folder(host);
  if (!fs::exists(mine / runtime::tls::kCertFile, ec)) {
    throw Error("no credentials for host '" + host + "' in " + dir.string() + " (it is not in the step's host list?)");
  }
  return mine;
}

// The children of task 0 and how the step's end reaches them (async-signal-safe).
std::atomic<pid_t> g_slurm_children[2] = {0, 0};
std::atomic<int> g_slurm_signal{0};

extern "C" void on_slurm_signal(int signo) {
  g_slurm_signal.store(signo);
  for (auto& child : g_slurm_children) {
    const pid_t pid = child.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
}

void install_slurm_signals() {
  struct sigaction action {};
  action.sa_handler = on_slurm_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

// Starts `argv` with this process's stdin, stdout and stderr (Slurm's output of the task),
// no other descriptor, and SIGTERM when this process dies.
pid_t spawn_with_parent(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error(std::string("cannot start ") + argv[0] + ": " + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
    ::close_range(3, ~0U, 0);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Whether `pid` has exited (reaping it; `code` its status or 128 + signal).
bool exited(pid_t pid, int& code) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return false;
  code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

// Waits at most `wait` for task 0's children to exit, then kills what is left.
void reap_slurm_children(std::chrono::seconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  for (auto& child : g_slurm_children) {
    const pid_t pid = child.load();
    if (pid <= 0) continue;
    int code = 0;
    while (!exited(pid, code)) {
      if (std::chrono::steady_clock::now() >= until) {
        spdlog::warn("partita on Slurm: pid {} did not stop within {} s; killing it", pid, wait.count());
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    child.store(0);
  }
}

std::vector<std::string> daemon_base(const GlobalOptions& global, const fs::path& tls_dir) {
  return {self_executable(), "--log-level", global.log_level, "--threads", std::to_string(global.threads),
          "--tls-dir", tls_dir.string(), "daemon"};
}

// The node this task runs: its name, where it listens, its cache and the head it joins.
DaemonArgs slurm_node_args(const DaemonArgs& given, const runtime::SlurmAllocation& a, const std::string& host,
                           const std::string& head, const SlurmArgs& s, bool join_timeout_given) {
  DaemonArgs o = given;
  o.head = false;
  o.join = head;
  o.runs_given = o.max_jobs_given = false;  // the head's, which task 0 runs
  o.dashboard.clear();
  o.name = a.tasks > a.nodes ? host + "-" + std::to_string(a.proc_id) : host;
  o.listen = runtime::Endpoint{resolve_slurm_host(host, "this task's host", a.nodes), 0}.to_string();
  if (!join_timeout_given) o.join_timeout_s = s.wait_s;
  if (o.cache == "partita-cache") {
    // Node-local, one per node name (several tasks of a step can share a machine).
    const char* tmp = std::getenv("TMPDIR");
    o.cache = (fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") / ("partita-cache-" + o.name)).string();
  }
  o.cache = fs::absolute(o.cache).string();
  return o;
}

int run_slurm_head(const DaemonArgs& o, const DaemonArgs& node, const runtime::SlurmAllocation& a,
                   const runtime::Endpoint& head, const fs::path& dir, const SlurmArgs& s, const GlobalOptions& global) {
  std::atomic<bool> finishing{false};
  // The step's end: the daemons stop (the signal forwarded them SIGTERM), the credentials
  // go, and the task exits as a signalled one.
  const auto end_on_signal = [&] {
    spdlog::info("partita on Slurm: signal {}: stopping the head and this node", g_slurm_signal.load());
    reap_slurm_children(std::chrono::seconds(20));
    std::error_code ec;
    fs::remove_all(dir, ec);
    std::cout << std::flush;
    std::_Exit(128 + g_slurm_signal.load());
  };
  // The step's end while the job runs.
  std::thread watcher([&] {
    while (g_slurm_signal.load() == 0) {
      if (finishing.load()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!finishing.exchange(true)) end_on_signal();
  });
  // The end of the job or of the head; also the step's end where the signal came first
  // (the other tasks' nodes stop on it too, which can end the job before the watcher looks).
  const auto finish = [&](int code) {
    if (finishing.exchange(true)) {
      watcher.join();  // the watcher exits the process
      return code;
    }
    watcher.join();
    if (g_slurm_signal.load() != 0) end_on_signal();
    reap_slurm_children(std::chrono::seconds(20));
    std::error_code ec;
    fs::remove_all(dir, ec);
    return code;
  };
  try {
    std::vector<std::string> head_argv = daemon_base(global, dir / "ca");
    head_argv.insert(head_argv.end(), {"--head", "--listen", head.to_string(), "--runs", fs::absolute(o.runs).string(),
                                       "--heartbeat-ms", std::to_string(o.heartbeat_ms), "--heartbeat-timeout-ms",
                                       std::to_string(o.heartbeat_timeout_ms), "--max-jobs", std::to_string(o.max_jobs)});
    if (!o.dashboard.empty()) head_argv.insert(head_argv.end(), {"--dashboard", o.dashboard});
    g_slurm_children[0] = spawn_with_parent(head_argv);

    GlobalOptions as_head = global;
    as_head.tls_dir = (dir / "ca").string();
    install_credentials(as_head);
    runtime::ActorSystem system(head_client_options());
    const auto wait = std::chrono::seconds(s.wait_s);
    // The head listens once its actor system is up: until then its port refuses.
    const runtime::head_actor handle = [&] {
      const auto until = std::chrono::steady_clock::now() + wait;
      for (;;) {
        try {
          return runtime::connect_head(system.get(), head, std::chrono::seconds(5));
        } catch (const Error& e) {
          int code = 0;
          if (exited(g_slurm_children[0].load(), code)) {
            g_slurm_children[0].store(0);
            throw Error("partita on Slurm: the head exited with status " + std::to_string(code) + " at start-up");
          }
          if (std::chrono::steady_clock::now() >= until) throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }();
    write_file_atomically((dir / "ready").string(), "ready\n");

    std::vector<std::string> node_argv = daemon_base(global, dir / node_folder(a.hosts.front()));
    node_argv.insert(node_argv.end(), {"--join", node.join, "--listen", node.listen, "--name", node.name, "--cache",
                                       node.cache, "--cache-max-mb", std::to_string(node.cache_max_mb),
                                       "--join-timeout", std::to_string(node.join_timeout_s)});
    g_slurm_children[1] = spawn_with_parent(node_argv);

    // Every task's node, before a job is placed on fewer.
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      int code = 0;
      for (auto& child : g_slurm_children) {
        if (child.load() > 0 && exited(child.load(), code)) {
          const bool was_head = &child == &g_slurm_children[0];
          child.store(0);
          throw Error(std::string("partita on Slurm: this task's ") + (was_head ? "head" : "node") +
                      " exited with status " + std::to_string(code) + " before the cluster was complete");
        }
      }
      int alive = 0;
      for (const auto& n : runtime::cluster_status(system.get(), handle, head.to_string(), wait).nodes) alive += n.alive;
      if (alive >= a.tasks) break;
      if (std::chrono::steady_clock::now() >= until) {
        throw Error("partita on Slurm: " + std::to_string(alive) + " of the step's " + std::to_string(a.tasks) +
                    " node(s) joined the head at " + head.to_string() + " within " + std::to_string(s.wait_s) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::cout << "partita on Slurm: job " << a.job_id << ", head at " << head.to_string() << ", " << a.tasks
              << " node(s) joined; credentials for other commands: --tls-dir " << (dir / "ca").string() << std::endl;
    if (s.submit.empty()) {
      // Until the step ends (the signal's watcher exits) or the head stops (partita down).
      for (;;) {
        int code = 0;
        const pid_t pid = g_slurm_children[0].load();
        if (pid > 0 && exited(pid, code)) {
          g_slurm_children[0].store(0);
          spdlog::info("partita on Slurm: the head exited with status {}", code);
          return finish(code);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    int status = 0;
    try {
      submit_to_head(head.to_string(), s.submit, "", false, false, as_head);
    } catch (const Error& e) {
      if (g_slurm_signal.load() != 0) return finish(1);  // the step's end, not the job's
      spdlog::error("{}", e.what());
      status = 1;
    }
    runtime::stop_cluster(system.get(), handle, head.to_string(), std::chrono::seconds(60));
    return finish(status);
  } catch (...) {
    for (auto& child : g_slurm_children) {
      if (child.load() > 0) ::kill(child.load(), SIGTERM);
    }
    finish(1);
    throw;
  }
}

void start_on_slurm(CLI::App* cmd, DaemonArgs& o, const SlurmArgs& s, const GlobalOptions& global) {
  for (const char* flag : {"--head", "--address", "--listen", "--name", "--block"}) {
    if (cmd->get_option(flag)->count() > 0) {
      throw UsageError(std::string("start --slurm: ") + flag +
                       " comes from the allocation (task 0 is the head; every task a node that joins it)");
    }
  }
  if (global.insecure) throw UsageError("start --slurm: the allocation's nodes talk over the network: not --insecure");
  if (!global.tls_dir.empty()) {
    throw UsageError("start --slurm issues the allocation's own credentials: not --tls-dir");
  }
  const runtime::SlurmAllocation a = runtime::parse_slurm_allocation(runtime::slurm_environment());
  if (a.head() && !s.submit.empty()) load_job(s.submit);  // a bad file fails before anything starts
  std::string host = a.this_node;
  if (host.empty()) {
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    host = std::string(name).substr(0, std::string(name).find('.'));
  }
  if (std::find(a.hosts.begin(), a.hosts.end(), host) == a.hosts.end()) {
    throw Error("partita on Slurm: this task's host '" + host + "' is not in the step's host list");
  }
  if (a.head() && host != a.head_host()) {
    throw Error("partita on Slurm: task 0 runs on '" + host + "', not on the step's first host '" + a.head_host() +
                "' where the other tasks look for the head (use srun's default block distribution)");
  }
  const uint16_t port = s.port > 0 ? static_cast<uint16_t>(s.port) : runtime::slurm_head_port(a.job_id);
  const runtime::Endpoint head{resolve_slurm_host(a.head_host(), "the head's host", a.nodes), port};
  const fs::path dir = slurm_credentials_dir(a);
  const bool join_timeout_given = cmd->get_option("--join-timeout")->count() > 0;
  DaemonArgs node = slurm_node_args(o, a, host, head.to_string(), s, join_timeout_given);
  spdlog::info("partita on Slurm: job {}, task {} of {} on {}; the head at {}", a.job_id, a.proc_id, a.tasks, host,
               head.to_string());
  if (a.head()) {
    install_slurm_signals();
    issue_allocation_credentials(dir, a);
    const int code = run_slurm_head(o, node, a, head, dir, s, global);
    if (code != 0) throw Error("partita on Slurm: " + std::string(s.submit.empty() ? "the head" : "the job") +
                               " ended with status " + std::to_string(code));
    return;
  }
  GlobalOptions as_node = global;
  as_node.tls_dir = wait_for_allocation_credentials(dir, host, std::chrono::seconds(s.wait_s)).string();
  run_daemon_command(node, as_node, nullptr);
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
  auto slurm = std::make_shared<SlurmArgs>();
  cmd->add_flag("--slurm", slurm->slurm,
                "run as a task of a Slurm job step (srun partita start --slurm): task 0 is the head and a node, "
                "every other task a node that joins it (docs/cluster.md#on-slurm)");
  cmd->add_option("--submit", slurm->submit,
                  "with --slurm: submit JOB.yaml once every task's node joined, follow it, stop the cluster and "
                  "exit with the job's status");
  cmd->add_option("--slurm-port", slurm->port,
                  "with --slurm: the head's port [default: " + std::to_string(runtime::kSlurmPortBase) +
                      " + SLURM_JOB_ID mod " + std::to_string(runtime::kSlurmPortSpan) + "]")
      ->check(cli::in_range(1, 65535));
  cmd->add_option("--slurm-wait", slurm->wait_s,
                  "with --slurm: seconds to wait for the credentials, the head and every task's node")
      ->check(cli::positive())
      ->capture_default_str();
  add_daemon_flags(cmd, *o);
  cmd->callback([o, block, cmd, slurm, &global] {
    o->runs_given = cmd->get_option("--runs")->count() > 0;
    o->max_jobs_given = cmd->get_option("--max-jobs")->count() > 0;
    if (!slurm->slurm) {
      for (const char* flag : {"--submit", "--slurm-port", "--slurm-wait"}) {
        if (cmd->get_option(flag)->count() > 0) throw UsageError(std::string(flag) + " needs --slurm");
      }
      return start(cmd, *o, *block, global);
    }
    start_on_slurm(cmd, *o, *slurm, global);
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
