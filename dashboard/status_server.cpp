#include "dashboard/status_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "dashboard/assets.h"
#include "runtime/loopback.h"
#include "runtime/transport/tcp_socket.h"

namespace partita::dashboard {

namespace {

// Why binding `where` failed, as a user reads it ("the port is in use"), by trying it again
// with a plain socket. SO_REUSEADDR as the server sets it, so a port in TIME_WAIT is not
// "in use".
std::string bind_failure(const runtime::Endpoint& where) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(where.port);
  if (int rc = getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return std::string("cannot resolve the host: ") + gai_strerror(rc);
  }
  std::string reason = "no address to bind";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    const int rc = bind(fd, a->ai_addr, a->ai_addrlen);
    const int error = errno;
    close(fd);
    if (rc == 0) {
      reason = "it was free when checked again (another process may have taken it and let it go)";
      continue;
    }
    reason = error == EADDRINUSE ? "the port is in use" : std::strerror(error);
    break;
  }
  freeaddrinfo(found);
  return reason;
}

void send_json_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(nlohmann::json{{"error", message}}.dump(), "application/json");
}

std::string unknown_job(const std::string& id) { return "no job '" + id + "' on this status page"; }

// The status page's HTTP over a connection the gate has read the request header of:
// httplib's parser and routes, without httplib's accepting thread and pool.
class GateStream : public httplib::Stream {
 public:
  explicit GateStream(GatedConnection& connection) : c_(connection) {}
  bool is_readable() const override { return c_.wait_readable(); }
  bool is_writable() const override { return c_.wait_writable(); }
  ssize_t read(char* ptr, size_t size) override { return c_.read(ptr, size); }
  ssize_t write(const char* ptr, size_t size) override { return c_.write(ptr, size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.peer_ip();
    port = c_.peer_port();
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = c_.local_ip();
    port = c_.local_port();
  }
  socket_t socket() const override { return c_.fd(); }

 private:
  GatedConnection& c_;
};

// httplib's server as a request handler only: answers the one request of a stream and
// says the connection closes (process_request is protected; the gate does the accepting).
class PageServer : public httplib::Server {
 public:
  void answer(httplib::Stream& stream) {
    bool closed = true;
    process_request(stream, /*close_connection=*/true, closed, {});
  }
};

}  // namespace

// What the gate's workers use: shared with them, so that a worker left running past
// stop()'s deadline still has its routes and board.
struct StatusServer::State {
  PageServer http;  // routes only; the gate owns the sockets and threads
  std::shared_ptr<const StatusBoard> board;
};

namespace {

// The one refusal of an address other machines reach, for the flag and the constructor.
void check_loopback(const runtime::Endpoint& where, const std::string& what) {
  if (runtime::is_loopback_host(where.host)) return;
  throw StatusPageNotLoopback(what + " '" + where.to_string() +
                              "': the status page has no authentication, so it listens on loopback addresses only "
                              "(127.0.0.1, ::1, localhost); from another machine, forward its port: ssh -L " +
                              std::to_string(where.port) + ":127.0.0.1:" + std::to_string(where.port) + " HOST");
}

}  // namespace

runtime::Endpoint parse_dashboard_address(const std::string& text, const std::string& what) {
  if (!text.empty() && text.find(':') == std::string::npos) {
    try {
      return runtime::parse_endpoint("127.0.0.1:" + text, what);
    } catch (const UsageError&) {
      throw UsageError(what + " '" + text + "': expected a port (0..65535) or HOST:PORT");
    }
  }
  runtime::Endpoint where = runtime::parse_endpoint(text, what);
  check_loopback(where, what);
  return where;
}

StatusServer::StatusServer(std::shared_ptr<const StatusBoard> board, const runtime::Endpoint& where, Options options)
    : state_(std::make_shared<State>()), where_(where), stop_deadline_(options.stop_deadline) {
  check_loopback(where, "status page address");
  if (!board) throw UsageError("a status server needs a board");
  state_->board = std::move(board);
  httplib::Server& http = state_->http;
  http.set_payload_max_length(64 * 1024);

  const StatusBoard* b = state_->board.get();  // outlives the handlers: State holds it
  auto page = [](httplib::Response& res) {
    const Asset* index = find_asset("index.html");
    res.set_content(reinterpret_cast<const char*>(index->data), index->size, index->content_type);
  };
  http.Get("/", [page](const httplib::Request&, httplib::Response& res) { page(res); });
  http.Get(R"(/jobs/([^/]+))", [b, page](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (!b->has_job(id)) {
      res.status = 404;
      res.set_content(unknown_job(id) + "\n", "text/plain; charset=utf-8");
      return;
    }
    page(res);
  });
  http.Get(R"(/static/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
    const Asset* asset = find_asset(req.matches[1]);
    if (!asset || std::string(asset->name) == "index.html") {
      res.status = 404;
      res.set_content("no file '" + std::string(req.matches[1]) + "'\n", "text/plain; charset=utf-8");
      return;
    }
    res.set_header("Cache-Control", "max-age=3600");
    res.set_content(reinterpret_cast<const char*>(asset->data), asset->size, asset->content_type);
  });
  http.Get("/api/jobs", [b](const httplib::Request&, httplib::Response& res) {
    res.set_content(b->jobs_json(), "application/json");
  });
  http.Get("/api/nodes", [b](const httplib::Request&, httplib::Response& res) {
    res.set_content(b->nodes_json(), "application/json");
  });
  http.Get(R"(/api/jobs/([^/]+)/metrics)", [b](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (std::optional<std::string> json = b->metrics_json(id)) {
      res.set_content(*json, "application/json");
    } else {
      send_json_error(res, 404, unknown_job(id));
    }
  });
  http.Get("/metrics", [b](const httplib::Request&, httplib::Response& res) {
    res.set_content(b->prometheus_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler's own message
    res.set_content(std::to_string(res.status) + ": no page " + req.path + "\n", "text/plain; charset=utf-8");
  });
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr e) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    spdlog::warn("status page: {} failed: {}", req.path, what);
    res.status = 500;
    res.set_content("500: " + what + "\n", "text/plain; charset=utf-8");
  });

  runtime::ListeningSocket listening;
  try {
    listening = runtime::listen_tcp(where.host, where.port, SOMAXCONN, /*reuse_address=*/true);
  } catch (const Error&) {
    throw Error("cannot serve the status page on " + where.to_string() + ": " + bind_failure(where));
  }
  port_ = listening.endpoint.port;
  gate_ = std::make_unique<RequestGate>(std::move(listening.socket), "status page " + url_host_port(), options.limits,
                                       [state = state_](GatedConnection& connection) {
                                         GateStream stream(connection);
                                         state->http.answer(stream);
                                       });
}

StatusServer::~StatusServer() { stop(stop_deadline_); }

std::string StatusServer::url_host_port() const {
  runtime::Endpoint at = where_;
  at.port = static_cast<uint16_t>(port_);
  return at.to_string();
}

std::string StatusServer::url() const { return "http://" + url_host_port() + "/"; }

bool StatusServer::stop(std::chrono::milliseconds deadline) { return !gate_ || gate_->stop(deadline); }

}  // namespace partita::dashboard
