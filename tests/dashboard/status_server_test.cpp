// The status page's server over real loopback HTTP: every endpoint, the 404s that name the
// job, a port in use, and a stop that ends its threads while a client holds a connection.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/error.h"
#include "dashboard/status_server.h"
#include "test_util.h"

namespace partita::dashboard {
namespace {

class StatusServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    board_ = std::make_shared<StatusBoard>();
    board_->add_job("cora", "examples/cora.yaml", 2);
    JobProgress p;
    p.epoch = 1;
    p.epochs = 2;
    p.step = 1;
    p.steps = 5;
    p.loss = 1.5;
    board_->publish("cora", p);
    board_->set_nodes({{"in-process", "up", "partitions 0, 1"}});
    server_ = std::make_unique<StatusServer>(board_, parse_dashboard_address("0"));
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  httplib::Result get(const std::string& path) {
    httplib::Result r = client_->Get(path.c_str());
    EXPECT_TRUE(r) << path << ": " << httplib::to_string(r.error());
    return r;
  }

  std::shared_ptr<StatusBoard> board_;
  std::unique_ptr<StatusServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(StatusServerTest, ServesThePageItsScriptsAndTheJsonOfTheBoard) {
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->url(), "http://127.0.0.1:" + std::to_string(server_->port()) + "/");
  httplib::Result page = get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_CONTAINS(page->body, "<script src=\"/static/d3.min.js\">");
  httplib::Result d3 = get("/static/d3.min.js");
  ASSERT_TRUE(d3);
  EXPECT_EQ(d3->status, 200);
  EXPECT_CONTAINS(d3->body, "d3");
  EXPECT_GT(d3->body.size(), 100000u);  // the whole library, embedded
  EXPECT_EQ(d3->get_header_value("Content-Type"), "application/javascript; charset=utf-8");
  EXPECT_EQ(get("/static/dashboard.js")->status, 200);
  EXPECT_EQ(get("/static/nothing.js")->status, 404);
  EXPECT_EQ(get("/jobs/cora")->status, 200);

  httplib::Result jobs = get("/api/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(jobs->body), nlohmann::json::parse(board_->jobs_json()));
  httplib::Result metrics = get("/api/jobs/cora/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(nlohmann::json::parse(metrics->body)["steps"]["loss"][0][1], 1.5);

  httplib::Result scrape = get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(scrape->body, board_->prometheus_text());
}

TEST_F(StatusServerTest, AnUnknownJobIsA404NamingIt) {
  httplib::Result page = get("/jobs/imagenet");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 404);
  EXPECT_CONTAINS(page->body, "no job 'imagenet'");
  httplib::Result api = get("/api/jobs/imagenet/metrics");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 404);
  EXPECT_EQ(nlohmann::json::parse(api->body)["error"], "no job 'imagenet' on this status page");
  httplib::Result other = get("/nowhere");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_CONTAINS(other->body, "no page /nowhere");
}

TEST_F(StatusServerTest, APortInUseIsANamedError) {
  runtime::Endpoint taken{"127.0.0.1", static_cast<uint16_t>(server_->port())};
  try {
    StatusServer second(board_, taken);
    FAIL() << "a second server on port " << taken.port << " must be refused";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "127.0.0.1:" + std::to_string(taken.port));
    EXPECT_CONTAINS(e.what(), "the port is in use");
  }
  // The first one still answers.
  EXPECT_EQ(get("/api/jobs")->status, 200);
}

TEST_F(StatusServerTest, StopEndsItsThreadsWhileAClientHoldsAConnection) {
  // A client that connects and sends nothing holds a worker until the I/O timeout.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_TRUE(server_->stop(std::chrono::seconds(10)));
  EXPECT_TRUE(server_->stop(std::chrono::seconds(1)));  // idempotent
  close(fd);
  // Nothing listens any more.
  httplib::Client again("127.0.0.1", server_->port());
  again.set_connection_timeout(std::chrono::seconds(2));
  EXPECT_FALSE(again.Get("/api/jobs"));
}

