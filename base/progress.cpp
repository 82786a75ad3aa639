#include "base/progress.h"

#include <spdlog/spdlog.h>

#include <cstdio>

namespace partita {

namespace {
// advance() checks the clock only every this many items, so per-item calls stay cheap.
constexpr int64_t kCheckStride = 4096;

}  // namespace

std::string human_count(double value) {
  char buf[32];
  if (value >= 1e9) std::snprintf(buf, sizeof(buf), "%.2fG", value / 1e9);
  else if (value >= 1e6) std::snprintf(buf, sizeof(buf), "%.2fM", value / 1e6);
  else if (value >= 1e4) std::snprintf(buf, sizeof(buf), "%.1fk", value / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", value);
  return buf;
}

std::string human_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9) std::snprintf(buf, sizeof(buf), "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6) std::snprintf(buf, sizeof(buf), "%.1f MB", bytes / 1e6);
  else if (bytes >= 1e3) std::snprintf(buf, sizeof(buf), "%.1f kB", bytes / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f B", bytes);
  return buf;
}

Progress::Progress(std::string task, int64_t total, std::string unit,
                   std::chrono::milliseconds period)
    : task_(std::move(task)),
      total_(total),
      unit_(std::move(unit)),
      period_(period),
      last_report_(std::chrono::steady_clock::now()) {}

Progress::~Progress() = default;

void Progress::advance(int64_t amount) {
  int64_t now = count_.fetch_add(amount, std::memory_order_relaxed) + amount;
  if (now >= next_check_.load(std::memory_order_relaxed)) {
    next_check_.store(now + kCheckStride, std::memory_order_relaxed);
    maybe_report();
  }
}

void Progress::maybe_report() {
  std::unique_lock<std::mutex> lock(report_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_report_ < period_) return;
  last_report_ = now;
  double elapsed = watch_.seconds();
  double count = static_cast<double>(count_.load(std::memory_order_relaxed));
  double rate = elapsed > 0 ? count / elapsed : 0;
  if (total_ > 0) {
    double eta = rate > 0 ? (static_cast<double>(total_) - count) / rate : 0;
    spdlog::info("{}: {}/{} {} ({:.0f}%) {} {}/s, ETA {:.0f}s", task_, human_count(count),
                 human_count(static_cast<double>(total_)), unit_,
                 100.0 * count / static_cast<double>(total_), human_count(rate), unit_, eta);
  } else {
    spdlog::info("{}: {} {} {} {}/s", task_, human_count(count), unit_, human_count(rate), unit_);
  }
}

void Progress::done() {
  std::lock_guard<std::mutex> lock(report_mutex_);
  if (finished_) return;
  finished_ = true;
  double elapsed = watch_.seconds();
  double count = static_cast<double>(count_.load());
  spdlog::info("{}: {} {} in {:.2f}s ({} {}/s)", task_, human_count(count), unit_, elapsed,
               human_count(elapsed > 0 ? count / elapsed : 0), unit_);
}

}  // namespace partita
