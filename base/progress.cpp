#include "base/progress.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
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

Progress::Output Progress::Output::automatic() {
  Output o;
  if (::isatty(STDOUT_FILENO) == 1) {
    o.bar = stdout;
    o.period = std::chrono::milliseconds(100);
  }
  return o;
}

Progress::Progress(std::string task, int64_t total, std::string unit, Output output)
    : task_(std::move(task)),
      total_(total),
      unit_(std::move(unit)),
      output_(output),
      last_report_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  std::lock_guard<std::mutex> lock(report_mutex_);
  clear_bar_locked();
}

void Progress::advance(int64_t amount) {
  int64_t now = count_.fetch_add(amount, std::memory_order_relaxed) + amount;
  if (now >= next_check_.load(std::memory_order_relaxed)) {
    next_check_.store(now + kCheckStride, std::memory_order_relaxed);
    maybe_report();
  }
}

void Progress::set(int64_t count) {
  count_.store(count, std::memory_order_relaxed);
  maybe_report();
}

void Progress::set_note(std::string note) {
  std::lock_guard<std::mutex> lock(report_mutex_);
  note_ = std::move(note);
}

void Progress::maybe_report() {
  std::unique_lock<std::mutex> lock(report_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || finished_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_report_ < output_.period) return;
  last_report_ = now;
  report_locked();
}

void Progress::report_locked() {
  double elapsed = watch_.seconds();
  double count = static_cast<double>(count_.load(std::memory_order_relaxed));
  double rate = elapsed > 0 ? count / elapsed : 0;
  const double total = static_cast<double>(total_);
  const double eta = total_ > 0 && rate > 0 ? std::max(0.0, (total - count) / rate) : 0;
  const std::string note = note_.empty() ? "" : "  " + note_;
  if (output_.bar != nullptr) {
    constexpr int kWidth = 24;
    std::string bar;
    if (total_ > 0) {
      const int filled = static_cast<int>(std::min(1.0, count / total) * kWidth);
      bar = " [" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "] " +
            fmt::format("{:3.0f}%  {}/{}", 100.0 * std::min(1.0, count / total), human_count(count), human_count(total));
    } else {
      bar = "  " + human_count(count);
    }
    // \r back to the line's start, \x1b[K clears what a longer earlier line left.
    std::fprintf(output_.bar, "\r%s%s %s  %s %s/s%s%s\x1b[K", task_.c_str(), bar.c_str(), unit_.c_str(),
                 human_count(rate).c_str(), unit_.c_str(),
                 total_ > 0 ? fmt::format("  ETA {:.0f}s", eta).c_str() : "", note.c_str());
    std::fflush(output_.bar);
    bar_shown_ = true;
    return;
  }
  if (total_ > 0) {
    spdlog::info("{}: {}/{} {} ({:.0f}%) {} {}/s, ETA {:.0f}s{}", task_, human_count(count), human_count(total), unit_,
                 100.0 * count / total, human_count(rate), unit_, eta, note);
  } else {
    spdlog::info("{}: {} {} {} {}/s{}", task_, human_count(count), unit_, human_count(rate), unit_, note);
  }
}

void Progress::clear_bar_locked() {
  if (!bar_shown_) return;
  std::fprintf(output_.bar, "\r\x1b[K");
  std::fflush(output_.bar);
  bar_shown_ = false;
}

void Progress::done(bool summary) {
  std::lock_guard<std::mutex> lock(report_mutex_);
  if (finished_) return;
  finished_ = true;
  clear_bar_locked();
  if (!summary) return;
  double elapsed = watch_.seconds();
  double count = static_cast<double>(count_.load());
  spdlog::info("{}: {} {} in {:.2f}s ({} {}/s)", task_, human_count(count), unit_, elapsed,
               human_count(elapsed > 0 ? count / elapsed : 0), unit_);
}

}  // namespace partita
