// `partita daemon --head --dashboard`: the head serves the cluster's page, whose nodes are
// the membership as the head keeps it (joined nodes up; a killed one lost).
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <regex>
#include <thread>

#include "daemon_process.h"
#include "test_util.h"

namespace partita {
namespace {

// /api/jobs of the page on `port`, polled every 100 ms until `done` holds (at most 30 s).
nlohmann::json wait_for_page(int port, const std::function<bool(const nlohmann::json&)>& done) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(5));
  nlohmann::json page;
  for (int i = 0; i < 300; ++i) {
    if (httplib::Result r = client.Get("/api/jobs"); r && r->status == 200) {
      page = nlohmann::json::parse(r->body);
      if (done(page)) return page;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ADD_FAILURE() << "the page never showed what was expected; last: " << page.dump();
  return page;
}

std::string state_of(const nlohmann::json& page, const std::string& node) {
  for (const auto& n : page["nodes"]) {
    if (n["name"] == node) return n["state"];
  }
  return "";
}

TEST(HeadDashboardTest, ThePageShowsTheMembershipAsTheHeadKeepsIt) {
  testing::Daemon head = testing::start_daemon(
      {"--head", "--dashboard", "0", "--heartbeat-ms", "200", "--heartbeat-timeout-ms", "1000"});
  ASSERT_FALSE(head.address.empty());
  const int port = testing::status_page_port(head);
  ASSERT_NE(port, 0);

  testing::Daemon a = testing::start_daemon({"--join", head.address, "--name", "node-a"});
  testing::Daemon b = testing::start_daemon({"--join", head.address, "--name", "node-b"});
  ASSERT_FALSE(a.address.empty() || b.address.empty());
  nlohmann::json page = wait_for_page(port, [](const nlohmann::json& p) {
    return state_of(p, "node-a") == "up" && state_of(p, "node-b") == "up";
  });
  EXPECT_NE(page.dump().find("cores"), std::string::npos) << page.dump();

  // node-a's resources from its heartbeats, over time.
  httplib::Client api("127.0.0.1", port);
  nlohmann::json nodes;
  for (int i = 0; i < 100; ++i) {
    httplib::Result r = api.Get("/api/nodes");
    ASSERT_TRUE(r);
    nodes = nlohmann::json::parse(r->body)["nodes"];
    const auto a = std::find_if(nodes.begin(), nodes.end(), [](const nlohmann::json& n) { return n["name"] == "node-a"; });
    if (a != nodes.end() && (*a)["history"].is_object() && (*a)["history"]["cpu_cores"].size() >= 2) {
      EXPECT_GT((*a)["resources"]["resident_bytes"].get<int64_t>(), 1 << 20);
      EXPECT_GT((*a)["resources"]["threads"].get<int64_t>(), 1);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_LT(i, 99) << "node-a's resources never had two points: " << nodes.dump();
  }

  b.process->kill();
  page = wait_for_page(port, [](const nlohmann::json& p) { return state_of(p, "node-b") == "lost"; });
  EXPECT_EQ(state_of(page, "node-a"), "up");

  httplib::Client client("127.0.0.1", port);
  httplib::Result scrape = client.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_NE(scrape->body.find("partita_node_up{node=\"node-a\"} 1"), std::string::npos) << scrape->body;
  EXPECT_NE(scrape->body.find("partita_node_up{node=\"node-b\"} 0"), std::string::npos) << scrape->body;
}

// A job submitted to the head is on its page: its epochs as its metrics.jsonl holds them,
// every step of it (the driver's reports carry each one), and its end.
TEST(HeadDashboardTest, ThePageShowsTheJobsSubmittedToTheHead) {
  testing::TempDir tmp;
  ASSERT_EQ(testing::run_partita({"generate", "sbm", "--nodes", "2000", "--classes", "4", "--features", "8", "-o",
                                  tmp / "graph"}).exit_code, 0);
  ASSERT_EQ(testing::run_partita({"partition", "-i", tmp / "graph", "-o", tmp / "parts", "-k", "2"}).exit_code, 0);
  testing::write_text(tmp / "paged.yaml", "data: {partitions: " + tmp / "parts" +
                                              "}\nmodel: {hidden: 16}\nsampling: {fanouts: [5, 5], batch_size: 20}\n"
                                              "train: {epochs: 3}\n");
  testing::Daemon head = testing::start_daemon({"--head", "--dashboard", "0", "--runs", tmp / "runs"});
  ASSERT_FALSE(head.address.empty());
  const int port = testing::status_page_port(head);
  ASSERT_NE(port, 0);
  // Each with a staging cache of its own (not the working folder's, shared by other tests).
  testing::Daemon a = testing::start_daemon({"--join", head.address, "--name", "node-a", "--cache", tmp / "cache-a"});
  testing::Daemon b = testing::start_daemon({"--join", head.address, "--name", "node-b", "--cache", tmp / "cache-b"});
  wait_for_page(port, [](const nlohmann::json& p) { return state_of(p, "node-a") == "up" && state_of(p, "node-b") == "up"; });

  const testing::CommandResult r = testing::run_partita({"submit", tmp / "paged.yaml", "--address", head.address});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json page = wait_for_page(port, [](const nlohmann::json& p) {
    return !p["jobs"].empty() && p["jobs"][0]["state"] == "done";
  });
  ASSERT_FALSE(page["jobs"].empty()) << page.dump();
  const nlohmann::json job = page["jobs"][0];
  EXPECT_EQ(job["id"], "paged-1");
  EXPECT_EQ(job["epochs"], 3);
  ASSERT_TRUE(job["last_epoch"].is_object()) << job.dump();
  EXPECT_EQ(job["last_epoch"]["epoch"], 3) << "every epoch of metrics.jsonl reached the page";
  httplib::Client client("127.0.0.1", port);
  httplib::Result metrics = client.Get("/api/jobs/paged-1/metrics");
  ASSERT_TRUE(metrics);
  const nlohmann::json curves = nlohmann::json::parse(metrics->body);
  ASSERT_EQ(curves["epochs"].size(), 3u) << metrics->body;
  // Every step of every epoch, as the epochs' records count them: x = 1..total, once each.
  int64_t total = 0;
  for (const auto& e : curves["epochs"]) total += e["steps"].get<int64_t>();
  ASSERT_GT(total, 3);
  EXPECT_EQ(curves["steps"]["samples"], total) << metrics->body;
  EXPECT_EQ(job["steps_done"], total);
  ASSERT_EQ(curves["steps"]["stride"], 1) << "fewer steps than the page's bound: none merged";
  ASSERT_EQ(curves["steps"]["loss"].size(), static_cast<size_t>(total)) << metrics->body;
  for (int64_t i = 0; i < total; ++i) {
    EXPECT_EQ(curves["steps"]["loss"][i][0].get<double>(), static_cast<double>(i + 1)) << "step " << i + 1;
  }
  httplib::Result scrape = client.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_NE(scrape->body.find("partita_job_steps_total{job_id=\"paged-1\"} " + std::to_string(total) + "\n"),
            std::string::npos)
      << scrape->body;
}

TEST(HeadDashboardTest, OnlyAHeadServesTheClusterPage) {
  const testing::CommandResult r = testing::run_partita({"daemon", "--dashboard", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--dashboard needs --head"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace partita
