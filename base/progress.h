// Progress of long work. On a terminal (stdout is a tty) a live bar, redrawn in place ten
// times a second:
//   partition [##########----------]  50%  10.0M/20.0M edges  4.1M edges/s  ETA 2s
// Elsewhere (logs, CI, a pipe) a periodic spdlog line every 2 s, so that logs stay readable:
//   partition: 10.0M/20.0M edges (50%) 4.1M edges/s, ETA 2s
// Either way done() logs the final line with the overall rate.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "base/stopwatch.h"

namespace partita {

class Progress {
 public:
  // Where progress goes: a bar redrawn on `bar` (a terminal), or log lines when null.
  struct Output {
    std::FILE* bar = nullptr;
    std::chrono::milliseconds period{2000};  // between lines, or between redraws of the bar
    // The bar on stdout when it is a terminal (every 100 ms), log lines every 2 s otherwise.
    static Output automatic();
  };

  // total <= 0 means unknown: the progress shows the count and rate, no percentage.
  Progress(std::string task, int64_t total, std::string unit, Output output = Output::automatic());
  // Clears a bar left on the terminal (without the final line: call done() for that).
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Thread-safe; cheap enough to call per item (one relaxed atomic add).
  void advance(int64_t amount = 1);
  // Sets the count (for work that knows where it stands, e.g. steps done), and reports.
  void set(int64_t count);
  // A short text shown after the rate, e.g. "loss 0.4123". Thread-safe.
  void set_note(std::string note);
  // Clears the bar and logs the final line with the overall rate (`summary` false: only
  // clears, for callers that log their own summary).
  void done(bool summary = true);

 private:
  void maybe_report();
  void report_locked();
  void clear_bar_locked();

  std::string task_;
  int64_t total_;
  std::string unit_;
  Output output_;
  Stopwatch watch_;
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> next_check_{0};
  std::mutex report_mutex_;
  std::string note_;
  std::chrono::steady_clock::time_point last_report_;
  bool bar_shown_ = false;
  bool finished_ = false;
};

// "1.23M", "456k", "789": short counts for log lines.
std::string human_count(double value);
// "1.2 GB", "345 MB".
std::string human_bytes(double bytes);

}  // namespace partita
