// The one way a benchmark measures: a kernel next to its baseline(s), in the same run.
//
// The machines benchmarks run on are shared, so one measurement can be off by 2x. What makes
// a figure worth quoting is that every case runs in the same rounds, interleaved (a b a b
// ...: a load change hits both alike), after warm-up repetitions that are not counted, and
// that the figure reported is the median over rounds and the ratio to the baseline is the
// median of the rounds' own ratios. A benchmark therefore names its cases, each a callable
// doing one measured repetition and returning its figure, and `run_cases` does the rest:
// warm-up, rounds, the per-round figures, one table (every round's value, the median, the
// ratio to the baseline, the distance to a physical floor when one is given) and the load
// average at start and end.
//
//   std::vector<Case> cases{
//       {"memcpy", Role::kFloor, [&] { return wall_seconds([&] { std::memcpy(d, s, n); }); }},
//       {"torch archive", Role::kBaseline, [&] { return wall_seconds(save_with_torch); }},
//       {"save_training_state", Role::kKernel, [&] { return wall_seconds(save); }},
//   };
//   RoundsOptions options;
//   options.title = "saving 49 MB";
//   options.rounds = 7;
//   const Results results = run_cases(options, cases);
//   results.median("save_training_state");
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/stopwatch.h"

namespace partita::bench {

// What a case is to the others: the ratio column divides by the baseline, the floor column
// by the floor (what the hardware allows: memcpy, the device, a GEMM of the same shapes).
enum class Role { kKernel, kBaseline, kFloor };

// One thing measured: `run` does one repetition and returns its figure in the table's unit
// (seconds from `wall_seconds`, or a rate, or a figure the repetition reports itself, e.g. a
// child process's own timing). `setup`, when set, runs before every repetition (warm-up
// ones too) and is not measured: fresh state a repetition consumes.
struct Case {
  Case() = default;
  Case(std::string name, Role role, std::function<double()> run, std::function<void()> setup = {})
      : name(std::move(name)), role(role), run(std::move(run)), setup(std::move(setup)) {}

  std::string name;
  Role role = Role::kKernel;
  std::function<double()> run;
  std::function<void()> setup;
};

struct RoundsOptions {
  std::string title;        // printed above the table; empty: no title line
  std::string unit = "s";   // the unit of every case's figure, printed in the header
  int warmup = 1;           // rounds of every case run first and not recorded (>= 0)
  int rounds = 5;           // recorded rounds (> 0)
  // Odd rounds run the cases in reverse order (a b, b a, ...), for benchmarks whose cases
  // leave state (caches, page cache, a warm allocator) that favours the next one.
  bool alternate = false;
  // A floor given as a constant in `unit` (0: none), used when no case has Role::kFloor.
  double floor = 0;
  std::string floor_name;   // names the constant floor in the table's legend
  // The table goes here; nullptr: nothing is printed (the results are still returned).
  std::FILE* out = stdout;
};

// One case's figures after the rounds.
struct CaseResult {
  std::string name;
  Role role = Role::kKernel;
  std::vector<double> rounds;  // one figure per recorded round, in order
  double median = 0;
  // The median over rounds of this round's figure over the baseline's figure of the same
  // round (not the ratio of medians: that would mix different rounds' loads); 0 when there
  // is no baseline.
  double ratio = 0;
  double to_floor = 0;  // the same against the floor; 0 when there is none
};

struct Results {
  std::vector<CaseResult> cases;  // in the order the cases were given
  double load_start = 0, load_end = 0;  // the 1-minute load average (getloadavg)

  // The case named `name`; throws Error naming it when there is none.
  const CaseResult& at(const std::string& name) const;
  double median(const std::string& name) const { return at(name).median; }
  double ratio(const std::string& name) const { return at(name).ratio; }
  // The median over rounds of case a's figure over case b's in the same round, for ratios
  // other than to the baseline and the floor. Throws Error naming a case that is not here.
  double ratio_between(const std::string& a, const std::string& b) const;
};

// Runs `options.warmup` rounds and then `options.rounds` recorded rounds; every round runs
// each case once, in the order given (reversed in odd rounds with `alternate`), `setup`
// before `run`. Prints the table to `options.out` and returns the figures. At most one case
// may be the baseline and at most one the floor. Throws UsageError for invalid options or
// cases (none, a case without `run`, two baselines); an exception of a case propagates.
Results run_cases(const RoundsOptions& options, const std::vector<Case>& cases);

// Whether the repetition running now, inside a case's `run`, is one of run_cases' recorded
// rounds (false in warm-up rounds and outside run_cases): for the figures a case keeps
// beside the one it returns (CPU time, page faults, a phase's own time), so that they cover
// the rounds the table covers.
bool recording();

// Prints `results` as `run_cases` does: a row per case with every round's figure, the median,
// the ratio to the baseline and to the floor, then the load average at start and end.
void print_table(const RoundsOptions& options, const Results& results);

// The load average over the last minute (0 when the system does not say).
double load_average();

// The wall seconds one call of `body` takes.
template <typename Body>
double wall_seconds(Body&& body) {
  Stopwatch watch;
  body();
  return watch.seconds();
}

}  // namespace partita::bench
