// `partita daemon` as a child process, for tests that talk to real daemons.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/daemon_child.h"
#include "test_paths.h"

namespace partita::testing {

// A daemon child and the address it printed when ready. The child is killed and reaped
// when this goes out of scope, also when a test fails.
using Daemon = runtime::DaemonChild;

// Starts `partita daemon` on a free loopback port and waits (at most 30 s) for its ready
// line; fails the test (and returns an empty address) if it does not come.
inline Daemon start_daemon(const std::vector<std::string>& extra = {}) {
  try {
    return runtime::start_daemon_child(kPartitaBinary, extra, {"--log-level", "info"});
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

}  // namespace partita::testing
