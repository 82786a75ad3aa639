// The rounds every benchmark runs in (bench/harness.h): cases interleaved round by round,
// warm-up repetitions run but not counted, the median over recorded rounds, ratios as the
// median of the rounds' own ratios, and one table naming every case.
#include "bench/harness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/stats.h"

namespace partita::bench {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  return text;
}

RoundsOptions quiet(int warmup, int rounds) {
  RoundsOptions options;
  options.warmup = warmup;
  options.rounds = rounds;
  options.out = nullptr;
  return options;
}

// A case that logs "<name>" to `log` when it runs and "+<name>" when set up, returning the
// values of `figures` in turn.
Case logged(const std::string& name, Role role, std::vector<std::string>& log, std::vector<double> figures) {
  auto next = std::make_shared<size_t>(0);
  Case c;
  c.name = name;
  c.role = role;
  c.setup = [&log, name] { log.push_back("+" + name); };
  c.run = [&log, name, figures, next] {
    log.push_back(name);
    return figures.at((*next)++);
  };
  return c;
}

TEST(BenchHarnessTest, RoundsInterleaveTheCasesWithSetUpBeforeEachRepetition) {
  std::vector<std::string> log;
  const std::vector<Case> cases{logged("a", Role::kKernel, log, {1, 1, 1}),
                                logged("b", Role::kBaseline, log, {1, 1, 1})};
  run_cases(quiet(1, 2), cases);
  EXPECT_EQ(log, (std::vector<std::string>{"+a", "a", "+b", "b", "+a", "a", "+b", "b", "+a", "a", "+b", "b"}));
}

TEST(BenchHarnessTest, AlternatingRoundsReverseTheOrderOfOddRounds) {
  std::vector<std::string> log;
  std::vector<Case> cases{logged("a", Role::kKernel, log, {1, 1, 1}), logged("b", Role::kKernel, log, {1, 1, 1})};
  for (Case& c : cases) c.setup = nullptr;
  RoundsOptions options = quiet(1, 2);
  options.alternate = true;
  run_cases(options, cases);
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b", "b", "a", "a", "b"}));
}

TEST(BenchHarnessTest, WarmUpRepetitionsRunButAreNotRecorded) {
  std::vector<std::string> log;
  const Results r = run_cases(quiet(2, 3), {logged("a", Role::kKernel, log, {100, 200, 1, 2, 3})});
  EXPECT_EQ(log.size(), 10u);  // 5 set-ups, 5 runs
  EXPECT_EQ(r.at("a").rounds, (std::vector<double>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(r.median("a"), 2);
  // A case can tell its recorded repetitions from the warm-up ones, for figures of its own.
  std::vector<bool> seen;
  run_cases(quiet(2, 3), {{"b", Role::kKernel, [&] {
                             seen.push_back(recording());
                             return 1.0;
                           }}});
  EXPECT_EQ(seen, (std::vector<bool>{false, false, true, true, true}));
  EXPECT_FALSE(recording());
}

TEST(BenchHarnessTest, RatiosAreTheMedianOfTheRoundsOwnRatios) {
  std::vector<std::string> log;
  // Round ratios a/b: 2, 3, 10 (median 3); the ratio of the medians would be 4/1.5.
  const Results r = run_cases(quiet(0, 3), {logged("a", Role::kKernel, log, {2, 6, 4}),
                                            logged("b", Role::kBaseline, log, {1, 2, 0.4}),
                                            logged("floor", Role::kFloor, log, {1, 1, 2})});
  EXPECT_DOUBLE_EQ(r.median("a"), 4);
  EXPECT_DOUBLE_EQ(r.median("b"), 1);
  EXPECT_DOUBLE_EQ(r.ratio("a"), 3);
  EXPECT_DOUBLE_EQ(r.ratio("b"), 1);
  EXPECT_DOUBLE_EQ(r.at("a").to_floor, 2);  // 2, 6, 2
  EXPECT_DOUBLE_EQ(r.ratio_between("b", "floor"), 1);  // 1, 2, 0.2
  EXPECT_THROW(r.at("c"), Error);
}

TEST(BenchHarnessTest, AConstantFloorDividesTheMedian) {
  std::vector<std::string> log;
  RoundsOptions options = quiet(0, 2);
  options.floor = 4;
  const Results r = run_cases(options, {logged("a", Role::kKernel, log, {6, 10})});
  EXPECT_DOUBLE_EQ(r.at("a").to_floor, 2);
  EXPECT_DOUBLE_EQ(r.ratio("a"), 0);  // no baseline
}

TEST(BenchHarnessTest, MedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(BenchHarnessTest, TheTableShowsEveryRoundTheMedianTheRatiosAndTheLoad) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  std::vector<std::string> log;
  RoundsOptions options = quiet(1, 2);
  options.title = "saving the state";
  options.unit = "ms";
  options.out = out;
  run_cases(options, {logged("memcpy", Role::kFloor, log, {9, 1, 1}),
                      logged("torch archive", Role::kBaseline, log, {9, 20, 40}),
                      logged("save", Role::kKernel, log, {9, 2, 4})});
  const std::string table = contents(out);
  std::fclose(out);
  for (const char* text : {"saving the state", "case, ms", "round 1", "round 2", "median", "/ base", "/ floor",
                           "memcpy", "torch archive", "30.00", "0.1000", "load average"}) {
    EXPECT_NE(table.find(text), std::string::npos) << text << " missing in\n" << table;
  }
  EXPECT_EQ(table.find("round 3"), std::string::npos) << "the warm-up round is in the table\n" << table;
}

TEST(BenchHarnessTest, InvalidCasesAreRefusedByName) {
  std::vector<std::string> log;
  EXPECT_THROW(run_cases(quiet(0, 1), {}), UsageError);
  EXPECT_THROW(run_cases(quiet(0, 0), {logged("a", Role::kKernel, log, {1})}), UsageError);
  EXPECT_THROW(run_cases(quiet(0, 1), {logged("a", Role::kBaseline, log, {1}), logged("b", Role::kBaseline, log, {1})}),
               UsageError);
  Case empty;
  empty.name = "nothing";
  try {
    run_cases(quiet(0, 1), {empty});
    FAIL() << "a case without run was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'nothing'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita::bench
