#include "runtime/daemon.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "runtime/cluster/head.h"
#include "runtime/cluster/head_client.h"
#include "runtime/cluster/node_agent.h"
#include "runtime/errors.h"
#include "runtime/tls/caf_gateway.h"

namespace partita::runtime {

namespace {

// SIGTERM and SIGINT handed to a thread of ours: the async handler only writes the signal
// number to a pipe (sending a CAF message is not async-signal-safe), and the watcher thread
// acts on it. A handler rather than a blocked mask with signalfd, because libraries start
// threads before main (OpenBLAS starts its pool when libtorch loads) and any thread whose
// mask lets a signal through would take the default action: death.
int g_signal_pipe = -1;

extern "C" void forward_signal(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe, &byte, 1);
  errno = saved;
}

class SignalWatcher {
 public:
  SignalWatcher() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(std::string("cannot watch SIGTERM/SIGINT: ") + std::strerror(errno));
    read_fd_ = fds[0];
    write_fd_ = fds[1];
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (wake_fd_ < 0) {
      const std::string why = std::strerror(errno);
      close_fds();
      throw Error("cannot watch SIGTERM/SIGINT: " + why);
    }
    g_signal_pipe = write_fd_;
    struct sigaction action {};
    action.sa_handler = forward_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
    thread_ = std::thread([this] { loop(); });
  }

  ~SignalWatcher() {
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
      spdlog::error("cannot wake the signal watcher: {}", std::strerror(errno));
    }
    thread_.join();
    // From here on a signal takes its previous action again (a second Ctrl-C ends a
    // shutdown that hangs); one that came meanwhile is only logged.
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
    drain();
    g_signal_pipe = -1;
    close_fds();
  }

  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  // Called (on the watcher thread) for each signal; a signal that came before a handler
  // was set is passed to the handler as soon as it is set. An empty handler only logs.
  void on_signal(std::function<void(int)> handler) {
    std::lock_guard<std::mutex> lock(mutex_);
    handler_ = std::move(handler);
    if (!handler_) {
      stopping_ = true;
    } else if (pending_ != 0) {
      handler_(pending_);
      pending_ = 0;
    }
  }

 private:
  void loop() {
    pollfd fds[2] = {{read_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    for (;;) {
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        spdlog::error("signal watcher: poll failed: {}", std::strerror(errno));
        return;
      }
      if (fds[1].revents != 0) return;
      if (fds[0].revents != 0) drain();
    }
  }

  void drain() {
    unsigned char byte = 0;
    while (::read(read_fd_, &byte, 1) == 1) {
      const int signo = byte;
      std::lock_guard<std::mutex> lock(mutex_);
      if (handler_) {
        handler_(signo);
      } else if (!stopping_) {
        pending_ = signo;
      } else {
        spdlog::info("received {} while shutting down", strsignal(signo));
      }
    }
  }

  void close_fds() {
    for (int fd : {read_fd_, write_fd_, wake_fd_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
  int read_fd_ = -1;
  int write_fd_ = -1;
  int wake_fd_ = -1;
  std::mutex mutex_;
  std::function<void(int)> handler_;
  int pending_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

// Ends the process if shutdown outlives its deadline (see DaemonOptions). Armed by the
// first sign of shutdown (a signal, the host's end, an exception unwinding), so a host stuck
// in a handler cannot keep the daemon alive past the deadline either.
class ShutdownWatchdog {
 public:
  explicit ShutdownWatchdog(std::chrono::milliseconds deadline)
      : deadline_(deadline), thread_([this] { watch(); }) {}
  ~ShutdownWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  ShutdownWatchdog(const ShutdownWatchdog&) = delete;
  ShutdownWatchdog& operator=(const ShutdownWatchdog&) = delete;

  // What the process abandons should the deadline pass ("3 actors still running"), asked
  // on the watchdog's thread; empty: nothing to say. Thread-safe; reset it before what it
  // reads goes.
  void describe_abandoned(std::function<std::string()> describe) {
    std::lock_guard<std::mutex> lock(mutex_);
    describe_ = std::move(describe);
  }

  // Starts the countdown; later calls keep the first start. Thread-safe.
  void arm() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (armed_) return;
    armed_ = true;
    expires_ = std::chrono::steady_clock::now() + deadline_;
    cv_.notify_one();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return armed_ || done_; });
    if (cv_.wait_until(lock, expires_, [this] { return done_; })) return;
    const std::string abandoned = describe_ ? describe_() : "";
    spdlog::error("shutdown did not finish within {} ms; exiting{}", deadline_.count(),
                  abandoned.empty() ? "" : ", abandoning " + abandoned);
    spdlog::default_logger()->flush();
    std::_Exit(1);
  }

  const std::chrono::milliseconds deadline_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool armed_ = false;
  bool done_ = false;
  std::function<std::string()> describe_;
  std::chrono::steady_clock::time_point expires_;
  std::thread thread_;  // last: it starts watching once everything above exists
};

std::string machine_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "partita";
  return buf;
}

}  // namespace