TEST_F(StatusServerTest, RunWithItsPortInUseFailsBeforeAnyWork) {
  partita::testing::TempDir tmp;
  partita::testing::write_text(tmp / "job.yaml",
                               "data: {generate: {kind: sbm, nodes: 2000}}\n"
                               "output: out\n");
  partita::testing::CommandResult r =
      partita::testing::run_partita({"run", tmp / "job.yaml", "--dashboard", std::to_string(server_->port())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "cannot serve the status page on 127.0.0.1:" + std::to_string(server_->port()) +
                             ": the port is in use");
  EXPECT_FALSE(std::filesystem::exists(tmp / "out"));
  r = partita::testing::run_partita({"run", tmp / "job.yaml", "--dashboard", "99999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--dashboard '99999': expected a port (0..65535) or HOST:PORT");
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

// A connection to 127.0.0.1:port that sends nothing (non-blocking connect: beyond the
// server's backlog the kernel holds it in the handshake).
int idle_connection(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));  // EINPROGRESS or done
  return fd;
}

// Whether the server closed `fd` (EOF or reset) before `deadline`.
bool closed_by_server(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char byte;
    const ssize_t n = recv(fd, &byte, 1, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return true;
  }
}

// Many connections that say nothing and a flood of requests at once: the server holds a
// bounded number of connections, every request is answered, the idle connections are
// closed, and the server's threads stay the ones it started with.
TEST(StatusServerBoundsTest, IdleConnectionsAndAFloodOfRequestsNeitherStopItNorGrowItsThreads) {
  auto board = std::make_shared<StatusBoard>();
  board->add_job("cora", "examples/cora.yaml", 2);
  StatusServer::Options options;
  options.threads = 2;
  options.max_queued = 4;
  options.io_timeout = std::chrono::seconds(1);
  StatusServer server(board, parse_dashboard_address("0"), options);
  // One request first: httplib starts its workers once listening, so they surely exist now.
  ASSERT_TRUE(httplib::Client("127.0.0.1", server.port()).Get("/api/jobs"));
  const size_t threads_before = thread_count();

  const size_t sockets_before = socket_count();
  std::vector<int> idle;
  for (int i = 0; i < 12; ++i) idle.push_back(idle_connection(server.port()));
  // The server takes at most threads + max_queued of them, and one more that its accepting
  // thread holds while it waits for room (httplib alone would take all 12 at once).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // time to accept what it will
  EXPECT_LE(socket_count() - sockets_before - idle.size(), size_t{2 + 4 + 1});
  constexpr int kClients = 4, kRequestsEach = 40;
  std::atomic<int> answered{0};
  std::atomic<size_t> most_threads{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      httplib::Client client("127.0.0.1", server.port());
      client.set_connection_timeout(std::chrono::seconds(60));
      client.set_read_timeout(std::chrono::seconds(60));
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
  // The server's threads are those it started with; the rest were the test's clients.
  EXPECT_LE(most_threads.load(), threads_before + kClients);
  // Each idle connection ends: the server closes those it accepted after io_timeout. Those
  // the kernel never handed it (beyond its listen backlog the kernel drops the handshake's
  // last step and the client's socket looks connected) are reset once the client speaks:
  // one byte of a request that never ends.
  for (int fd : idle) send(fd, "G", 1, MSG_NOSIGNAL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  size_t closed = 0;
  for (int fd : idle) closed += closed_by_server(fd, deadline);
  EXPECT_EQ(closed, idle.size()) << "the server must hold no idle connection";
  for (int fd : idle) close(fd);
  httplib::Client after("127.0.0.1", server.port());
  httplib::Result res = after.Get("/api/jobs");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_TRUE(server.stop(std::chrono::seconds(10)));
}

// A request body over the limit is refused, not read.
TEST_F(StatusServerTest, ARequestBodyOverTheLimitIsRefused) {
  httplib::Result res = client_->Post("/api/jobs", std::string(100 * 1024, 'x'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  httplib::Result still = get("/api/jobs");
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
}

TEST(DashboardAddressTest, TakesAPortOrHostAndPort) {
  runtime::Endpoint e = parse_dashboard_address("8265");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 8265);
  e = parse_dashboard_address("localhost:9000");
  EXPECT_EQ(e.host, "localhost");
  EXPECT_EQ(e.port, 9000);
  EXPECT_EQ(parse_dashboard_address("[::1]:9000").host, "::1");
  EXPECT_EQ(parse_dashboard_address("127.0.0.2:9000").host, "127.0.0.2");
  EXPECT_THROW(parse_dashboard_address("70000"), UsageError);
  EXPECT_THROW(parse_dashboard_address("localhost:"), UsageError);
  EXPECT_THROW(parse_dashboard_address(""), UsageError);
}

// The page has no authentication: an address other machines reach is refused by name, by
// the flag's parser and by the server itself, before anything listens.
TEST(DashboardAddressTest, AnAddressBeyondLoopbackIsRefusedByName) {
  for (const std::string address : {"0.0.0.0:9000", "10.1.2.3:9000", "[::]:9000", "example.org:9000"}) {
    try {
      parse_dashboard_address(address);
      ADD_FAILURE() << address << " was accepted";
    } catch (const StatusPageNotLoopback& e) {
      EXPECT_CONTAINS(std::string(e.what()), "--dashboard '");
      EXPECT_CONTAINS(std::string(e.what()), "listens on loopback addresses only");
      EXPECT_CONTAINS(std::string(e.what()), "ssh -L 9000:127.0.0.1:9000");
    }
  }
  auto board = std::make_shared<StatusBoard>();
  EXPECT_THROW(StatusServer(board, runtime::Endpoint{"0.0.0.0", 0}), StatusPageNotLoopback);
}

}  // namespace
}  // namespace partita::dashboard
