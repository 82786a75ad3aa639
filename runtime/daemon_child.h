// `partita daemon` as a child process on a free loopback port: how benchmarks and tests
// get real daemons without a cluster.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace partita::runtime {

struct DaemonChild {
  std::unique_ptr<ChildProcess> process;  // killed and reaped when this goes away
  std::string address;                    // "HOST:PORT", from its ready line
};

// Starts `binary GLOBAL_ARGS... daemon --listen LISTEN DAEMON_ARGS...` and waits for its
// ready line. `binary` may be a wrapper whose GLOBAL_ARGS start with the real binary
// (`ip netns exec NS partita ...`, `env VAR=... partita ...`). Throws Error with the child's
// stderr if it exits first or says nothing within `timeout`.
DaemonChild start_daemon_child(const std::string& binary, const std::vector<std::string>& daemon_args = {},
                               const std::vector<std::string>& global_args = {"--log-level", "warn"},
                               std::chrono::milliseconds timeout = std::chrono::seconds(30),
                               const std::string& listen = "127.0.0.1:0");

}  // namespace partita::runtime
