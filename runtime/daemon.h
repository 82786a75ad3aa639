// The node daemon: an actor system with networking that publishes one host actor (see
// host.h) and runs until SIGTERM/SIGINT or a `shutdown` message.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/cluster_protocol.h"
#include "runtime/cluster/head.h"
#include "runtime/host.h"

namespace partita::runtime {

struct DaemonOptions {
  // HOST:PORT to listen on; port 0: any free port. Loopback unless told otherwise. With the
  // process's TLS credentials any address may be given (peers need a certificate of the
  // cluster); in insecure mode only loopback (PlaintextNotLoopback otherwise).
  // A node that joins a cluster tells the head this address: others must reach it there.
  std::string listen = "127.0.0.1:0";
  std::string name;  // empty: the machine's host name
  // The head of a cluster (runtime/cluster/head.h): publishes the head actor instead of a
  // host, and keeps the membership, with these heartbeat settings (the nodes get them when
  // they join).
  bool head = false;
  std::chrono::milliseconds heartbeat_period{1000};
  std::chrono::milliseconds heartbeat_timeout{5000};
  // HOST:PORT of a head to join (runtime/cluster/node_agent.h); empty: a lone daemon. The
  // first join must get an answer within join_timeout; later the node retries for ever.
  std::string join;
  std::chrono::milliseconds join_timeout{10000};
  std::string data_dir = ".";  // whose free space a joined node reports
  // The staging cache (runtime/staging/stage_cache.h) whose parts a joined node reports, so
  // that placement prefers the node that has a job's part already; "": none.
  std::string cache_dir;
  // With `head`: the jobs submitted to it (head.h): their output folders go under runs_dir,
  // driver_command gives the command of a job's driver (empty: no jobs), and at most
  // max_jobs run at once.
  std::string runs_dir = "partita-runs";
  std::function<std::vector<std::string>(const DriverLaunch&)> driver_command;
  size_t max_jobs = 4;
  // With `head`: called with the cluster's status once per heartbeat period, on the
  // daemon's main thread, from start-up to shutdown (what a status page shows; see
  // `partita daemon --head --dashboard`). A status the head does not give within the
  // period is skipped. It must not block for long: shutdown waits for it to return.
  std::function<void(const ClusterStatus&)> on_cluster_status;
  // With `head`: HeadOptions::on_job_report (every accepted report of a job's driver, with
  // its steps), called on the head's actor thread.
  std::function<void(const JobStatus&)> on_job_report;
  ActorSystemOptions system;
  // From the shutdown request to the end of run_daemon. Past it the process exits with
  // status 1 (std::_Exit): an actor that ignores its exit message must not keep a daemon
  // that was told to stop alive.
  std::chrono::milliseconds shutdown_deadline{10000};
};

// Throws UsageError naming the option for a malformed --listen or --join, --head together
// with --join, or heartbeat settings check_heartbeat_settings refuses.
void check_daemon_options(const DaemonOptions& options);

// Runs the daemon and returns after a clean shutdown. `on_ready` is called once the host
// actor is reachable, with the bound address (the real port when asked for port 0).
// SIGTERM and SIGINT start a clean shutdown, whichever thread receives them: their handlers
// are replaced while the daemon runs and restored on return.
// A head stops when told to stop the cluster (`partita stop`), a node also when its head
// tells it to.
// Throws UsageError as check_daemon_options, Error when it cannot listen there (host does
// not resolve, port in use), cannot join the head, or when the host actor fails.
void run_daemon(const DaemonOptions& options, ActorTypeRegistry registry,
                const std::function<void(const Endpoint& bound, const std::string& name)>& on_ready);

}  // namespace partita::runtime