void check_daemon_options(const DaemonOptions& options) {
  parse_endpoint(options.listen, "--listen");
  if (options.head && !options.join.empty()) {
    throw UsageError("--head and --join exclude each other (a head keeps its own cluster; nodes join it)");
  }
  if (!options.join.empty()) {
    const Endpoint head = parse_endpoint(options.join, "--join");
    if (head.port == 0) throw UsageError("--join '" + options.join + "': port 0 cannot be connected to");
    // A member tells the head its --listen address as the one others reach it at.
    const Endpoint listen = parse_endpoint(options.listen, "--listen");
    if (listen.host == "0.0.0.0" || listen.host == "::" || listen.host.empty()) {
      throw UsageError("--listen '" + options.listen + "' with --join: a node tells the cluster the address others "
                       "reach it at; give this machine's address, not a wildcard");
    }
  }
  if (options.head) check_heartbeat_settings(options.heartbeat_period, options.heartbeat_timeout);
}

void run_daemon(const DaemonOptions& options, ActorTypeRegistry registry,
                const std::function<void(const Endpoint& bound, const std::string& name)>& on_ready) {
  check_daemon_options(options);
  Endpoint endpoint = parse_endpoint(options.listen, "--listen");
  const std::string name = options.name.empty() ? machine_name() : options.name;
  const char* role = options.head ? "head" : options.join.empty() ? "daemon" : "node";
  tls::require_node_role(std::string("partita daemon: a ") + role + " serves the cluster's ports");
  ActorSystemOptions system_options = options.system;
  system_options.networking = true;

  SignalWatcher signals;
  // Outlives the actor system, so its destructor (which waits for every actor) is covered.
  ShutdownWatchdog watchdog(options.shutdown_deadline);
  std::string failure;
  {
    // Declared before the system, so that it is reset once the system's destructor is done.
    struct ForgetAbandoned {
      ShutdownWatchdog& watchdog;
      ~ForgetAbandoned() { watchdog.describe_abandoned(nullptr); }
    } forget_abandoned{watchdog};
    ActorSystem system(system_options);
    // The one published actor: a head, or the host of a node (the agent of a joined node
    // lives beside it, unpublished).
    caf::actor main;
    head_actor head;  // with options.head
    std::function<void()> stop;
    std::function<caf::expected<uint16_t>()> publish;  // `main` on the endpoint, as its typed handle
    if (options.head) {
      HeadOptions head_options;
      head_options.heartbeat_period = options.heartbeat_period;
      head_options.heartbeat_timeout = options.heartbeat_timeout;
      head_options.runs_dir = options.runs_dir;
      head_options.driver_command = options.driver_command;
      head_options.max_running_jobs = options.max_jobs;
      head_options.on_job_report = options.on_job_report;
      head = spawn_head(system, head_options);
      main = caf::actor_cast<caf::actor>(head);
      stop = [main] { caf::anon_send_exit(main, caf::exit_reason::user_shutdown); };
      // The one port users reach: they submit, query and stop jobs there (runtime/tls/roles.h).
      publish = [&system, head, &endpoint] {
        return tls::publish(system.get(), head, endpoint, true, tls::Session::Admits::nodes_and_users);
      };
    } else {
      host_actor host = spawn_host(system, HostInfo{name, partita_version()}, std::move(registry));
      main = caf::actor_cast<caf::actor>(host);
      stop = [host] { caf::anon_send(host, shutdown_atom::value); };
      publish = [&system, host, &endpoint] { return tls::publish(system.get(), host, endpoint, true); };
    }
    // From here on the main actor exists and the system's destructor waits for it: every
    // way out (a refused port, a failed join, an exception) stops it first, and a signal
    // stops it at any point of the start-up, with the watchdog bounding what follows.
    struct StopOnUnwind {
      SignalWatcher& signals;
      ShutdownWatchdog& watchdog;
      caf::actor main;
      ~StopOnUnwind() {
        signals.on_signal(nullptr);
        watchdog.arm();
        caf::anon_send_exit(main, caf::exit_reason::user_shutdown);
      }
    } stop_on_unwind{signals, watchdog, main};
    // The registry itself, not through `system`: the wrapper lets go of the CAF system
    // before the CAF system's destructor (where a stuck shutdown waits) begins.
    watchdog.describe_abandoned([registry = &system.get().registry()] {
      const size_t running = registry->running();
      return running == 0 ? std::string() : std::to_string(running) + " actors still running";
    });
    signals.on_signal([stop, name, role, &watchdog](int signo) {
      spdlog::info("{} {}: received {}; shutting down", role, name, strsignal(signo));
      watchdog.arm();
      stop();
    });
    // reuse=true sets SO_REUSEADDR only: a restarted daemon can bind its port while old
    // connections linger in TIME_WAIT, but a port another process listens on stays refused.
    const caf::expected<uint16_t> port = publish();
    if (!port) {
      // The gateway's reason may name the address already ("cannot listen on X: ..."): said once.
      const std::string why = describe(system, port.error());
      const std::string prefix = "cannot listen on ";
      throw Error(why.find(prefix) != std::string::npos ? why.substr(why.find(prefix))
                                                        : prefix + endpoint.to_string() + ": " + why);
    }
    endpoint.port = *port;
    if (options.head) {
      // Drivers run on this machine and reach the head at its bound address (loopback for
      // a wildcard one), known only now; the head refuses submissions until it is told.
      const bool wildcard = endpoint.host == "0.0.0.0" || endpoint.host == "::" || endpoint.host.empty();
      tell_head_its_address(system, head, Endpoint{wildcard ? "127.0.0.1" : endpoint.host, endpoint.port}.to_string(),
                            std::chrono::seconds(10));
    }
    if (!options.join.empty()) {
      const Endpoint head_address = parse_endpoint(options.join, "--join");
      head_actor joined;
      try {
        joined = connect_head(system, head_address, options.join_timeout);
      } catch (const Error& e) {
        throw Error("cannot join the cluster: " + std::string(e.what()));
      }
      NodeAgentOptions agent;
      agent.head = head_address;
      agent.info = this_node(name, endpoint.to_string());
      agent.data_dir = options.data_dir;
      agent.cache_dir = options.cache_dir;
      spawn_node_agent(system, caf::actor_cast<host_actor>(main), std::move(agent), std::move(joined));
    }
    {
      caf::scoped_actor self{system};
      self->monitor(main);
      spdlog::info("{} {} (partita {}) listening on {}", role, name, partita_version(), endpoint.to_string());
      on_ready(endpoint, name);
      // No deadline here: this is the daemon's life. It ends with the main actor, on
      // `shutdown` from a client, the signal handler above, or a cluster stop. A head with
      // a status listener wakes up once per heartbeat period to feed it.
      bool alive = true;
      const bool report = options.head && options.on_cluster_status;
      while (alive) {
        self->receive(
            [&](caf::down_msg& msg) {
              alive = false;
              if (msg.reason && msg.reason != caf::exit_reason::user_shutdown) {
                failure = describe(system, msg.reason);
              }
            },
            caf::after(report ? caf::duration(options.heartbeat_period) : caf::duration(caf::infinite)) >> [&] {
              self->request(head, options.heartbeat_period, status_atom::value)
                  .receive([&](ClusterStatus& status) { options.on_cluster_status(status); },
                           [&](caf::error&) {});  // skipped; a stopping head ends the loop above
            });
      }
      watchdog.arm();
    }
    // Leaving the scope closes the port and the connections and waits for every actor.
  }
  if (!failure.empty()) throw Error(std::string(role) + " " + name + ": its " + (options.head ? "head" : "host") + " actor failed: " + failure);
  spdlog::info("{} {} stopped", role, name);
}

}  // namespace partita::runtime
