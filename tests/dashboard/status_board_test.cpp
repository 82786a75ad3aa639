// The status board's renderings, as a page and a Prometheus server read them: the JSON
// of /api/jobs and /api/jobs/ID/metrics, and a /metrics scrape parsed line by line.
#include <algorithm>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <atomic>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "dashboard/cluster_jobs.h"
#include "dashboard/series.h"
#include "dashboard/status_board.h"
#include "test_util.h"
#include "training/metrics_record.h"

namespace partita::dashboard {
namespace {

JobProgress step_event(int epoch, int64_t step, int64_t steps, double loss, double accuracy, double rate) {
  JobProgress p;
  p.event = JobProgress::Event::step;
  p.epoch = epoch;
  p.epochs = 3;
  p.step = step;
  p.steps = steps;
  p.loss = loss;
  p.accuracy = accuracy;
  p.steps_per_second = rate;
  return p;
}

EpochMetrics epoch_record(int epoch) {
  EpochMetrics m;
  m.epoch = epoch;
  m.steps = 4;
  m.seconds = 0.5 * epoch;
  m.batches_per_second = 16.0 / epoch;
  m.train_loss = 1.0 / epoch;
  m.train_accuracy = 0.5 + 0.1 * epoch;
  m.val_loss = 1.1 / epoch;
  m.val_accuracy = 0.45 + 0.1 * epoch;
  m.test_loss = 1.2 / epoch;
  m.test_accuracy = 0.4 + 0.1 * epoch;
  m.step_losses = {1, 2, 3, 4};
  return m;
}

JobProgress epoch_event(const EpochMetrics& m) {
  JobProgress p;
  p.event = JobProgress::Event::epoch;
  p.epoch = m.epoch;
  p.epochs = 3;
  p.step = p.steps = m.steps;
  p.loss = m.train_loss;
  p.accuracy = m.train_accuracy;
  p.metrics = &m;
  return p;
}

// A board with job "sbm" after 2 epochs of 4 steps, half of epoch 3, and two nodes.
void fill_two_epochs(StatusBoard& board) {
  board.add_job("sbm", "examples/sbm.yaml -> runs/sbm", 3);
  for (int e = 1; e <= 2; ++e) {
    for (int s = 1; s <= 4; ++s) board.publish("sbm", step_event(e, s, 4, 2.0 / (4 * (e - 1) + s), 0.1 * s, 10.0 + s));
    const EpochMetrics m = epoch_record(e);
    board.publish("sbm", epoch_event(m));
  }
  board.publish("sbm", step_event(3, 1, 4, 0.25, 0.75, 12.5));
  board.publish("sbm", step_event(3, 2, 4, 0.2, 0.8, 12.0));
  board.set_nodes({{"127.0.0.1:4000", "up", "partitions 0"}, {"127.0.0.1:4001", "lost", "no heartbeat"}});
}

TEST(SeriesTest, KeepsAtMostItsCapacityAndTheWholeRunDownsampled) {
  Series series(8);
  for (int i = 1; i <= 1000; ++i) series.add(i, i % 2 == 0 ? 1.0 : 3.0);
  const std::vector<Point> points = series.points();
  EXPECT_LE(points.size(), 9u);
  EXPECT_GE(points.size(), 4u);
  EXPECT_EQ(series.samples(), 1000);
  EXPECT_EQ(series.stride(), 128);  // 1000 samples in at most 8 buckets: the stride doubled to 128
  // Buckets hold whole pairs (stride even): each mean is exactly 2, and x runs to the end.
  for (const Point& p : points) EXPECT_DOUBLE_EQ(p.y, 2.0);
  EXPECT_DOUBLE_EQ(points.back().x, 1000);
  EXPECT_LT(points.front().x, 200);  // the start of the run is still there
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i - 1].x, points[i].x);
  EXPECT_DOUBLE_EQ(series.last().y, 1.0);
  EXPECT_THROW(Series(1), UsageError);
}

