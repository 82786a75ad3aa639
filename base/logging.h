// Process-wide logging set-up: spdlog to stderr, so stdout stays for results (tables, JSON).
#pragma once

#include <string>

namespace partita {

// level: trace, debug, info, warn, error, off. Throws UsageError on anything else.
void init_logging(const std::string& level);

}  // namespace partita
