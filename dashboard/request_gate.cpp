#include "dashboard/request_gate.h"

#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/refusal_log.h"
#include "runtime/transport/tcp_socket.h"

namespace partita::dashboard {

namespace {

using Clock = std::chrono::steady_clock;

// The numeric address and port of one end of `fd`: the peer's, or (local) this side's.
// Empty and 0 if the system does not say.
void address_of(int fd, bool local, std::string& ip, int& port) {
  sockaddr_storage at{};
  socklen_t len = sizeof(at);
  char host[NI_MAXHOST], service[NI_MAXSERV];
  const int rc = local ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &len)
                       : ::getpeername(fd, reinterpret_cast<sockaddr*>(&at), &len);
  if (rc != 0 || ::getnameinfo(reinterpret_cast<sockaddr*>(&at), len, host, sizeof(host), service, sizeof(service),
                               NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    ip.clear();
    port = 0;
    return;
  }
  ip = host;
  port = std::atoi(service);
}

// "127.0.0.1:41234", "[::1]:41234": for log lines.
std::string spelled(const std::string& ip, int port) {
  if (ip.empty()) return "an unknown address";
  return (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

// A connection accepted and still without its complete request header: the accepting
// thread's.
struct Pending {
  ScopedFd fd;
  std::string client;  // the peer's address without its port: the key of the bound per client
  std::string peer;    // with the port, for log lines
  std::string head;    // the bytes read so far
  Clock::time_point deadline;
};

// A connection with its request header, waiting for a worker.
struct Job {
  ScopedFd fd;
  std::string client;
  std::string head;
  runtime::Deadline deadline;
};

// Answers `status` with `text` (one short response that a fresh socket's send buffer
// takes whole), then reads what else the client sent so far: closing a socket with unread
// bytes resets the connection, and the client might lose the answer.
void answer_at_once(int fd, int status, const char* reason, const std::string& text) {
  std::string response = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                         std::to_string(text.size()) + "\r\nConnection: close\r\n" +
                         (status == 503 ? "Retry-After: 1\r\n" : "") + "\r\n" + text;
  [[maybe_unused]] const ssize_t sent = ::send(fd, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  char drain[4096];
  for (int i = 0; i < 16 && ::recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0; ++i) {
  }
}

}  // namespace

GatedConnection::GatedConnection(ScopedFd fd, std::string head, runtime::Deadline deadline,
                                 const runtime::Wakeup* stop)
    : fd_(std::move(fd)), head_(std::move(head)), deadline_(deadline), stop_(stop) {
  address_of(fd_.get(), false, peer_ip_, peer_port_);
  address_of(fd_.get(), true, local_ip_, local_port_);
}

bool GatedConnection::wait(short events) const {
  try {
    runtime::wait_ready(fd_.get(), events, deadline_, stop_, "answering a request");
    return true;
  } catch (const Error&) {  // the deadline, stop(), or poll failing
    return false;
  }
}

bool GatedConnection::wait_readable() const { return head_read_ < head_.size() || wait(POLLIN); }

bool GatedConnection::wait_writable() const { return wait(POLLOUT); }

long GatedConnection::read(char* data, size_t size) {
  if (head_read_ < head_.size()) {
    const size_t n = std::min(size, head_.size() - head_read_);
    std::copy_n(head_.data() + head_read_, n, data);
    head_read_ += n;
    return static_cast<long>(n);
  }
  // Checked before each read too: a client that trickles a body just fast enough that a
  // read never waits still ends at the deadline.
  if (Clock::now() >= deadline_ || stop_->notified()) return -1;
  for (;;) {
    const ssize_t n = ::recv(fd_.get(), data, size, 0);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait(POLLIN)) return -1;
  }
}

long GatedConnection::write(const char* data, size_t size) {
  if (Clock::now() >= deadline_ || stop_->notified()) return -1;
  for (;;) {
    const ssize_t n = ::send(fd_.get(), data, size, MSG_NOSIGNAL);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait(POLLOUT)) return -1;
  }
}

struct RequestGate::State {
  State(ScopedFd listening_socket, std::string gate_name, Limits gate_limits, Serve serve_one)
      : listening(std::move(listening_socket)),
        name(std::move(gate_name)),
        limits(gate_limits),
        serve(std::move(serve_one)),
        refusals(name),
        closes(name, spdlog::level::debug) {}

