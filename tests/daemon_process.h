// `partita daemon` as a child process, for tests that talk to real daemons.
#pragma once

#include <gtest/gtest.h>

#include <regex>
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

// The port of the status page a daemon started with `--dashboard` printed ("status page on
// http://127.0.0.1:PORT/"); fails the test and returns 0 if it printed none.
inline int status_page_port(Daemon& daemon) {
  std::smatch m;
  const std::string out = daemon.process ? daemon.process->output_so_far() : "";
  if (!std::regex_search(out, m, std::regex(R"(status page on http://127\.0\.0\.1:(\d+)/)"))) {
    ADD_FAILURE() << "no status page address in the daemon's output:\n" << out;
    return 0;
  }
  return std::stoi(m[1]);
}

}  // namespace partita::testing
