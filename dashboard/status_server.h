// The status page's HTTP server: serves a StatusBoard to browsers and to monitoring, from
// whatever process drives the jobs (`partita run` / `submit --dashboard`, later the head
// daemon). HTTP by cpp-httplib (Debian's libcpp-httplib-dev).
//
//   GET /                        the page: nodes, jobs, live curves (d3, embedded: assets.h)
//   GET /jobs/ID                 the page with job ID selected; 404 naming ID if unknown
//   GET /static/NAME             the page's script and d3
//   GET /api/jobs                StatusBoard::jobs_json
//   GET /api/jobs/ID/metrics     StatusBoard::metrics_json; 404 {"error": ...} if unknown
//   GET /metrics                 StatusBoard::prometheus_text (text format 0.0.4)
//
// Loopback only: the page has no authentication (a browser has no certificate of the
// cluster, runtime/tls/credentials.h), and it shows what every job is doing, so it listens
// on 127.0.0.0/8, ::1 or localhost and nowhere else (StatusPageNotLoopback otherwise). Seen
// from another machine through a forwarded port: `ssh -L 8265:127.0.0.1:8265 HEAD`.
//
// Threads: one accepts, Options::threads answer requests (each connection serves one
// request and closes, so an idle browser connection never holds a worker). They only read
// the board, under its lock for a copy (status_board.h): polling the page does not touch
// the driver's thread. stop() ends them within its deadline.
//
// Bounds, so that a flood of connections or bytes costs a fixed amount: the threads above
// and nothing more (httplib's own queue of accepted connections is unbounded, so the
// server admits at most threads + Options::max_queued connections at a time; the accepting
// thread waits for a worker beyond that, and further clients wait in the kernel's listen
// backlog); a connection that says nothing is closed after io_timeout; one request per
// connection; a request body over 64 KiB is refused (413), request lines and headers are
// bounded by httplib (8 KiB URI, 100 headers).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

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
    int threads = 4;                           // request workers
    int max_queued = 64;                       // accepted connections waiting for a worker
    // Per read and write, and how long a connection may stay silent: a client that
    // connects and sends nothing holds a worker that long (and delays stop() as much).
    std::chrono::seconds io_timeout{2};
    std::chrono::milliseconds stop_deadline{5000};  // of the destructor's stop()
  };

  // Binds `where` and starts serving `board`. Throws StatusPageNotLoopback unless `where`
  // is a loopback address, Error naming the address when the port is in use ("... the port is in use") or it cannot listen there otherwise (an
  // unknown host, an address not on this machine).
  StatusServer(std::shared_ptr<const StatusBoard> board, const runtime::Endpoint& where, Options options);
  StatusServer(std::shared_ptr<const StatusBoard> board, const runtime::Endpoint& where)
      : StatusServer(std::move(board), where, Options()) {}
  ~StatusServer();  // stop(options.stop_deadline)
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  int port() const { return port_; }  // the bound port (the free one, for port 0)
  std::string url() const;            // "http://HOST:PORT/"

  // Stops accepting, lets requests in progress finish and joins the threads; returns true
  // if they ended within `deadline`. Otherwise logs an error and leaves them to end on
  // their own (they hold what they use), returning false. Idempotent.
  bool stop(std::chrono::milliseconds deadline);

 private:
  struct State;
  std::shared_ptr<State> state_;
  runtime::Endpoint where_;
  int port_ = 0;
  std::chrono::milliseconds stop_deadline_;
};

}  // namespace partita::dashboard