TEST(SeriesTest, KeepsEverySampleUntilFull) {
  Series series(100);
  for (int i = 0; i < 50; ++i) series.add(i, i * 0.5);
  ASSERT_EQ(series.points().size(), 50u);
  EXPECT_EQ(series.stride(), 1);
  EXPECT_DOUBLE_EQ(series.points()[7].y, 3.5);
}

TEST(StatusBoardTest, JobsJsonShowsNodesStateAndProgress) {
  StatusBoard board;
  fill_two_epochs(board);
  const nlohmann::json j = nlohmann::json::parse(board.jobs_json());
  ASSERT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][1]["name"], "127.0.0.1:4001");
  EXPECT_EQ(j["nodes"][1]["state"], "lost");
  ASSERT_EQ(j["jobs"].size(), 1u);
  const nlohmann::json& job = j["jobs"][0];
  EXPECT_EQ(job["id"], "sbm");
  EXPECT_EQ(job["state"], "running");
  EXPECT_EQ(job["epoch"], 3);
  EXPECT_EQ(job["epochs"], 3);
  EXPECT_EQ(job["step"], 2);
  EXPECT_EQ(job["steps"], 4);
  EXPECT_DOUBLE_EQ(job["loss"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(job["accuracy"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(job["steps_per_second"].get<double>(), 12.0);
  EXPECT_EQ(job["steps_done"], 10);
  EXPECT_EQ(job["last_epoch"]["epoch"], 2);

  board.set_state("sbm", JobState::failed, "trainer 1 on 127.0.0.1:4001 was lost");
  const nlohmann::json after = nlohmann::json::parse(board.jobs_json());
  EXPECT_EQ(after["jobs"][0]["state"], "failed");
  EXPECT_EQ(after["jobs"][0]["message"], "trainer 1 on 127.0.0.1:4001 was lost");
}

TEST(StatusBoardTest, MetricsJsonHoldsTheMetricsFileRecordsAndTheStepCurves) {
  StatusBoard board;
  fill_two_epochs(board);
  EXPECT_FALSE(board.metrics_json("nope").has_value());
  const nlohmann::json m = nlohmann::json::parse(*board.metrics_json("sbm"));
  EXPECT_EQ(m["job"], "sbm");
  ASSERT_EQ(m["epochs"].size(), 2u);
  for (int e = 1; e <= 2; ++e) {
    // Exactly the line metrics.jsonl holds for that epoch.
    const nlohmann::json line = epoch_record(e);
    EXPECT_EQ(m["epochs"][e - 1], line);
  }
  EXPECT_EQ(m["steps"]["stride"], 1);
  EXPECT_EQ(m["steps"]["samples"], 10);
  ASSERT_EQ(m["steps"]["loss"].size(), 10u);
  // x counts steps from the first epoch: step 2 of epoch 3 of 4-step epochs is step 10.
  EXPECT_EQ(m["steps"]["loss"][9][0], 10);
  EXPECT_DOUBLE_EQ(m["steps"]["loss"][9][1].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(m["steps"]["accuracy"][9][1].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(m["steps"]["steps_per_second"][0][1].get<double>(), 11.0);
}

TEST(StatusBoardTest, MemoryIsBoundedPerSeriesPerJobAndInJobs) {
  StatusBoard::Limits limits;
  limits.points_per_series = 16;
  limits.epochs_per_job = 3;
  limits.jobs = 2;
  StatusBoard board(limits);
  board.add_job("a", "", 100);
  for (int e = 1; e <= 10; ++e) {
    for (int s = 1; s <= 50; ++s) board.publish("a", step_event(e, s, 50, 1.0, 0.5, 3.0));
    const EpochMetrics m = epoch_record(e);
    board.publish("a", epoch_event(m));
  }
  const nlohmann::json m = nlohmann::json::parse(*board.metrics_json("a"));
  EXPECT_LE(m["steps"]["loss"].size(), 17u);
  EXPECT_EQ(m["steps"]["samples"], 500);
  ASSERT_EQ(m["epochs"].size(), 3u);  // the last 3
  EXPECT_EQ(m["epochs"][0]["epoch"], 8);

  board.add_job("b", "", 1);
  // Both unfinished: a third job has no room.
  EXPECT_THROW(board.add_job("c", "", 1), Error);
  board.set_state("a", JobState::done);
  board.add_job("c", "", 1);  // drops "a", the oldest finished
  EXPECT_FALSE(board.has_job("a"));
  EXPECT_EQ(board.job_ids(), (std::vector<std::string>{"b", "c"}));
}

TEST(StatusBoardTest, PublishersAndReadersOnManyThreadsLoseNothing) {
  StatusBoard::Limits limits;
  limits.points_per_series = 64;
  StatusBoard board(limits);
  board.add_job("a", "", 1);
  board.add_job("b", "", 1);
  constexpr int kSteps = 20000;
  std::atomic<bool> done{false};
  std::atomic<int64_t> renders{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!done.load()) {
        // Every rendering is whole JSON / a whole scrape, whatever is being published.
        EXPECT_TRUE(nlohmann::json::accept(board.jobs_json()));
        EXPECT_TRUE(nlohmann::json::accept(*board.metrics_json("a")));
        EXPECT_NE(board.prometheus_text().find("partita_node_up"), std::string::npos);
        ++renders;
      }
    });
  }
  auto publisher = [&](const std::string& id) {
    // Once the readers run (on a loaded machine they may start after 20,000 publishes).
    while (renders.load() == 0) std::this_thread::yield();
    for (int s = 1; s <= kSteps; ++s) board.publish(id, step_event(1, s, kSteps, 1.0 / s, 0.5, 100));
  };
  std::thread pa(publisher, "a"), pb(publisher, "b");
  pa.join();
  pb.join();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(renders.load(), 0);
  const nlohmann::json j = nlohmann::json::parse(board.jobs_json());
  for (const auto& job : j["jobs"]) {
    EXPECT_EQ(job["steps_done"], kSteps) << job["id"];
    EXPECT_EQ(job["step"], kSteps);
  }
  const nlohmann::json m = nlohmann::json::parse(*board.metrics_json("b"));
  EXPECT_EQ(m["steps"]["samples"], kSteps);
  EXPECT_LE(m["steps"]["loss"].size(), 65u);
  EXPECT_EQ(m["steps"]["loss"].back()[0], kSteps);
}

TEST(StatusBoardTest, RefusesBadIdsAndUnknownJobs) {
  StatusBoard board;
  EXPECT_THROW(board.add_job("has space", "", 1), UsageError);
  EXPECT_THROW(board.add_job("", "", 1), UsageError);
  EXPECT_THROW(board.add_job(std::string(65, 'a'), "", 1), UsageError);
  board.add_job("x", "", 1);
  EXPECT_THROW(board.add_job("x", "", 1), UsageError);  // still preparing
  try {
    board.publish("y", step_event(1, 1, 1, 0, 0, 0));
    FAIL() << "publishing to an unknown job must throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(make_job_id("runs/my job?"), "runs-my-job-");
  EXPECT_EQ(make_job_id(""), "job");
  EXPECT_TRUE(is_valid_job_id(make_job_id(std::string(100, '#'))));
}

// One parsed line of a scrape: HELP, TYPE or a sample.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the text exposition format 0.0.4 strictly: every line is "# HELP name text",
// "# TYPE name type" or "name{label="value",...} number"; a family's HELP and TYPE come
// before its samples, once each. Fails the test on anything else.
std::vector<Sample> parse_scrape(const std::string& text) {
  static const std::regex help(R"(# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+)");
  static const std::regex type(R"(# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|untyped))");
  static const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (\S+))");
  static const std::regex label(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)\")");
  std::vector<Sample> samples;
  std::set<std::string> helped, typed, seen_families, histograms;
  std::string current;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "the scrape must end with a line feed";
  while (std::getline(in, line)) {
    ++number;
    std::smatch m;
    if (std::regex_match(line, m, help)) {
      EXPECT_TRUE(helped.insert(m[1]).second) << "line " << number << ": second HELP for " << m[1];
      current = m[1];
    } else if (std::regex_match(line, m, type)) {
      EXPECT_TRUE(typed.insert(m[1]).second) << "line " << number << ": second TYPE for " << m[1];
      EXPECT_EQ(m[1], current) << "line " << number << ": TYPE of another family than its HELP";
      if (m[2] == "histogram") histograms.insert(m[1]);
      if (m[2] == "counter") {
        EXPECT_TRUE(std::regex_search(std::string(m[1]), std::regex("_total$"))) << "line " << number << ": a counter without _total";
      }
    } else if (std::regex_match(line, m, sample)) {
      Sample s;
      s.name = m[1];
      // A histogram's samples are its family's name with _bucket, _sum or _count.
      const bool of_histogram = histograms.count(current) &&
                                (s.name == current + "_bucket" || s.name == current + "_sum" || s.name == current + "_count");
      EXPECT_TRUE(s.name == current || of_histogram) << "line " << number << ": a sample outside its family";
      EXPECT_TRUE(helped.count(current) && typed.count(current)) << "line " << number << ": no HELP/TYPE before " << s.name;
      const std::string labels = m[2];
      for (std::sregex_iterator it(labels.begin(), labels.end(), label), end; it != end; ++it) {
        s.labels[(*it)[1]] = (*it)[2];
      }
      const std::string value = m[3];
      size_t used = 0;
      if (value == "NaN" || value == "+Inf" || value == "-Inf") {
        used = value.size();
      } else {
        s.value = std::stod(value, &used);
      }
      EXPECT_EQ(used, value.size()) << "line " << number << ": not a number: " << value;
      samples.push_back(s);
    } else {
      ADD_FAILURE() << "line " << number << " is not HELP, TYPE or a sample: '" << line << "'";
    }
  }
  return samples;
}

double value_of(const std::vector<Sample>& samples, const std::string& name,
                const std::map<std::string, std::string>& labels) {
  for (const Sample& s : samples) {
    if (s.name == name && s.labels == labels) return s.value;
  }
  ADD_FAILURE() << "no sample " << name;
  return -1;
}

TEST(StatusBoardTest, PrometheusScrapeParsesLineByLineWithTheSameFigures) {
  StatusBoard board;
  fill_two_epochs(board);
  board.add_job("other", "", 1);
  const std::vector<Sample> samples = parse_scrape(board.prometheus_text());
  const std::map<std::string, std::string> sbm = {{"job_id", "sbm"}};
  EXPECT_EQ(value_of(samples, "partita_job_state", {{"job_id", "sbm"}, {"state", "running"}}), 1);
  EXPECT_EQ(value_of(samples, "partita_job_state", {{"job_id", "sbm"}, {"state", "done"}}), 0);
  EXPECT_EQ(value_of(samples, "partita_job_state", {{"job_id", "other"}, {"state", "preparing"}}), 1);
  EXPECT_EQ(value_of(samples, "partita_job_epoch", sbm), 3);
  EXPECT_EQ(value_of(samples, "partita_job_planned_epochs", sbm), 3);
  EXPECT_EQ(value_of(samples, "partita_job_epoch_step", sbm), 2);
  EXPECT_EQ(value_of(samples, "partita_job_steps_total", sbm), 10);
  EXPECT_DOUBLE_EQ(value_of(samples, "partita_job_loss", sbm), 0.2);
  EXPECT_DOUBLE_EQ(value_of(samples, "partita_job_accuracy_ratio", sbm), 0.8);
  EXPECT_DOUBLE_EQ(value_of(samples, "partita_job_steps_per_second", sbm), 12.0);
  // A job without a step has no loss sample (not a 0 it never had).
  EXPECT_EQ(std::count_if(samples.begin(), samples.end(),
                          [](const Sample& x) { return x.name == "partita_job_loss" && x.labels.at("job_id") == "other"; }),
            0);
  // No label named "job": Prometheus sets that one on every series it scrapes.
  for (const Sample& x : samples) EXPECT_EQ(x.labels.count("job"), 0u) << x.name;
  // Every field of the last metrics.jsonl line, with its value.
  const nlohmann::json line = epoch_record(2);
  for (const auto& [field, value] : line.items()) {
    const std::string name = field == "epoch" ? "partita_job_last_epoch" : "partita_job_last_epoch_" + field;
    EXPECT_DOUBLE_EQ(value_of(samples, name, sbm), value.get<double>()) << field;
  }
  EXPECT_EQ(value_of(samples, "partita_node_up", {{"node", "127.0.0.1:4000"}}), 1);
  EXPECT_EQ(value_of(samples, "partita_node_up", {{"node", "127.0.0.1:4001"}}), 0);
  // This process's own figures.
  EXPECT_GT(value_of(samples, "process_cpu_seconds_total", {}), 0);
  EXPECT_GT(value_of(samples, "process_resident_memory_bytes", {}), 1 << 20);
  EXPECT_GT(value_of(samples, "process_open_fds", {}), 2);
  EXPECT_GT(value_of(samples, "process_start_time_seconds", {}), 1.5e9);
}

// Step durations: each step's seconds since the previous one, in cumulative buckets.
TEST(StatusBoardTest, StepDurationsAreAHistogram) {
  StatusBoard board;
  board.add_job("h", "", 2);
  // Epoch 1: steps end at 0.002, 0.005, 0.5 s (durations 0.002, 0.003, 0.495); epoch 2: 3 s.
  const double ends[] = {0.002, 0.005, 0.5};
  for (int s = 1; s <= 3; ++s) {
    JobProgress p = step_event(1, s, 3, 1, 0.5, 1);
    p.seconds = ends[s - 1];
    board.publish("h", p);
  }
  JobProgress p = step_event(2, 1, 3, 1, 0.5, 1);
  p.seconds = 3;
  board.publish("h", p);
  const std::vector<Sample> samples = parse_scrape(board.prometheus_text());
  auto bucket = [&](const std::string& le) {
    return value_of(samples, "partita_job_step_duration_seconds_bucket", {{"job_id", "h"}, {"le", le}});
  };
  EXPECT_EQ(bucket("0.001"), 0);
  EXPECT_EQ(bucket("0.0025"), 1);
  EXPECT_EQ(bucket("0.005"), 2);
  EXPECT_EQ(bucket("0.25"), 2);
  EXPECT_EQ(bucket("0.5"), 3);
  EXPECT_EQ(bucket("2.5"), 3);
  EXPECT_EQ(bucket("5"), 4);
  EXPECT_EQ(bucket("+Inf"), 4);
  EXPECT_EQ(value_of(samples, "partita_job_step_duration_seconds_count", {{"job_id", "h"}}), 4);
  EXPECT_NEAR(value_of(samples, "partita_job_step_duration_seconds_sum", {{"job_id", "h"}}), 3.5, 1e-9);
}

// A live cluster node's resources, from its heartbeat, as gauges and counters per node.
TEST(StatusBoardTest, ANodesResourcesAreExposedPerNode) {
  runtime::ClusterStatus status;
  runtime::NodeStatus n;
  n.member = 1;
  n.alive = true;
  n.info.name = "node-a";
  n.info.cores = 4;
  n.load.cpu_seconds = 12.5;
  n.load.resident_bytes = 300 << 20;
  n.load.threads = 17;
  n.load.network_received_bytes = 1000;
  n.load.network_sent_bytes = 2000;
  n.load.staging_cache_bytes = 4096;
  n.ms_since_heartbeat = 250;
  status.nodes = {n};
  StatusBoard board;
  board.set_nodes(cluster_nodes(status));
  const std::vector<Sample> samples = parse_scrape(board.prometheus_text());
  const std::map<std::string, std::string> a = {{"node", "node-a"}};
  EXPECT_EQ(value_of(samples, "partita_node_cores", a), 4);
  EXPECT_EQ(value_of(samples, "partita_node_cpu_seconds_total", a), 12.5);
  EXPECT_EQ(value_of(samples, "partita_node_resident_memory_bytes", a), 300 << 20);
  EXPECT_EQ(value_of(samples, "partita_node_threads", a), 17);
  EXPECT_EQ(value_of(samples, "partita_node_network_receive_bytes_total", a), 1000);
  EXPECT_EQ(value_of(samples, "partita_node_network_transmit_bytes_total", a), 2000);
  EXPECT_EQ(value_of(samples, "partita_node_staging_cache_bytes", a), 4096);
  EXPECT_EQ(value_of(samples, "partita_node_heartbeat_age_seconds", a), 0.25);
}

TEST(StatusBoardTest, PrometheusLabelValuesAreEscaped) {
  StatusBoard board;
  board.set_nodes({{"odd \"name\" \\ here\nnext", "up", ""}});
  const std::string text = board.prometheus_text();
  EXPECT_NE(text.find(R"(partita_node_up{node="odd \"name\" \\ here\nnext"} 1)"), std::string::npos) << text;
  parse_scrape(text);
}

TEST(MetricsRecordTest, ReadsBackWhatTheDriverWritesAndNamesBadLines) {
  partita::testing::TempDir tmp;
  const std::string path = tmp / "metrics.jsonl";
  {
    std::ofstream out(path);
    for (int e = 1; e <= 3; ++e) out << nlohmann::json(epoch_record(e)).dump() << "\n";
  }
  const std::vector<EpochMetrics> epochs = read_metrics_file(path);
  ASSERT_EQ(epochs.size(), 3u);
  EXPECT_EQ(epochs[2].epoch, 3);
  EXPECT_DOUBLE_EQ(epochs[2].val_accuracy, epoch_record(3).val_accuracy);

  {
    std::ofstream out(path);
    out << nlohmann::json(epoch_record(1)).dump() << "\n{\"epoch\": 2, \"steps\": 4\n";
  }
  try {
    read_metrics_file(path);
    FAIL() << "a malformed line must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2:"), std::string::npos) << e.what();
  }
  {
    std::ofstream out(path);
    out << "\n{\"epoch\": 1, \"steps\": 4}\n";
  }
  try {
    read_metrics_file(path);
    FAIL() << "a line without its fields must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2: missing field 'seconds'"), std::string::npos) << e.what();
  }
}

