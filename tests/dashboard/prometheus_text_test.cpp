// The text exposition format as Prometheus reads it: escaping, the names and suffixes it
// requires, histograms; and a status board's whole /metrics checked by Prometheus's own
// `promtool check metrics` (Debian's prometheus package), which parses it and lints the
// names against Prometheus's conventions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"
#include "base/subprocess.h"
#include "dashboard/prometheus_text.h"
#include "dashboard/status_board.h"
#include "test_util.h"

namespace partita::dashboard {
namespace {

TEST(PrometheusTextTest, LabelValuesAndHelpAreEscaped) {
  EXPECT_EQ(escape_label_value(R"(a "b" \ c)" "\nd"), R"(a \"b\" \\ c\nd)");
  PrometheusText out;
  out.family("x_bytes", PrometheusText::Type::gauge, "line\none \\ two");
  out.sample({{"node", "n\"1"}, {"job_id", "a\\b"}}, 3);
  EXPECT_EQ(out.str(), "# HELP x_bytes line\\none \\\\ two\n# TYPE x_bytes gauge\nx_bytes{node=\"n\\\"1\",job_id=\"a\\\\b\"} 3\n");
}

TEST(PrometheusTextTest, ValuesAreGoFloats) {
  EXPECT_EQ(format_sample_value(0.25), "0.25");
  EXPECT_EQ(format_sample_value(1e21), "1e+21");
  EXPECT_EQ(format_sample_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_sample_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_sample_value(std::nan("")), "NaN");
}

TEST(PrometheusTextTest, RefusesWhatPrometheusWouldRefuseOrRename) {
  PrometheusText out;
  EXPECT_THROW(out.family("9lives", PrometheusText::Type::gauge, "h"), UsageError);
  EXPECT_THROW(out.family("a-b", PrometheusText::Type::gauge, "h"), UsageError);
  EXPECT_THROW(out.family("steps", PrometheusText::Type::counter, "a counter without _total"), UsageError);
  EXPECT_THROW(out.sample({}, 1), UsageError);  // no family yet
  out.family("a_total", PrometheusText::Type::counter, "h");
  EXPECT_THROW(out.family("a_total", PrometheusText::Type::counter, "twice"), UsageError);
  EXPECT_THROW(out.sample({{"job", "x"}}, 1), UsageError);       // Prometheus's own label
  EXPECT_THROW(out.sample({{"instance", "x"}}, 1), UsageError);  // idem
  EXPECT_THROW(out.sample({{"__name", "x"}}, 1), UsageError);    // reserved
  EXPECT_THROW(out.sample({{"a:b", "x"}}, 1), UsageError);
  EXPECT_THROW(out.histogram({}, {1}, {0, 0}, 0), UsageError);  // not a histogram family
  EXPECT_TRUE(is_valid_metric_name("ns:sub_total"));
  EXPECT_FALSE(is_valid_label_name("ns:sub"));
}

TEST(PrometheusTextTest, AHistogramIsCumulativeWithInfSumAndCount) {
  PrometheusText out;
  out.family("d_seconds", PrometheusText::Type::histogram, "h");
  out.histogram({{"job_id", "j"}}, {0.5, 1}, {2, 0, 3}, 7.5);
  EXPECT_EQ(out.str(),
            "# HELP d_seconds h\n# TYPE d_seconds histogram\n"
            "d_seconds_bucket{job_id=\"j\",le=\"0.5\"} 2\n"
            "d_seconds_bucket{job_id=\"j\",le=\"1\"} 2\n"
            "d_seconds_bucket{job_id=\"j\",le=\"+Inf\"} 5\n"
            "d_seconds_sum{job_id=\"j\"} 7.5\n"
            "d_seconds_count{job_id=\"j\"} 5\n");
  EXPECT_THROW(out.histogram({}, {1, 0.5}, {0, 0, 0}, 0), UsageError);  // bounds not ascending
  EXPECT_THROW(out.histogram({}, {1}, {0}, 0), UsageError);             // no +Inf count
}

// A board with everything it exposes: a running job with steps and an epoch record, a
// failed one, a job without a step, a live node with its resources and a lost one.
std::string full_scrape() {
  StatusBoard board;
  board.add_job("sbm-1", "", 2);
  for (int s = 1; s <= 5; ++s) {
    JobProgress p;
    p.epoch = 1;
    p.epochs = 2;
    p.step = s;
    p.steps = 5;
    p.loss = 1.0 / s;
    p.accuracy = 0.1 * s;
    p.seconds = 0.01 * s;
    p.steps_per_second = s / p.seconds;
    board.publish("sbm-1", p);
  }
  EpochMetrics m;
  m.epoch = 1;
  m.steps = 5;
  m.seconds = 0.05;
  m.train_loss = 0.5;
  m.ranking = {{"test.hits@10", 0.5}};
  JobProgress e;
  e.event = JobProgress::Event::epoch;
  e.epoch = 1;
  e.epochs = 2;
  e.step = e.steps = 5;
  e.metrics = &m;
  board.publish("sbm-1", e);
  board.add_job("failed.job-2", "", 1);
  board.set_state("failed.job-2", JobState::failed, "no data");
  runtime::ClusterStatus status;
  runtime::NodeStatus up;
  up.member = 1;
  up.alive = true;
  up.info.name = "node \"a\"\\";
  up.load.cpu_seconds = 2;
  up.load.resident_bytes = 1 << 20;
  runtime::NodeStatus lost;
  lost.member = 2;
  lost.info.name = "node-b";
  lost.lost = "no heartbeat";
  status.nodes = {up, lost};
  board.set_nodes(cluster_nodes(status));
  return board.prometheus_text();
}

TEST(PrometheusTextTest, PromtoolAcceptsAStatusBoardsScrape) {
  const ProcessResult which = run_process({"/bin/sh", "-c", "command -v promtool"}, 10);
  ASSERT_EQ(which.exit_code, 0) << "promtool not found: install Debian's prometheus package (scripts/setup.sh does)";
  testing::TempDir tmp;
  const std::string file = tmp / "metrics.txt";
  testing::write_text(file, full_scrape());
  const ProcessResult r = run_process({"/bin/sh", "-c", "promtool check metrics < '" + file + "'"}, 30);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << "\n" << testing::read_text(file);
  // promtool prints its lint findings (a name against the conventions) and nothing else.
  EXPECT_EQ(r.out + r.err, "") << testing::read_text(file);
}

}  // namespace
}  // namespace partita::dashboard
