// Progress of long work, as periodic spdlog lines: "partition: 12.5M/20.0M edges (62%)
// 4.1M edges/s, ETA 2s". Lines, not a redrawn bar, so logs and CI output stay readable.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/stopwatch.h"

namespace partita {

class Progress {
 public:
  // total <= 0 means unknown: the line shows the count and rate, no percentage.
  Progress(std::string task, int64_t total, std::string unit,
           std::chrono::milliseconds period = std::chrono::seconds(2));
  ~Progress();

  // Thread-safe; cheap enough to call per item (one relaxed atomic add).
  void advance(int64_t amount = 1);
  // Logs the final line with the overall rate.
  void done();

 private:
  void maybe_report();

  std::string task_;
  int64_t total_;
  std::string unit_;
  std::chrono::milliseconds period_;
  Stopwatch watch_;
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> next_check_{0};
  std::mutex report_mutex_;
  std::chrono::steady_clock::time_point last_report_;
  bool finished_ = false;
};

// "1.23M", "456k", "789": short counts for log lines.
std::string human_count(double value);
// "1.2 GB", "345 MB".
std::string human_bytes(double bytes);

}  // namespace partita