// A link-prediction epoch: its ranking metrics round-trip through the metrics line, and
// reach /metrics under valid Prometheus names ("test.hits@10" -> "test_hits_at_10").
TEST(StatusBoardTest, LinkPredictionRecordsRoundTripAndScrapeUnderValidNames) {
  EpochMetrics m;
  m.epoch = 1;
  m.steps = 4;
  m.seconds = 2.0;
  m.train_loss = 0.5;
  m.ranking = {{"test.mrr", 0.3}, {"test.hits@10", 0.5}};
  const EpochMetrics back = epoch_metrics_from_json(nlohmann::json(m));
  EXPECT_EQ(back.ranking_metric("test.mrr"), 0.3);
  EXPECT_EQ(back.ranking_metric("test.hits@10"), 0.5);
  StatusBoard board;
  board.add_job("fb", "", 1);
  board.publish("fb", epoch_event(m));
  const std::vector<Sample> samples = parse_scrape(board.prometheus_text());
  EXPECT_DOUBLE_EQ(value_of(samples, "partita_job_last_epoch_test_hits_at_10", {{"job_id", "fb"}}), 0.5);
  EXPECT_DOUBLE_EQ(value_of(samples, "partita_job_last_epoch_test_mrr", {{"job_id", "fb"}}), 0.3);
}

