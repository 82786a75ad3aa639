// The status page's server over real loopback HTTP: every endpoint, the 404s that name the
// job, a port in use, and a stop that ends its threads while a client holds a connection.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

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
  // The board's text, but for this process's own figures (its CPU time moves on).
  auto without_process = [](const std::string& text) {
    std::istringstream in(text);
    std::string out, line;
    while (std::getline(in, line)) {
      if (line.find("process_") == std::string::npos) out += line + "\n";
    }
    return out;
  };
  EXPECT_EQ(without_process(scrape->body), without_process(board_->prometheus_text()));
  EXPECT_NE(scrape->body.find("\nprocess_cpu_seconds_total "), std::string::npos) << scrape->body;
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
  // A client that connects and sends nothing is held until the header deadline.
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
