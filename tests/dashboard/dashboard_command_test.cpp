// `partita submit --dashboard` across real processes: two daemons on loopback, the job's
// driver in a third serving the status page; its API shows both daemons as nodes and the
// job's progress while it runs.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <regex>
#include <thread>

#include "base/subprocess.h"
#include "daemon_process.h"
#include "test_paths.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::kPartitaBinary;

TEST(DashboardCommandTest, SubmitServesNodesAndProgressOfAJobOnDaemons) {
  testing::TempDir tmp;
  // Many short epochs: the job is still running when the test looks; it is killed after.
  testing::write_text(tmp / "job.yaml",
                      "data:\n"
                      "  generate: {kind: sbm, nodes: 4000, classes: 4, features: 8, avg_degree: 6, seed: 1}\n"
                      "  num_partitions: 2\n"
                      "model: {kind: graphsage, hidden: 8, layers: 2}\n"
                      "sampling: {fanouts: [4, 4], batch_size: 64}\n"
                      "train: {epochs: 5000}\n"
                      "output: on-daemons\n");
  testing::Daemon a = testing::start_daemon();
  testing::Daemon b = testing::start_daemon();
  ASSERT_FALSE(a.address.empty() || b.address.empty());
  ChildProcess job({kPartitaBinary, "submit", tmp / "job.yaml", "--daemons", a.address + "," + b.address,
                    "--dashboard", "0"});

  // The printed address, within 30 s.
  int port = 0;
  const std::regex ready(R"(status page on http://127\.0\.0\.1:(\d+)/)");
  for (int i = 0; i < 300 && port == 0 && job.running(); ++i) {
    std::smatch m;
    const std::string out = job.output_so_far();
    if (std::regex_search(out, m, ready)) port = std::stoi(m[1]);
    else std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GT(port, 0) << "no 'status page on' line; stderr: " << job.errors_so_far();

  // Until an epoch is done, within 120 s.
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(5));
  nlohmann::json jobs;
  for (int i = 0; i < 1200 && job.running(); ++i) {
    if (httplib::Result r = client.Get("/api/jobs"); r && r->status == 200) {
      jobs = nlohmann::json::parse(r->body);
      if (!jobs["jobs"].empty() && !jobs["jobs"][0]["last_epoch"].is_null()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(job.running()) << "the job ended early; stderr: " << job.errors_so_far();
  ASSERT_EQ(jobs["nodes"].size(), 2u) << jobs.dump();
  EXPECT_EQ(jobs["nodes"][0]["name"], a.address);
  EXPECT_EQ(jobs["nodes"][0]["state"], "up");
  EXPECT_EQ(jobs["nodes"][0]["detail"], "partitions 0");
  EXPECT_EQ(jobs["nodes"][1]["name"], b.address);
  EXPECT_EQ(jobs["nodes"][1]["detail"], "partitions 1");
  const nlohmann::json& j = jobs["jobs"][0];
  EXPECT_EQ(j["id"], "on-daemons");
  EXPECT_EQ(j["state"], "running");
  EXPECT_EQ(j["epochs"], 5000);
  EXPECT_GE(j["last_epoch"]["epoch"].get<int>(), 1);
  EXPECT_GT(j["steps_done"].get<int64_t>(), 0);

  httplib::Result metrics = client.Get("/api/jobs/on-daemons/metrics");
  ASSERT_TRUE(metrics);
  const nlohmann::json m = nlohmann::json::parse(metrics->body);
  EXPECT_GE(m["epochs"].size(), 1u);
  EXPECT_GE(m["steps"]["loss"].size(), 1u);
  httplib::Result scrape = client.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_NE(scrape->body.find("partita_node_up{node=\"" + b.address + "\"} 1"), std::string::npos) << scrape->body;
  job.kill();
}

}  // namespace
}  // namespace partita
