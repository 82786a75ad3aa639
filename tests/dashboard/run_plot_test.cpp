// `partita plot`: a run folder's metrics.jsonl drawn into PNG and SVG by PLplot, headless,
// and the named errors for bad input, through the library and the command line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "dashboard/run_plot.h"
#include "test_util.h"
#include "training/metrics_record.h"

namespace partita::dashboard {
namespace {

namespace fs = std::filesystem;

class RunPlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(run_);
    std::ofstream out(run_ + "/metrics.jsonl");
    for (int e = 1; e <= 4; ++e) {
      EpochMetrics m;
      m.epoch = e;
      m.steps = 10;
      m.seconds = 1;
      m.batches_per_second = 20 + e;
      m.train_loss = 2.0 / e;
      m.val_loss = 2.1 / e;
      m.test_loss = 2.2 / e;
      m.train_accuracy = 0.2 * e;
      m.val_accuracy = 0.19 * e;
      m.test_accuracy = 0.18 * e;
      out << nlohmann::json(m).dump() << "\n";
    }
  }
  std::string head(const std::string& path, size_t n) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes(n, '\0');
    in.read(&bytes[0], static_cast<std::streamsize>(n));
    bytes.resize(static_cast<size_t>(in.gcount()));
    return bytes;
  }
  testing::TempDir tmp_;
  std::string run_ = tmp_ / "runs/sbm";
};

TEST_F(RunPlotTest, DrawsPngAndSvgFromTheMetricsFile) {
  plot_run(run_, tmp_ / "curves.png");
  EXPECT_EQ(head(tmp_ / "curves.png", 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(fs::file_size(tmp_ / "curves.png"), 5000u);  // three panels, not an empty image

  plot_run(run_, tmp_ / "curves.SVG");
  const std::string svg = testing::read_text(tmp_ / "curves.SVG");
  EXPECT_CONTAINS(svg, "<svg");
  EXPECT_CONTAINS(svg, "</svg>");
  EXPECT_GT(svg.size(), 5000u);
}

TEST_F(RunPlotTest, BadInputGetsNamedErrors) {
  // A folder without metrics.jsonl.
  fs::create_directories(tmp_ / "empty");
  try {
    plot_run(tmp_ / "empty", tmp_ / "x.png");
    FAIL();
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), tmp_ / "empty");
    EXPECT_CONTAINS(e.what(), "holds no metrics.jsonl");
  }
  // A malformed line: its number.
  { std::ofstream(run_ + "/metrics.jsonl", std::ios::app) << "{\"epoch\": 5, \"steps\": \n"; }
  try {
    plot_run(run_, tmp_ / "x.png");
    FAIL();
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), run_ + "/metrics.jsonl:5:");
  }
  // An unknown extension: a usage error, before anything is read or written.
  EXPECT_THROW(plot_run(run_, tmp_ / "x.jpg"), UsageError);
  EXPECT_FALSE(fs::exists(tmp_ / "x.jpg"));
  try {
    plot_format("curves");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "(no extension)");
  }
  // An output that cannot be written.
  EXPECT_THROW(plot_epochs({EpochMetrics{}}, "t", tmp_ / "no/such/folder/x.png"), Error);
  EXPECT_THROW(plot_epochs({}, "t", tmp_ / "x.png"), UsageError);
}

TEST_F(RunPlotTest, TheCommandWritesTheImageAndExitsWithTheErrorsCodes) {
  testing::CommandResult r = testing::run_partita({"plot", run_, "-o", tmp_ / "c.svg"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(tmp_ / "c.svg"));
  r = testing::run_partita({"plot", run_, "-o", tmp_ / "c.gif"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "unknown image format '.gif'");
  r = testing::run_partita({"plot", tmp_.path(), "-o", tmp_ / "c.png"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "holds no metrics.jsonl");
}

}  // namespace
}  // namespace partita::dashboard
