// Running a child process with a deadline, capturing its output and resource use. Used by
// the benchmarks (each measured run is a fresh process, so its peak memory is its own) and
// by the tests that drive the CLI.
#pragma once

#include <string>
#include <vector>

namespace partita {

struct ProcessResult {
  int exit_code = -1;     // the exit status, or 128 + signal number
  bool timed_out = false;  // killed at the deadline
  std::string out;
  std::string err;
  double wall_seconds = 0;
  double max_rss_bytes = 0;  // the child's peak resident set
};

// Runs argv[0] (a path) with the arguments; kills it with SIGKILL after timeout_seconds.
// Throws Error if the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds);

// The path of the running executable (/proc/self/exe), to re-run it as a child.
std::string self_executable();

}  // namespace partita