  ScopedFd listening;  // the accepting thread's; closed when it ends
  const std::string name;
  const Limits limits;
  const Serve serve;
  runtime::Wakeup stop;
  RefusalLog refusals;  // warn: a bound, a header too large, 503
  RefusalLog closes;    // debug: the header deadline

  std::mutex mutex;
  std::condition_variable work;   // a job queued, or stopping
  std::condition_variable ended;  // a thread ended
  std::deque<Job> queue;
  std::unordered_map<std::string, size_t> held;  // per client: pending, queued, being answered
  size_t held_total = 0;
  size_t answering = 0;  // queued or being answered
  bool stopping = false;
  int alive = 0;  // threads running
  std::vector<std::thread> threads;
  bool stopped = false;  // stop() was called (the owner's)

  // Under `mutex`: one connection of `client` less.
  void release_locked(const std::string& client) {
    auto it = held.find(client);
    if (it != held.end() && --it->second == 0) held.erase(it);
    --held_total;
  }
  void release(const std::string& client) {
    std::lock_guard<std::mutex> lock(mutex);
    release_locked(client);
  }
};

namespace {

using State = RequestGate::State;

// Counts a thread of `s` as ended when it goes out of scope.
struct ThreadEnd {
  State& s;
  ~ThreadEnd() {
    std::lock_guard<std::mutex> lock(s.mutex);
    --s.alive;
    s.ended.notify_all();
  }
};

// Makes room for a new connection from `client` within the bounds: closes the oldest
// pending connection (of `client` at the bound per client, of anyone at the bound in all).
// False if every connection held has sent its request: the new one is refused. Under
// s.mutex; what to log goes to `lines`.
bool make_room_locked(State& s, std::list<Pending>& pending, const std::string& client, const std::string& peer,
                      std::vector<std::string>& lines) {
  const auto per_client = static_cast<size_t>(s.limits.max_per_client);
  const auto in_all = static_cast<size_t>(s.limits.max_connections);
  auto bound = [&](bool mine) {
    return mine ? std::to_string(per_client) + " connections from " + client + " is the bound per client address"
                : std::to_string(in_all) + " connections in all is the bound";
  };
  for (const bool mine : {true, false}) {
    auto count = [&] { return mine ? (s.held.count(client) ? s.held[client] : 0) : s.held_total; };
    if (count() < (mine ? per_client : in_all)) continue;
    auto oldest = mine ? std::find_if(pending.begin(), pending.end(), [&](const Pending& p) { return p.client == client; })
                       : pending.begin();
    if (oldest == pending.end()) {
      lines.push_back(s.name + ": refused a connection from " + peer + ": " + bound(mine) +
                      ", and each of them has sent its request");
      return false;
    }
    lines.push_back(s.name + ": closed a connection from " + oldest->peer +
                    " that sent no request yet, to make room for one from " + peer + ": " + bound(mine));
    s.release_locked(oldest->client);
    pending.erase(oldest);
  }
  return true;
}

// Accepts what is pending on the listening socket (at most 64 at a time, so that the
// connections already held are read in between). Out of descriptors, it pauses accepting
// for 100 ms (`paused_until`) rather than spin on a socket that stays readable.
void accept_some(State& s, std::list<Pending>& pending, Clock::time_point& paused_until) {
  for (int i = 0; i < 64; ++i) {
    ScopedFd fd = runtime::accept_tcp(s.listening.get());
    if (fd.get() < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      s.refusals.refused(s.name + ": cannot accept a connection (" + errno_text() + "); trying again in 100 ms");
      paused_until = Clock::now() + std::chrono::milliseconds(100);
      return;
    }
    Pending p;
    int port = 0;
    address_of(fd.get(), false, p.client, port);
    p.peer = spelled(p.client, port);
    p.fd = std::move(fd);
    p.deadline = Clock::now() + s.limits.header_deadline;
    std::vector<std::string> lines;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (make_room_locked(s, pending, p.client, p.peer, lines)) {
        ++s.held[p.client];
        ++s.held_total;
        pending.push_back(std::move(p));
      }
    }
    for (const std::string& line : lines) s.refusals.refused(line);
  }
}

// Hands a connection with its whole header to the workers, or answers 503 when as many
// requests as the workers and the queue hold are already there.
void hand_over(State& s, Pending& p) {
  const size_t room = static_cast<size_t>(s.limits.workers + s.limits.max_queued);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.answering < room) {
      ++s.answering;
      s.queue.push_back(Job{std::move(p.fd), p.client, std::move(p.head), Clock::now() + s.limits.answer_deadline});
      s.work.notify_one();
      return;
    }
    s.release_locked(p.client);
  }
  answer_at_once(p.fd.get(), 503, "Service Unavailable",
                 "503: the status page is busy (" + std::to_string(room) + " requests at once); try again\n");
  s.refusals.refused(s.name + ": answered 503 to " + p.peer + ": " + std::to_string(room) +
                     " requests are being answered or waiting for a worker, the bound");
}