// A node that came back is a newer member under its old name: the page and /metrics show
// it once, as it is now (Prometheus refuses a scrape with the same series twice).
TEST(StatusBoardTest, ARejoinedNodeIsShownOnceAsItIsNow) {
  runtime::ClusterStatus status;
  runtime::NodeStatus old_member;
  old_member.member = 1;
  old_member.info.name = "node-a";
  old_member.alive = false;
  old_member.lost = "no heartbeat for 5000 ms";
  runtime::NodeStatus other = old_member;
  other.member = 2;
  other.info.name = "node-b";
  runtime::NodeStatus new_member = old_member;
  new_member.member = 3;
  new_member.alive = true;
  new_member.lost = "";
  status.nodes = {old_member, other, new_member};
  const std::vector<NodeStatus> nodes = cluster_nodes(status);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "node-a");
  EXPECT_EQ(nodes[0].state, "up");
  EXPECT_EQ(nodes[1].state, "lost");
  StatusBoard board;
  board.set_nodes(nodes);
  const std::vector<Sample> samples = parse_scrape(board.prometheus_text());
  EXPECT_EQ(value_of(samples, "partita_node_up", {{"node", "node-a"}}), 1);
  EXPECT_EQ(std::count_if(samples.begin(), samples.end(), [](const Sample& x) { return x.name == "partita_node_up"; }), 2);
}

}  // namespace
}  // namespace partita::dashboard

