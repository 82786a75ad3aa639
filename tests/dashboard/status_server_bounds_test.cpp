// The status server's bounds over real loopback connections (dashboard/request_gate.h):
// idle connections neither hold up a request nor stay open, one client beyond its bound
// gives way while another gets through, a header sent a byte a second is cut, requests
// beyond the workers and the queue are answered 503 at once, stop() is prompt whatever is
// open, and thousands of refusals log a bounded number of lines. Clients use two loopback
// source addresses, 127.0.0.1 and 127.0.0.2, as two client addresses.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <deque>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "base/stopwatch.h"
#include "dashboard/status_server.h"
#include "test_util.h"

namespace partita::dashboard {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::shared_ptr<StatusBoard> cora_board() {
  auto board = std::make_shared<StatusBoard>();
  board->add_job("cora", "examples/cora.yaml", 2);
  return board;
}

// A connection to 127.0.0.1:port from `source` (a loopback address), with 10 s bounds on
// its connect and transfers; -1 if it could not connect.
int connect_from(const char* source, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval ten{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &ten, sizeof(ten));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &ten, sizeof(ten));
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ADD_FAILURE() << "cannot connect from " << source << " to port " << port << ": " << std::strerror(errno);
    close(fd);
    return -1;
  }
  return fd;
}

std::vector<int> idle_connections(const char* source, int port, int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) fds.push_back(connect_from(source, port));
  return fds;
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// What the server sent on `fd` until it closed the connection (end of stream or reset);
// nullopt if it was still open at `deadline`.
std::optional<std::string> until_closed(int fd, Clock::time_point deadline) {
  std::string got;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      got.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return got;
    }
  }
}

// Whether the server has closed nothing on `fd` yet: nothing to read, no end of stream.
bool still_open(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

size_t closed_within(const std::vector<int>& fds, Clock::duration within) {
  const Clock::time_point deadline = Clock::now() + within;
  size_t closed = 0;
  for (int fd : fds) closed += until_closed(fd, deadline).has_value();
  return closed;
}

// The server's whole response to `request` sent from `source`, "" if none within 10 s.
std::string exchange(const char* source, int port, const std::string& request) {
  const int fd = connect_from(source, port);
  if (fd < 0) return "";
  std::optional<std::string> response;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    response = until_closed(fd, Clock::now() + seconds(10));
  }
  close(fd);
  return response.value_or("");
}

