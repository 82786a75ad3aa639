// The rate of refusal log lines: a burst, then one a second, each line counting those left
// out, and flush() summing up a burst's tail.
#include "base/refusal_log.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <sstream>
#include <string>

#include "base/error.h"
#include "test_util.h"

namespace partita {
namespace {

using Clock = RefusalLog::Clock;
using std::chrono::milliseconds;

TEST(RefusalLogTest, LogsABurstThenOneASecondCountingTheRest) {
  testing::LogCapture capture;
  RefusalLog log("gate");
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 1000; ++i) log.refused("refused " + std::to_string(i), start);
  EXPECT_EQ(log.unsaid(), 990u);
  std::vector<std::string> lines = capture.lines();
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[0], "warning refused 0");
  EXPECT_EQ(lines[9], "warning refused 9");

  // Half a second later there is no token yet; over a second later there is one, and the
  // line says how many were left out.
  log.refused("refused 1000", start + milliseconds(500));
  EXPECT_EQ(capture.lines().size(), 10u);
  log.refused("refused 1001", start + milliseconds(1100));
  lines = capture.lines();
  ASSERT_EQ(lines.size(), 11u);
  EXPECT_EQ(lines[10], "warning refused 1001 (and 991 more refusals not logged since the last one)");
  EXPECT_EQ(log.unsaid(), 0u);
}

TEST(RefusalLogTest, FlushSumsUpWhatWasLeftOut) {
  testing::LogCapture capture;
  RefusalLog log("status page 127.0.0.1:8265", spdlog::level::debug, 2, 1);
  const Clock::time_point start = Clock::now();
  log.flush(start);  // nothing left out: nothing said
  for (int i = 0; i < 50; ++i) log.refused("refused", start);
  EXPECT_EQ(capture.lines().size(), 2u);
  log.flush(start + milliseconds(100));  // no token: waits
  EXPECT_EQ(capture.lines().size(), 2u);
  log.flush(start + milliseconds(1100));
  std::vector<std::string> lines = capture.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "debug status page 127.0.0.1:8265: 48 more refusals not logged since the last one");
  // At the end, a forced flush says the rest whatever the budget.
  for (int i = 0; i < 5; ++i) log.refused("refused", start + milliseconds(1100));
  log.flush(start + milliseconds(1100), /*force=*/true);
  lines = capture.lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], "debug status page 127.0.0.1:8265: 5 more refusals not logged since the last one");
  log.flush(start + milliseconds(1100), true);
  EXPECT_EQ(capture.lines().size(), 4u);
}

// However many refusals come, the lines stay within the burst plus one a second.
TEST(RefusalLogTest, AFloodLogsBoundedLinesAndLosesNoCount) {
  testing::LogCapture capture;
  RefusalLog log("gate");
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 100000; ++i) log.refused("refused", start + milliseconds(i / 10));  // 10 s of them
  log.flush(start + milliseconds(10000), true);
  size_t counted = 0;
  const std::vector<std::string> lines = capture.lines();
  for (const std::string& line : lines) {
    ++counted;
    if (size_t at = line.find("(and "); at != std::string::npos) counted += std::stoul(line.substr(at + 5));
    if (size_t at = line.find("gate: "); at != std::string::npos) counted += std::stoul(line.substr(at + 6)) - 1;
  }
  EXPECT_LE(lines.size(), 10u + 10u + 1u);
  EXPECT_EQ(counted, 100000u);
}

TEST(RefusalLogTest, ABurstBelowOneLineIsAUsageError) {
  EXPECT_THROW(RefusalLog("gate", spdlog::level::warn, 0, 1), UsageError);
  EXPECT_THROW(RefusalLog("gate", spdlog::level::warn, 10, 0), UsageError);
}

}  // namespace
}  // namespace partita