namespace partita::dashboard {
namespace {

// A head that runs job after job: the feed keeps only what the head's status still lists,
// however many jobs came and went (the head bounds its own list).
TEST(ClusterJobsFeedTest, ForgetsTheJobsTheHeadNoLongerLists) {
  auto board = std::make_shared<StatusBoard>();
  ClusterJobsFeed feed(board);
  testing::TempDir tmp;
  for (int n = 1; n <= 200; ++n) {
    runtime::ClusterStatus status;
    for (int k = std::max(1, n - 2); k <= n; ++k) {  // the last three, the newest running
      runtime::JobStatus j;
      j.id = "job-" + std::to_string(k);
      j.submitted = true;
      j.output = tmp.path();
      j.epochs = 2;
      j.epoch = 1;
      j.steps = 10;
      j.step = 5;
      j.state = k == n ? "running" : "done";
      status.jobs.push_back(j);
    }
    feed.update(status);
    EXPECT_LE(feed.jobs_tracked(), 3u) << "after job " << n;
  }
  EXPECT_EQ(feed.jobs_tracked(), 3u);
}

// A driver's reports carry every step since the previous one: the page has each, however
// the reports and the head's status reads interleave; a job that fails keeps its last
// step's figures.
TEST(ClusterJobsFeedTest, EveryReportedStepIsOnThePageAndAFailedJobKeepsItsFigures) {
  auto board = std::make_shared<StatusBoard>();
  ClusterJobsFeed feed(board);
  testing::TempDir tmp;
  runtime::JobStatus report;
  report.id = "job-1";
  report.submitted = true;
  report.output = tmp.path();
  report.state = "running";
  report.epochs = 2;
  int64_t sent = 0;
  for (int r = 0; r < 7; ++r) {  // 7 reports of 0..6 steps: 21 steps, the first report none
    report.new_steps.clear();
    for (int k = 0; k < r; ++k) {
      ++sent;
      const int epoch = sent <= 12 ? 1 : 2;
      const int64_t step = epoch == 1 ? sent : sent - 12;
      report.new_steps.push_back({epoch, step, 12, 1.0 / static_cast<double>(sent), 0.5, 0.1 * static_cast<double>(step)});
    }
    report.epoch = report.new_steps.empty() ? 0 : report.new_steps.back().epoch;
    feed.on_report(report);
    runtime::ClusterStatus status;
    runtime::JobStatus listed = report;
    listed.new_steps.clear();
    status.jobs = {listed};
    feed.update(status);
  }
  ASSERT_EQ(sent, 21);
  nlohmann::json curves = nlohmann::json::parse(*board->metrics_json("job-1"));
  EXPECT_EQ(curves["steps"]["samples"], 21);
  ASSERT_EQ(curves["steps"]["loss"].size(), 21u);
  for (int i = 0; i < 21; ++i) EXPECT_EQ(curves["steps"]["loss"][i][0].get<double>(), i + 1.0);

  runtime::ClusterStatus status;
  runtime::JobStatus failed = report;
  failed.new_steps.clear();
  failed.state = "failed";
  failed.message = "trainer 1 lost";
  status.jobs = {failed};
  feed.update(status);
  const nlohmann::json job = nlohmann::json::parse(board->jobs_json())["jobs"][0];
  EXPECT_EQ(job["state"], "failed");
  EXPECT_EQ(job["steps_done"], 21);
  EXPECT_DOUBLE_EQ(job["loss"].get<double>(), 1.0 / 21);
  EXPECT_EQ(job["epoch"], 2);
  EXPECT_EQ(job["step"], 9);
}

// A job that never reached a step shows no figures, not a loss of 0.
TEST(StatusBoardTest, AJobWithoutAStepHasNoLoss) {
  StatusBoard board;
  board.add_job("early", "", 3);
  board.set_state("early", JobState::failed, "no data");
  const nlohmann::json job = nlohmann::json::parse(board.jobs_json())["jobs"][0];
  EXPECT_TRUE(job["loss"].is_null()) << job.dump();
  EXPECT_TRUE(job["accuracy"].is_null()) << job.dump();
}

}  // namespace
}  // namespace partita::dashboard

