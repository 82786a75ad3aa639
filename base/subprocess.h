// Child processes with deadlines, captured output and resource use. Used by the benchmarks
// (each measured run is a fresh process, so its peak memory is its own) and by the tests
// that drive the CLI.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace partita {

struct ProcessResult {
  int exit_code = -1;      // the exit status, or 128 + signal number
  bool timed_out = false;  // killed at the deadline
  std::string out;
  std::string err;
  double wall_seconds = 0;
  double max_rss_bytes = 0;  // the child's peak resident set
};

// A started child whose stdout and stderr go to temporary files. The destructor kills and
// reaps a child still running, so no test or benchmark leaves processes behind. The child
// inherits no file descriptor beyond 0-2 (not the parent's sockets or files).
class ChildProcess {
 public:
  // Starts argv[0] (a path) with the arguments; throws Error if it cannot be started.
  explicit ChildProcess(const std::vector<std::string>& argv);
  // The same with stdout and stderr both appended to `log_file` (created if missing), which
  // stays when the child is gone: a long-lived child's log (a job's driver on the head).
  // output_so_far() and errors_so_far() then both read the log.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_file);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Once running() returned false: the exit status, or 128 + the signal that ended it.
  int exit_code() const;
  // Sends SIGKILL (if still running).
  void kill();
  // Sends `signo` (if still running), e.g. SIGTERM to ask for a clean exit.
  void signal(int signo);
  // What the child has written to stdout / stderr so far, e.g. to wait for a "ready" line
  // while it keeps running.
  std::string output_so_far() const;
  std::string errors_so_far() const;
  // Waits until the child exits or the deadline passes (then kills it).
  ProcessResult wait(double timeout_seconds);

 private:
  struct Capture;
  std::unique_ptr<Capture> capture_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  double max_rss_bytes_ = 0;
  double started_ = 0;
  bool try_reap(bool block);
};

// Runs a child to completion, killing it after timeout_seconds.
ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds);

// The path of the running executable (/proc/self/exe), to re-run it as a child.
std::string self_executable();

}  // namespace partita
