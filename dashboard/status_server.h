// The status page's HTTP server: serves a StatusBoard to browsers and to monitoring, from
// whatever process drives the jobs (`partita run` / `submit --dashboard`, later the head
// daemon). HTTP by cpp-httplib (Debian's libcpp-httplib-dev).
//
//   GET /                        the page: nodes, jobs, live curves (d3, embedded: assets.h)
//   GET /jobs/ID                 the page with job ID selected; 404 naming ID if unknown
//   GET /static/NAME             the page's script and d3
//   GET /api/jobs                StatusBoard::jobs_json
//   GET /api/jobs/ID/metrics     StatusBoard::metrics_json; 404 {"error": ...} if unknown
//   GET /api/nodes               StatusBoard::nodes_json: the nodes' resources over time
//   GET /metrics                 StatusBoard::prometheus_text (text format 0.0.4)
//
// Loopback only: the page has no authentication (a browser has no certificate of the
// cluster, runtime/tls/credentials.h), and it shows what every job is doing, so it listens
// on 127.0.0.0/8, ::1 or localhost and nowhere else (StatusPageNotLoopback otherwise). Seen
// from another machine through a forwarded port: `ssh -L 8265:127.0.0.1:8265 HEAD`.
//
// Connections go through a RequestGate (dashboard/request_gate.h): one thread accepts and
// holds each connection until its request header is complete, and only then does one of
// Options::limits.workers answer it (one request per connection, which then closes), so
// connections that say nothing, or say it a byte a second, never hold a worker. The workers
// only read the board, under its lock for a copy (status_board.h): polling the page does
// not touch the driver's thread. stop() ends every thread within its deadline.
//
// Bounds, so that a flood of connections or bytes costs a fixed amount (request_gate.h):
// 256 connections held at once, 64 from one client address (a new one beyond either closes
// the oldest still without a request); a request header complete within 5 s and 32 KiB
// (431 beyond); 64 requests waiting for the 4 workers (503 beyond, at once); 10 s to read a
// body and write the answer; a request body over 64 KiB is refused (413); request lines and
// headers as httplib bounds them (8 KiB URI, 100 headers). Refusals are logged at a bounded
// rate (base/refusal_log.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dashboard/request_gate.h"
#include "dashboard/status_board.h"
#include "runtime/address.h"

namespace partita::dashboard {

// A status page asked for on an address other machines can reach.
class StatusPageNotLoopback : public UsageError {
 public:
  using UsageError::UsageError;
};

// "PORT" (on 127.0.0.1) or "HOST:PORT" as --dashboard takes it, HOST a loopback address.
// Throws StatusPageNotLoopback naming `what` for another host, UsageError naming `what`
// for anything else (a port outside 0..65535; 0 picks a free one).
runtime::Endpoint parse_dashboard_address(const std::string& text, const std::string& what = "--dashboard");

class StatusServer {
 public:
  struct Options {
    RequestGate::Limits limits;                     // threads, bounds and deadlines
    std::chrono::milliseconds stop_deadline{5000};  // of the destructor's stop()
  };

  // Binds `where` and starts serving `board`. Throws StatusPageNotLoopback unless `where`
  // is a loopback address, UsageError naming a limit out of range, Error naming the
  // address when the port is in use ("... the port is in use") or it cannot listen there
  // otherwise (an unknown host, an address not on this machine).
  StatusServer(std::shared_ptr<const StatusBoard> board, const runtime::Endpoint& where, Options options);
  StatusServer(std::shared_ptr<const StatusBoard> board, const runtime::Endpoint& where)
      : StatusServer(std::move(board), where, Options()) {}
  ~StatusServer();  // stop(options.stop_deadline)
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  int port() const { return port_; }  // the bound port (the free one, for port 0)
  std::string url() const;            // "http://HOST:PORT/"

  // Stops accepting, closes the connections not being answered, cuts the waits of those
  // being answered and joins the threads; returns true if they ended within `deadline`.
  // Otherwise logs an error and leaves them to end on their own (they hold what they use),
  // returning false. Idempotent.
  bool stop(std::chrono::milliseconds deadline);

 private:
  std::string url_host_port() const;  // "HOST:PORT"

  struct State;
  std::shared_ptr<State> state_;
  std::unique_ptr<RequestGate> gate_;  // after state_: destroyed first
  runtime::Endpoint where_;
  int port_ = 0;
  std::chrono::milliseconds stop_deadline_;
};

}  // namespace partita::dashboard
