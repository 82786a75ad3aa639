#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "base/error.h"

namespace partita {

void init_logging(const std::string& level) {
  auto parsed = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when it was asked for.
  if (parsed == spdlog::level::off && level != "off") {
    throw UsageError("--log-level: unknown level '" + level +
                     "' (use trace, debug, info, warn, error or off)");
  }
  spdlog::drop("partita");  // tests and embedders may set up logging more than once
  auto logger = spdlog::stderr_color_mt("partita");
  logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
}

}  // namespace partita
