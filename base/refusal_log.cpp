#include "base/refusal_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/error.h"

namespace partita {

RefusalLog::RefusalLog(std::string source, spdlog::level::level_enum level, double burst, double per_second)
    : source_(std::move(source)),
      level_(level),
      burst_(burst),
      per_second_(per_second),
      tokens_(burst),
      last_(Clock::now()) {
  if (!(burst >= 1) || !(per_second > 0)) {
    throw UsageError("a refusal log needs a burst of at least 1 line and a positive rate, not " +
                     std::to_string(burst) + " and " + std::to_string(per_second));
  }
}

bool RefusalLog::take_token(Clock::time_point now) {
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * per_second_);
    last_ = now;
  }
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void RefusalLog::refused(const std::string& line, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!take_token(now)) {
    ++unsaid_;
    return;
  }
  if (unsaid_ > 0) {
    spdlog::log(level_, "{} (and {} more refusals not logged since the last one)", line, unsaid_);
  } else {
    spdlog::log(level_, "{}", line);
  }
  unsaid_ = 0;
}

void RefusalLog::flush(Clock::time_point now, bool force) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (unsaid_ == 0) return;
  if (!take_token(now) && !force) return;
  spdlog::log(level_, "{}: {} more refusals not logged since the last one", source_, unsaid_);
  unsaid_ = 0;
}

size_t RefusalLog::unsaid() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return unsaid_;
}

}  // namespace partita