std::string get(const char* source, int port, const std::string& path = "/api/jobs") {
  return exchange(source, port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

bool starts_with(const std::string& text, const std::string& start) { return text.rfind(start, 0) == 0; }

// A request whose body never comes: it holds a worker until the answer deadline or stop().
int request_without_its_body(const char* source, int port) {
  const int fd = connect_from(source, port);
  const std::string head = "POST /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n";
  EXPECT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  return fd;
}

// The threads of this process (/proc/self/task).
size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// The sockets this process holds (/proc/self/fd).
size_t socket_count() {
  size_t n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ignored;
    n += std::filesystem::read_symlink(fd.path(), ignored).string().rfind("socket:", 0) == 0;
  }
  return n;
}

// More idle connections than workers (httplib's own pool kept the next request waiting
// behind all of them, each for its read timeout): a request is answered, and the server
// closes each idle connection after the header deadline.
TEST(StatusServerBoundsTest, ManyIdleConnectionsNeitherHoldUpARequestNorStayOpen) {
  StatusServer::Options options;
  options.limits.workers = 2;
  options.limits.max_per_client = 200;
  options.limits.header_deadline = seconds(3);
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  const std::vector<int> idle = idle_connections("127.0.0.1", server.port(), 100);

  const std::string answer = get("127.0.0.1", server.port());
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 200")) << answer;
  EXPECT_CONTAINS(answer, "\"cora\"");
  httplib::Client browser("127.0.0.1", server.port());
  browser.set_connection_timeout(seconds(10));
  browser.set_read_timeout(seconds(10));
  httplib::Result page = browser.Get("/");
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  EXPECT_EQ(page->status, 200);

  EXPECT_EQ(closed_within(idle, seconds(3) + seconds(30)), idle.size()) << "the server must hold no idle connection";
  close_all(idle);
  EXPECT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
  EXPECT_TRUE(server.stop(seconds(10)));
}

// Idle connections and a flood of requests at once: the server holds a bounded number of
// connections, every request is answered, and its threads stay the ones it started with.
TEST(StatusServerBoundsTest, IdleConnectionsAndAFloodOfRequestsNeitherStopItNorGrowItsThreads) {
  StatusServer::Options options;
  options.limits.workers = 2;
  options.limits.max_queued = 4;
  options.limits.max_connections = 8;
  options.limits.header_deadline = seconds(1);
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  ASSERT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
  const size_t threads_before = thread_count();

  const size_t sockets_before = socket_count();
  const std::vector<int> idle = idle_connections("127.0.0.1", server.port(), 12);
  std::this_thread::sleep_for(milliseconds(500));  // time to accept what it will
  // The test's own 12 and at most max_connections of the server's.
  EXPECT_LE(socket_count() - sockets_before - idle.size(), size_t{8});
  constexpr int kClients = 4, kRequestsEach = 40;
  std::atomic<int> answered{0};
  std::atomic<size_t> most_threads{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_connection_timeout(seconds(60));
      client.set_read_timeout(seconds(60));
      for (int r = 0; r < kRequestsEach; ++r) {
        httplib::Result res = client.Get("/api/jobs");
        if (res && res->status == 200) ++answered;
        size_t now = thread_count(), seen = most_threads.load();
        while (now > seen && !most_threads.compare_exchange_weak(seen, now)) {
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered.load(), kClients * kRequestsEach);
  EXPECT_LE(most_threads.load(), threads_before + kClients);  // the rest were the test's clients
  EXPECT_EQ(closed_within(idle, seconds(60)), idle.size()) << "the server must hold no idle connection";
  close_all(idle);
  EXPECT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_TRUE(server.stop(seconds(10)));
}

// One client address over its bound: its oldest silent connections are closed at once (not
// at the header deadline), the newest stay, another client gets through, and so does a
// request of the first client's own, its header arriving at once.
TEST(StatusServerBoundsTest, AClientBeyondItsBoundGivesWayAndAnotherStillGetsThrough) {
  StatusServer::Options options;
  options.limits.max_per_client = 4;
  options.limits.header_deadline = seconds(60);
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  const std::vector<int> idle = idle_connections("127.0.0.2", server.port(), 20);

  const std::vector<int> oldest(idle.begin(), idle.begin() + 16);
  EXPECT_EQ(closed_within(oldest, seconds(10)), oldest.size());
  for (size_t i = 16; i < idle.size(); ++i) EXPECT_TRUE(still_open(idle[i])) << "connection " << i;

  std::string answer = get("127.0.0.1", server.port());
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 200")) << answer;
  for (size_t i = 16; i < idle.size(); ++i) EXPECT_TRUE(still_open(idle[i])) << "connection " << i;

  answer = get("127.0.0.2", server.port());
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 200")) << answer;
  EXPECT_EQ(closed_within({idle[16]}, seconds(10)), 1u);
  for (size_t i = 17; i < idle.size(); ++i) EXPECT_TRUE(still_open(idle[i])) << "connection " << i;
  close_all(idle);
  EXPECT_TRUE(server.stop(seconds(10)));
}

// The bound in all gives way the same: silent connections make room for a request.
TEST(StatusServerBoundsTest, TheBoundInAllGivesWayToARequest) {
  StatusServer::Options options;
  options.limits.max_connections = 8;
  options.limits.header_deadline = seconds(60);
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  const std::vector<int> idle = idle_connections("127.0.0.2", server.port(), 20);
  EXPECT_EQ(closed_within(std::vector<int>(idle.begin(), idle.begin() + 12), seconds(10)), 12u);
  for (size_t i = 12; i < idle.size(); ++i) EXPECT_TRUE(still_open(idle[i])) << "connection " << i;
  const std::string answer = get("127.0.0.1", server.port());
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 200")) << answer;
  close_all(idle);
  EXPECT_TRUE(server.stop(seconds(10)));
}

// With every worker and place in the queue taken, a request is answered 503 at once by the
// accepting thread; and a client address whose connections all have their request in is
// refused a further one at once.
TEST(StatusServerBoundsTest, RequestsBeyondTheWorkersAndTheQueueAreAnswered503AtOnce) {
  StatusServer::Options options;
  options.limits.workers = 1;
  options.limits.max_queued = 0;
  options.limits.max_per_client = 1;
  options.limits.answer_deadline = seconds(60);
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  // Its header is read before the next client's (accepted first): it takes the one worker.
  const int waiting = request_without_its_body("127.0.0.2", server.port());

  const std::string answer = get("127.0.0.1", server.port());
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 503 Service Unavailable\r\n")) << answer;
  EXPECT_CONTAINS(answer, "Retry-After: 1\r\n");
  EXPECT_CONTAINS(answer, "the status page is busy");

  const int another = connect_from("127.0.0.2", server.port());
  const std::optional<std::string> refused = until_closed(another, Clock::now() + seconds(10));
  ASSERT_TRUE(refused.has_value()) << "a connection beyond its client's bound must be closed at once";
  EXPECT_EQ(*refused, "");
  close(another);

  EXPECT_TRUE(server.stop(seconds(10)));
  EXPECT_TRUE(until_closed(waiting, Clock::now() + seconds(10)).has_value());
  close(waiting);
}

// A header sent a byte a second is cut at the header deadline, unanswered, while others
// are answered meanwhile.
TEST(StatusServerBoundsTest, AHeaderSentAByteASecondIsCutAtTheDeadline) {
  StatusServer::Options options;
  options.limits.header_deadline = seconds(2);
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  const std::string request = "GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const int slow = connect_from("127.0.0.1", server.port());
  std::atomic<bool> done{false};
  std::atomic<size_t> sent{0};
  std::thread sender([&] {
    for (size_t i = 0; i < request.size() && !done; ++i) {
      if (send(slow, &request[i], 1, MSG_NOSIGNAL) != 1) break;
      ++sent;
      for (int tick = 0; tick < 10 && !done; ++tick) std::this_thread::sleep_for(milliseconds(100));
    }
  });
  EXPECT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
  const std::optional<std::string> answer = until_closed(slow, Clock::now() + seconds(30));
  done = true;
  sender.join();
  ASSERT_TRUE(answer.has_value()) << "the slow header must be cut";
  EXPECT_EQ(*answer, "");
  EXPECT_LT(sent.load(), request.size());
  close(slow);
  EXPECT_TRUE(server.stop(seconds(10)));
}

TEST(StatusServerBoundsTest, AHeaderOverItsBoundIsAnswered431) {
  StatusServer::Options options;
  options.limits.max_header_bytes = 4096;
  StatusServer server(cora_board(), parse_dashboard_address("0"), options);
  const std::string answer =
      exchange("127.0.0.1", server.port(), "GET / HTTP/1.1\r\nX-Big: " + std::string(8000, 'a'));
  EXPECT_TRUE(starts_with(answer, "HTTP/1.1 431 Request Header Fields Too Large\r\n")) << answer;
  EXPECT_CONTAINS(answer, "a request header is at most 4096 bytes");
  EXPECT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
  EXPECT_TRUE(server.stop(seconds(10)));
}

// stop() with 100 idle connections and a request being answered (its body never comes):
// within its deadline, every thread ends and every connection is closed.
TEST(StatusServerBoundsTest, StopIsPromptWithIdleConnectionsAndAnAnswerInProgress) {
  const size_t threads_before = thread_count();
  std::vector<int> idle;
  int waiting = -1;
  {
    StatusServer::Options options;
    options.limits.max_per_client = 200;
    options.limits.header_deadline = seconds(60);
    options.limits.answer_deadline = seconds(60);
    StatusServer server(cora_board(), parse_dashboard_address("0"), options);
    idle = idle_connections("127.0.0.1", server.port(), 100);
    waiting = request_without_its_body("127.0.0.2", server.port());
    // Answered after it has taken the connections before it.
    EXPECT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
    EXPECT_TRUE(server.stop(seconds(10)));
    EXPECT_EQ(thread_count(), threads_before);
  }
  EXPECT_EQ(closed_within(idle, seconds(10)), idle.size());
  EXPECT_TRUE(until_closed(waiting, Clock::now() + seconds(10)).has_value());
  close_all(idle);
  close(waiting);
}

// 5,000 connections beyond their client's bound: a burst of lines, then one a second, each
// with the count of those left out, and a last line summing up the rest at stop().
TEST(StatusServerBoundsTest, FiveThousandRefusedConnectionsLogABoundedNumberOfLines) {
  testing::LogCapture capture(spdlog::level::info, "%v");
  Stopwatch watch;
  {
    StatusServer::Options options;
    options.limits.max_per_client = 1;
    options.limits.header_deadline = seconds(60);
    StatusServer server(cora_board(), parse_dashboard_address("0"), options);
    std::deque<int> open;  // the newest 256: the server closes the rest anyway
    for (int i = 0; i < 5000; ++i) {
      open.push_back(connect_from("127.0.0.1", server.port()));
      if (open.size() > 256) {
        close(open.front());
        open.pop_front();
      }
    }
    // Read after every connection before it: they have all been refused by then.
    EXPECT_TRUE(starts_with(get("127.0.0.1", server.port()), "HTTP/1.1 200"));
    for (int fd : open) close(fd);
    EXPECT_TRUE(server.stop(seconds(10)));
  }
  const double elapsed = watch.seconds();
  size_t lines = 0, refusals = 0;
  for (const std::string& line : capture.lines()) {
    if (line.find("status page 127.0.0.1:") != 0) continue;
    ++lines;
    if (const size_t at = line.find(" more refusals not logged"); at != std::string::npos) {
      const size_t number = line.rfind(' ', at - 1) + 1;
      refusals += std::stoul(line.substr(number, at - number));
    }
    refusals += line.find("closed a connection from") != std::string::npos;
  }
  EXPECT_LE(lines, 10 + static_cast<size_t>(std::ceil(elapsed)) + 1) << "in " << elapsed << " s";
  // Each connection but the first was refused (a connection the server saw end before the
  // next came was not: the client closed it first).
  EXPECT_GE(refusals, 4000u);
  EXPECT_LE(refusals, 5000u);
}

}  // namespace
}  // namespace partita::dashboard