namespace partita::dashboard {
namespace {

// /api/nodes: each live node's resources now and over time, rates from consecutive
// heartbeats; a job's actors by node.
TEST(StatusBoardTest, NodesOverTimeAndAJobsActorsByNode) {
  StatusBoard board;
  runtime::ClusterStatus status;
  runtime::NodeStatus n;
  n.member = 1;
  n.alive = true;
  n.info.name = "node-a";
  for (int beat = 1; beat <= 3; ++beat) {
    n.load.cpu_seconds = beat;
    n.load.resident_bytes = beat << 20;
    n.load.threads = 10 + beat;
    status.nodes = {n};
    board.set_nodes(cluster_nodes(status));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const nlohmann::json nodes = nlohmann::json::parse(board.nodes_json())["nodes"];
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0]["resources"]["threads"], 13);
  EXPECT_EQ(nodes[0]["history"]["resident_bytes"].size(), 3u);
  EXPECT_EQ(nodes[0]["history"]["threads"][2][1], 13);
  ASSERT_EQ(nodes[0]["history"]["cpu_cores"].size(), 2u) << "a rate from each heartbeat after the first";
  EXPECT_GT(nodes[0]["history"]["cpu_cores"][0][1].get<double>(), 0);
  board.set_nodes({});
  EXPECT_TRUE(nlohmann::json::parse(board.nodes_json())["nodes"].empty());

  board.add_job("j", "", 1);
  board.set_job_nodes("j", {{"node-a", 3}, {"node-b", 2}});
  board.set_job_nodes("unknown", {{"node-a", 1}});  // ignored
  const nlohmann::json job = nlohmann::json::parse(board.jobs_json())["jobs"][0];
  ASSERT_EQ(job["actors_by_node"].size(), 2u);
  EXPECT_EQ(job["actors_by_node"][1]["node"], "node-b");
  EXPECT_EQ(job["actors_by_node"][1]["actors"], 2);
}

}  // namespace
}  // namespace partita::dashboard