enum class HeadRead { waiting, complete, too_large, closed };

// Reads what `p` sent, up to the header bound.
HeadRead read_head(State& s, Pending& p) {
  char buffer[4096];
  for (;;) {
    const size_t room = s.limits.max_header_bytes - std::min(s.limits.max_header_bytes, p.head.size());
    if (room == 0) return HeadRead::too_large;
    const ssize_t n = ::recv(p.fd.get(), buffer, std::min(room, sizeof(buffer)), 0);
    if (n == 0) return HeadRead::closed;
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? HeadRead::waiting : HeadRead::closed;
    }
    const size_t before = p.head.size();
    p.head.append(buffer, static_cast<size_t>(n));
    if (p.head.find("\r\n\r\n", before < 3 ? 0 : before - 3) != std::string::npos) return HeadRead::complete;
  }
}

// One step of a pending connection whose socket reported `events` (0: none, at `now`).
// False: it is done with (handed over, answered or closed).
bool step(State& s, Pending& p, short events, Clock::time_point now) {
  if (events == 0) {
    if (now < p.deadline) return true;
    s.closes.refused(s.name + ": closed a connection from " + p.peer + ": no complete request header within " +
                     std::to_string(s.limits.header_deadline.count()) + " ms (" + std::to_string(p.head.size()) +
                     " bytes of it)");
    s.release(p.client);
    return false;
  }
  switch (read_head(s, p)) {
    case HeadRead::waiting:
      return step(s, p, 0, now);  // the deadline holds however the bytes trickle in
    case HeadRead::complete:
      hand_over(s, p);
      return false;
    case HeadRead::too_large:
      answer_at_once(p.fd.get(), 431, "Request Header Fields Too Large",
                     "431: a request header is at most " + std::to_string(s.limits.max_header_bytes) + " bytes\n");
      s.refusals.refused(s.name + ": refused a request from " + p.peer + ": its header is over " +
                         std::to_string(s.limits.max_header_bytes) + " bytes (431)");
      break;
    case HeadRead::closed:
      break;
  }
  s.release(p.client);
  return false;
}

// The accepting thread: one poll over the stop signal, the listening socket and every
// pending connection, until stop().
void accept_loop(State& s) {
  std::list<Pending> pending;
  Clock::time_point paused_until{};
  std::vector<pollfd> fds;
  for (;;) {
    Clock::time_point now = Clock::now();
    const bool accepting = now >= paused_until;
    fds.assign({{s.stop.fd(), POLLIN, 0}, {accepting ? s.listening.get() : -1, POLLIN, 0}});
    runtime::Deadline wake = accepting ? runtime::kNoDeadline : paused_until;
    for (const Pending& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      wake = std::min(wake, p.deadline);
    }
    // A second at most while refusals wait to be summed up in the log.
    if (s.refusals.unsaid() > 0 || s.closes.unsaid() > 0) wake = std::min(wake, now + std::chrono::seconds(1));
    int timeout_ms = -1;
    if (wake != runtime::kNoDeadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(wake - now);
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      spdlog::error("{}: stopped accepting connections: poll failed: {}", s.name, errno_text());
      break;
    }
    if (fds[0].revents != 0) break;
    now = Clock::now();
    size_t i = 2;
    for (auto it = pending.begin(); it != pending.end(); ++i) {
      it = step(s, *it, fds[i].revents, now) ? std::next(it) : pending.erase(it);
    }
    if (accepting && fds[1].revents != 0) accept_some(s, pending, paused_until);
    s.refusals.flush();
    s.closes.flush();
  }
  s.listening = ScopedFd();  // nothing listens any more
  std::deque<Job> unanswered;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    unanswered.swap(s.queue);
  }
  s.refusals.flush(true);
  s.closes.flush(true);
}

