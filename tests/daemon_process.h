// `partita daemon` as a child process, for tests that talk to real daemons.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "base/subprocess.h"

namespace partita::testing {

// A daemon child and the address it printed when ready. The child is killed and reaped
// when this goes out of scope, also when a test fails.
struct Daemon {
  std::unique_ptr<ChildProcess> process;
  std::string address;
};

// Starts `partita daemon` on a free loopback port and waits (at most 30 s) for its ready
// line; fails the test if the process exits first or the line does not come.
inline Daemon start_daemon(const std::vector<std::string>& extra = {}) {
  using std::chrono::milliseconds;
  std::vector<std::string> argv{PARTITA_BINARY, "--log-level", "info", "daemon", "--listen", "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Daemon d;
  d.process = std::make_unique<ChildProcess>(argv);
  const std::regex ready(R"(partita daemon listening on (127\.0\.0\.1:[0-9]+)\n)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto pause = milliseconds(1);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string out = d.process->output_so_far();
    if (std::regex_search(out, match, ready)) {
      d.address = match[1];
      return d;
    }
    if (!d.process->running()) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(50));
  }
  ADD_FAILURE() << "no ready line from the daemon; stdout: " << d.process->output_so_far()
                << " stderr: " << d.process->errors_so_far();
  return d;
}

}  // namespace partita::testing
