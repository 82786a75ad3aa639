// Log lines about refused connections, at a bounded rate: a peer that reconnects in a loop,
// or a flood of them, must not fill the disk through the log, yet no refusal goes uncounted.
// The TLS gateway (runtime/tls/caf_gateway.h) and the status page's server
// (dashboard/request_gate.h) log their refusals through one of these.
//
// A token bucket: bursts of up to `burst` lines, then `per_second` lines a second. A line
// after some were left out carries their count ("... (and 12 more refusals not logged
// since the last one)"); flush() logs that count on its own, so that the tail of a burst is
// summarised even when no refusal follows it. Thread-safe.
#pragma once

#include <spdlog/common.h>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace partita {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;

  // `source` opens the summary line of flush() ("status page 127.0.0.1:8265"); `level`
  // is that of every line. burst >= 1 and per_second > 0 (UsageError otherwise).
  explicit RefusalLog(std::string source, spdlog::level::level_enum level = spdlog::level::warn, double burst = 10,
                      double per_second = 1);

  // Logs `line` if the budget allows, with the count of the lines left out before it;
  // otherwise counts it. `now` is for tests; steady_clock's otherwise.
  void refused(const std::string& line) { refused(line, Clock::now()); }
  void refused(const std::string& line, Clock::time_point now);

  // If refusals were left out since the last line: logs "SOURCE: N more refusals not logged
  // since the last one" when the budget allows, or always if `force` (at the end of the
  // refusing thing's life). Cheap when there is nothing to say: call it every so often.
  void flush(bool force = false) { flush(Clock::now(), force); }
  void flush(Clock::time_point now, bool force = false);

  // The refusals counted but not yet logged.
  size_t unsaid() const;

 private:
  bool take_token(Clock::time_point now);  // under mutex_

  const std::string source_;
  const spdlog::level::level_enum level_;
  const double burst_;
  const double per_second_;
  mutable std::mutex mutex_;
  double tokens_;
  Clock::time_point last_;
  size_t unsaid_ = 0;
};

}  // namespace partita
