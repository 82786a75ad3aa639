#include "bench/harness.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/error.h"
#include "bench/stats.h"

namespace partita::bench {

namespace {

bool recording_now = false;  // run_cases' thread, while a recorded repetition runs

void check(const RoundsOptions& options, const std::vector<Case>& cases) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw UsageError("benchmark rounds: " + message);
  };
  require(options.rounds > 0, "rounds must be positive, got " + std::to_string(options.rounds));
  require(options.warmup >= 0, "warm-up rounds must not be negative, got " + std::to_string(options.warmup));
  require(options.floor >= 0, "the floor must not be negative");
  require(!cases.empty(), "no case to measure");
  int baselines = 0, floors = 0;
  for (const Case& c : cases) {
    require(static_cast<bool>(c.run), "case '" + c.name + "' has nothing to run");
    baselines += c.role == Role::kBaseline;
    floors += c.role == Role::kFloor;
  }
  require(baselines <= 1, "more than one baseline");
  require(floors <= 1, "more than one floor");
}

// The index of the case with `role`, or -1.
int find_role(const std::vector<CaseResult>& cases, Role role) {
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].role == role) return static_cast<int>(i);
  }
  return -1;
}

// The median over rounds of a's figure over b's figure of the same round.
double median_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t r = 0; r < a.size() && r < b.size(); ++r) {
    if (b[r] != 0) ratios.push_back(a[r] / b[r]);
  }
  return median(std::move(ratios));
}

// About 4 significant digits, never an exponent: 0.02734, 17.41, 1234, 33712345.
std::string figure(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  const double magnitude = v == 0 ? 0 : std::floor(std::log10(std::fabs(v)));
  const int decimals = static_cast<int>(std::max(0.0, std::min(9.0, 3 - magnitude)));
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

}  // namespace

const CaseResult& Results::at(const std::string& name) const {
  for (const CaseResult& c : cases) {
    if (c.name == name) return c;
  }
  throw Error("benchmark results: no case named '" + name + "'");
}

double Results::ratio_between(const std::string& a, const std::string& b) const {
  return median_ratio(at(a).rounds, at(b).rounds);
}

double load_average() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : 0;
}

bool recording() { return recording_now; }

Results run_cases(const RoundsOptions& options, const std::vector<Case>& cases) {
  check(options, cases);
  Results results;
  results.load_start = load_average();
  for (const Case& c : cases) results.cases.push_back({c.name, c.role, {}, 0, 0, 0});
  const int n = static_cast<int>(cases.size());
  for (int round = 0; round < options.warmup + options.rounds; ++round) {
    const bool reversed = options.alternate && round % 2 == 1;
    for (int k = 0; k < n; ++k) {
      const int i = reversed ? n - 1 - k : k;
      if (cases[i].setup) cases[i].setup();
      recording_now = round >= options.warmup;
      struct Reset {
        ~Reset() { recording_now = false; }
      } reset;  // also when the case throws
      const double value = cases[i].run();
      if (recording_now) results.cases[i].rounds.push_back(value);
    }
  }
  results.load_end = load_average();

  const int baseline = find_role(results.cases, Role::kBaseline);
  const int floor = find_role(results.cases, Role::kFloor);
  for (CaseResult& c : results.cases) {
    c.median = median(c.rounds);
    if (baseline >= 0) c.ratio = median_ratio(c.rounds, results.cases[baseline].rounds);
    if (floor >= 0) {
      c.to_floor = median_ratio(c.rounds, results.cases[floor].rounds);
    } else if (options.floor > 0) {
      c.to_floor = c.median / options.floor;
    }
  }
  print_table(options, results);
  return results;
}

void print_table(const RoundsOptions& options, const Results& results) {
  std::FILE* out = options.out;
  if (out == nullptr) return;
  const int baseline = find_role(results.cases, Role::kBaseline);
  const int floor = find_role(results.cases, Role::kFloor);
  const bool has_floor = floor >= 0 || options.floor > 0;
  size_t width = ("case, " + options.unit).size();
  for (const CaseResult& c : results.cases) width = std::max(width, c.name.size());
  const size_t rounds = results.cases.front().rounds.size();

  if (!options.title.empty()) std::fprintf(out, "\n%s\n", options.title.c_str());
  std::fprintf(out, "%-*s |", static_cast<int>(width), ("case, " + options.unit).c_str());
  for (size_t r = 0; r < rounds; ++r) std::fprintf(out, " %9s", ("round " + std::to_string(r + 1)).c_str());
  std::fprintf(out, " | %10s", "median");
  if (baseline >= 0) std::fprintf(out, " %9s", "/ base");
  if (has_floor) std::fprintf(out, " %9s", "/ floor");
  std::fprintf(out, "\n");
  for (const CaseResult& c : results.cases) {
    std::fprintf(out, "%-*s |", static_cast<int>(width), c.name.c_str());
    for (double v : c.rounds) std::fprintf(out, " %9s", figure(v).c_str());
    std::fprintf(out, " | %10s", figure(c.median).c_str());
    if (baseline >= 0) std::fprintf(out, " %9s", figure(c.ratio).c_str());
    if (has_floor) std::fprintf(out, " %9s", figure(c.to_floor).c_str());
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "%d warm-up round(s) not counted; rounds interleave the cases%s.", options.warmup,
               options.alternate ? ", odd ones in reverse order" : "");
  if (baseline >= 0) {
    std::fprintf(out, " / base: median of the rounds' ratios to %s.", results.cases[baseline].name.c_str());
  }
  if (floor >= 0) {
    std::fprintf(out, " / floor: median of the rounds' ratios to %s.", results.cases[floor].name.c_str());
  } else if (has_floor) {
    std::fprintf(out, " / floor: the median over %s %s (%s).", figure(options.floor).c_str(), options.unit.c_str(),
                 options.floor_name.empty() ? "the floor" : options.floor_name.c_str());
  }
  std::fprintf(out, "\nload average %.2f at start, %.2f at end\n", results.load_start, results.load_end);
  std::fflush(out);
}

}  // namespace partita::bench