// A worker: answers queued connections until stop().
void work(State& s) {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.work.wait(lock, [&] { return s.stopping || !s.queue.empty(); });
      if (s.stopping) return;
      job = std::move(s.queue.front());
      s.queue.pop_front();
    }
    {
      GatedConnection connection(std::move(job.fd), std::move(job.head), job.deadline, &s.stop);
      try {
        s.serve(connection);
      } catch (const std::exception& e) {
        spdlog::error("{}: answering {} failed: {}", s.name, spelled(connection.peer_ip(), connection.peer_port()),
                      e.what());
      } catch (...) {
        spdlog::error("{}: answering {} failed", s.name, spelled(connection.peer_ip(), connection.peer_port()));
      }
    }  // closed here
    std::lock_guard<std::mutex> lock(s.mutex);
    --s.answering;
    s.release_locked(job.client);
  }
}

void check_limits(const RequestGate::Limits& l) {
  auto at_least = [](long value, long least, const char* what) {
    if (value < least) {
      throw UsageError(std::string("a status server's ") + what + " must be at least " + std::to_string(least) +
                       ", not " + std::to_string(value));
    }
  };
  at_least(l.workers, 1, "worker count");
  at_least(l.max_queued, 0, "queue");
  at_least(l.max_connections, 1, "bound of connections");
  at_least(l.max_per_client, 1, "bound of connections per client");
  at_least(static_cast<long>(l.header_deadline.count()), 1, "header deadline (ms)");
  at_least(static_cast<long>(l.answer_deadline.count()), 1, "answer deadline (ms)");
  at_least(static_cast<long>(l.max_header_bytes), 64, "header bound (bytes)");
}

}  // namespace

RequestGate::RequestGate(ScopedFd listening, std::string name, Limits limits, Serve serve) {
  check_limits(limits);
  state_ = std::make_shared<State>(std::move(listening), std::move(name), limits, std::move(serve));
  // Each thread owns a reference to the state, so one left running past stop()'s deadline
  // still has what it uses.
  auto start = [this](void (*body)(State&)) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      ++state_->alive;
    }
    try {
      state_->threads.emplace_back([state = state_, body] {
        ThreadEnd end{*state};
        body(*state);
      });
    } catch (const std::system_error& e) {
      {
        std::lock_guard<std::mutex> lock(state_->mutex);
        --state_->alive;
      }
      stop(std::chrono::seconds(5));
      throw Error(state_->name + ": cannot start a thread: " + e.what());
    }
  };
  for (int i = 0; i < limits.workers; ++i) start(work);
  start(accept_loop);
}

RequestGate::~RequestGate() { stop(std::chrono::seconds(5)); }

bool RequestGate::stop(std::chrono::milliseconds deadline) {
  if (!state_ || state_->stopped) return true;
  State& s = *state_;
  s.stopped = true;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stopping = true;
  }
  s.work.notify_all();
  s.stop.notify();  // the accepting thread and every wait of a connection being answered
  std::unique_lock<std::mutex> lock(s.mutex);
  const bool ended = s.ended.wait_for(lock, deadline, [&] { return s.alive == 0; });
  lock.unlock();
  for (std::thread& t : s.threads) ended ? t.join() : t.detach();
  if (!ended) {
    spdlog::error("{}: its threads did not stop within {} ms; leaving them to end", s.name, deadline.count());
  }
  return ended;
}

}  // namespace partita::dashboard
