// The head's /metrics as a real Prometheus server scrapes it: a head and a node on
// loopback run a short job, a Prometheus (Debian's prometheus package) started by the test
// on a free loopback port scrapes the head's status page every second, and its HTTP API
// must answer with the job's step counter equal to the job's steps, under the label
// job_id (Prometheus's own `job` label names the scrape job), the step-time histogram
// counting every step, and the node's and the head process's figures.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <regex>
#include <thread>

#include "base/subprocess.h"
#include "daemon_process.h"
#include "test_util.h"

namespace partita {
namespace {

using Clock = std::chrono::steady_clock;

// A loopback port free when asked (the kernel's pick for port 0).
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t size = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The result vector of the instant query `query` on the Prometheus at `port`; empty when
// it has none yet or does not answer.
nlohmann::json query(int port, const std::string& query) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(5));
  httplib::Params params{{"query", query}};
  httplib::Result r = client.Get("/api/v1/query", params, httplib::Headers{});
  if (!r || r->status != 200) return nlohmann::json::array();
  const nlohmann::json answer = nlohmann::json::parse(r->body, nullptr, false);
  if (answer.is_discarded() || answer.value("status", "") != "success") return nlohmann::json::array();
  return answer["data"]["result"];
}

// Polls `query` every 250 ms until `done` holds for its result (at most 60 s).
nlohmann::json wait_for_query(int port, const std::string& q, const std::function<bool(const nlohmann::json&)>& done) {
  nlohmann::json result;
  for (const auto until = Clock::now() + std::chrono::seconds(60); Clock::now() < until;) {
    result = query(port, q);
    if (done(result)) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ADD_FAILURE() << "Prometheus never answered " << q << " as expected; last: " << result.dump();
  return result;
}

double value_of(const nlohmann::json& series) { return std::stod(series["value"][1].get<std::string>()); }

TEST(PrometheusScrapeTest, APrometheusServerScrapesTheHeadsStepsAndFigures) {
  const ProcessResult which = run_process({"/bin/sh", "-c", "command -v prometheus"}, 10);
  ASSERT_EQ(which.exit_code, 0) << "prometheus not found: install Debian's prometheus package (scripts/setup.sh does)";
  testing::TempDir tmp;
  ASSERT_EQ(testing::run_partita({"generate", "sbm", "--nodes", "1000", "--classes", "4", "--features", "8", "-o",
                                  tmp / "graph"}).exit_code, 0);
  ASSERT_EQ(testing::run_partita({"partition", "-i", tmp / "graph", "-o", tmp / "parts", "-k", "1"}).exit_code, 0);
  testing::write_text(tmp / "short.yaml", "data: {partitions: " + tmp / "parts" +
                                              "}\nmodel: {hidden: 8}\nsampling: {fanouts: [5, 5], batch_size: 25}\n"
                                              "train: {epochs: 2}\n");
  testing::Daemon head = testing::start_daemon({"--head", "--dashboard", "0", "--runs", tmp / "runs"});
  ASSERT_FALSE(head.address.empty());
  const int page = testing::status_page_port(head);
  ASSERT_NE(page, 0);
  testing::Daemon node = testing::start_daemon({"--join", head.address, "--name", "node-a", "--cache", tmp / "cache"});
  ASSERT_FALSE(node.address.empty());

  const testing::CommandResult submitted = testing::run_partita({"submit", tmp / "short.yaml", "--address", head.address});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  // The job's steps, as its epochs' records on the head's page count them.
  httplib::Client client("127.0.0.1", page);
  int64_t total = 0;
  for (const auto until = Clock::now() + std::chrono::seconds(60); Clock::now() < until && total == 0;) {
    if (httplib::Result r = client.Get("/api/jobs/short-1/metrics"); r && r->status == 200) {
      const nlohmann::json curves = nlohmann::json::parse(r->body);
      if (curves["epochs"].size() == 2) {
        for (const auto& e : curves["epochs"]) total += e["steps"].get<int64_t>();
      }
    }
    if (total == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_GT(total, 0) << "the job's two epochs never reached the head's page";

  // Prometheus on a free loopback port, scraping the page every second; killed with `prom`.
  testing::write_text(tmp / "prometheus.yml", "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                                              "scrape_configs:\n"
                                              "  - job_name: partita\n"
                                              "    static_configs: [{targets: ['127.0.0.1:" +
                                                  std::to_string(page) + "']}]\n");
  int port = 0;
  std::unique_ptr<ChildProcess> prom;
  for (int attempt = 0; attempt < 3 && !prom; ++attempt) {
    port = free_loopback_port();
    ASSERT_NE(port, 0);
    auto started = std::make_unique<ChildProcess>(std::vector<std::string>{
        "/usr/bin/prometheus", "--config.file=" + tmp / "prometheus.yml", "--storage.tsdb.path=" + tmp / "tsdb",
        "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"});
    // Ready, or gone (the port was taken meanwhile: another attempt on another port).
    httplib::Client ready("127.0.0.1", port);
    ready.set_connection_timeout(std::chrono::seconds(1));
    for (const auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until && started->running();) {
      if (httplib::Result r = ready.Get("/-/ready"); r && r->status == 200) {
        prom = std::move(started);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (!prom && started->running()) started->kill();
  }
  ASSERT_TRUE(prom) << "Prometheus did not start on loopback";

  const std::string job = "{job_id=\"short-1\"}";
  const nlohmann::json steps = wait_for_query(port, "partita_job_steps_total" + job, [&](const nlohmann::json& r) {
    return r.size() == 1 && value_of(r[0]) == static_cast<double>(total);
  });
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["metric"]["job"], "partita") << "Prometheus's own label: the scrape job's name";
  EXPECT_EQ(steps[0]["metric"]["job_id"], "short-1");
  EXPECT_FALSE(steps[0]["metric"].contains("exported_job")) << steps.dump();
  // Every step timed in the histogram.
  const nlohmann::json timed = wait_for_query(port, "partita_job_step_duration_seconds_count" + job,
                                              [](const nlohmann::json& r) { return r.size() == 1; });
  ASSERT_EQ(timed.size(), 1u);
  EXPECT_EQ(value_of(timed[0]), static_cast<double>(total));
  const nlohmann::json done = wait_for_query(port, "partita_job_state{job_id=\"short-1\",state=\"done\"}",
                                             [](const nlohmann::json& r) { return r.size() == 1; });
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(value_of(done[0]), 1);
  // The node's resources from its heartbeats, and the head's process.
  const nlohmann::json resident = wait_for_query(port, "partita_node_resident_memory_bytes{node=\"node-a\"}",
                                                 [](const nlohmann::json& r) { return r.size() == 1; });
  ASSERT_EQ(resident.size(), 1u);
  EXPECT_GT(value_of(resident[0]), 1 << 20);
  const nlohmann::json threads = query(port, "partita_node_threads{node=\"node-a\"}");
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_GT(value_of(threads[0]), 1);
  const nlohmann::json cpu = query(port, "process_cpu_seconds_total{job=\"partita\"}");
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_GT(value_of(cpu[0]), 0);
  // Prometheus took every scrape whole: the target is up.
  const nlohmann::json up = query(port, "up{job=\"partita\"}");
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(value_of(up[0]), 1);
}

}  // namespace
}  // namespace partita
