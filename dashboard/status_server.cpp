#include "dashboard/status_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "dashboard/assets.h"
#include "runtime/loopback.h"

namespace partita::dashboard {

namespace {

// Why binding `where` failed, by trying it with a plain socket: httplib says only that it
// failed. SO_REUSEADDR as the server sets it, so a port in TIME_WAIT is not "in use".
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

// The admission of accepted connections: at most `limit` queued or being answered. The
// accepting thread waits in admit() beyond that, until a worker finishes one or the server
// stops (after which everything is admitted: httplib's workers drain their queue, and a
// stopped server's connections end at once).
class Admission {
 public:
  explicit Admission(size_t limit) : limit_(limit) {}
  void admit() {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [this] { return in_flight_ < limit_ || stopping_; });
    ++in_flight_;
  }
  void done() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --in_flight_;
    }
    space_.notify_one();
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    space_.notify_all();
  }

 private:
  const size_t limit_;
  std::mutex mutex_;
  std::condition_variable space_;
  size_t in_flight_ = 0;
  bool stopping_ = false;
};

// httplib's thread pool behind the admission (httplib 0.11's task queue has no bound).
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, std::shared_ptr<Admission> admission)
      : pool_(threads), admission_(std::move(admission)) {}
  void enqueue(std::function<void()> fn) override {
    admission_->admit();
    pool_.enqueue([fn = std::move(fn), admission = admission_] {
      fn();  // httplib's connection handler: does not throw (handlers' exceptions are caught)
      admission->done();
    });
  }
  void shutdown() override { pool_.shutdown(); }

 private:
  httplib::ThreadPool pool_;
  std::shared_ptr<Admission> admission_;
};

}  // namespace

struct StatusServer::State {
  httplib::Server http;
  std::shared_ptr<Admission> admission;
  std::shared_ptr<const StatusBoard> board;
  std::thread listener;
  std::future<void> listening;  // ready once the listener returned
  bool stopped = false;
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
  if (options.threads < 1) throw UsageError("a status server needs at least 1 thread");
  state_->board = std::move(board);
  httplib::Server& http = state_->http;
  if (options.max_queued < 0) throw UsageError("a status server's queue cannot be negative");
  const auto threads = static_cast<size_t>(options.threads);
  state_->admission = std::make_shared<Admission>(threads + static_cast<size_t>(options.max_queued));
  http.new_task_queue = [threads, admission = state_->admission] { return new BoundedPool(threads, admission); };
  // httplib's default sets SO_REUSEPORT, which would let two servers share a port and
  // split its requests; a port in use must be an error instead.
  http.set_socket_options([](int fd) {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_keep_alive_max_count(1);
  http.set_keep_alive_timeout(options.io_timeout.count());
  http.set_read_timeout(options.io_timeout);
  http.set_write_timeout(options.io_timeout);
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

  if (where.port == 0) {
    port_ = http.bind_to_any_port(where.host);
    if (port_ <= 0) throw Error("cannot serve the status page on " + where.to_string() + ": " + bind_failure(where));
  } else {
    if (!http.bind_to_port(where.host, where.port)) {
      throw Error("cannot serve the status page on " + where.to_string() + ": " + bind_failure(where));
    }
    port_ = where.port;
  }
  std::promise<void> done;
  state_->listening = done.get_future();
  // The thread owns a reference to the state, so a thread left running past stop()'s
  // deadline still has its server and board.
  state_->listener = std::thread([state = state_, done = std::move(done)]() mutable {
    state->http.listen_after_bind();
    done.set_value();
  });
  // stop() does nothing to a server whose loop has not started yet: wait for the loop.
  const auto started = std::chrono::steady_clock::now();
  while (!state_->http.is_running()) {
    if (state_->listening.wait_for(std::chrono::milliseconds(1)) == std::future_status::ready ||
        std::chrono::steady_clock::now() - started > options.io_timeout) {
      state_->http.stop();
      state_->listener.detach();
      throw Error("the status page's server on " + where.to_string() + " did not start");
    }
  }
}

StatusServer::~StatusServer() { stop(stop_deadline_); }

std::string StatusServer::url() const {
  runtime::Endpoint at = where_;
  at.port = static_cast<uint16_t>(port_);
  return "http://" + at.to_string() + "/";
}

bool StatusServer::stop(std::chrono::milliseconds deadline) {
  if (!state_ || state_->stopped) return true;
  state_->stopped = true;
  state_->admission->stop();  // an accepting thread waiting for a worker goes on, and sees the stop
  state_->http.stop();
  if (state_->listening.wait_for(deadline) != std::future_status::ready) {
    spdlog::error("the status page's threads did not stop within {} ms; leaving them to end", deadline.count());
    state_->listener.detach();
    return false;
  }
  state_->listener.join();
  return true;
}

}  // namespace partita::dashboard
