// A child process a node runs for a job (a Python job's rank, runtime/launcher/launcher.h),
// with its output captured line by line and its whole process group stopped on demand.
//
// Why not base/subprocess.h: that one writes output to files for tests and benchmarks; a
// job's process needs its lines as they come (streamed to the job's driver), must not
// outlive the daemon that started it, and leaves no process of its group behind.
//
// The process is started (fork, then exec) from a thread of its own that lives until the
// process is reaped: the child asks the kernel for SIGKILL when that thread goes
// (PR_SET_PDEATHSIG is tied to the thread that forked), so a daemon that dies, even by
// SIGKILL, takes its job's processes with it. The child leads a process group of its own;
// stopping it signals the group (SIGTERM, then SIGKILL after the grace period), and once
// the child exited, whatever of its group is left is killed before the child is reaped.
//
// Output: stdout and stderr are read as they come; every complete line (a line longer than
// kMaxLineBytes is cut into pieces of that size) is added to a buffer of at most
// kFlushBytes, handed to `on_output` when full or kFlushEvery after its first line. The
// callback runs on the process's thread and may block: the child then blocks on a full
// pipe, so memory stays bounded whatever it writes. The last kTailLines lines of stderr (at
// most kTailBytes) are kept for the exit report.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace partita::runtime {

struct ProcessSpec {
  std::string program;            // an absolute path to an executable
  std::vector<std::string> argv;  // argv[0] included
  std::string cwd;                // absolute
  std::vector<std::string> env;   // the whole environment, NAME=value
};

class LaunchedProcess {
 public:
  static constexpr size_t kMaxLineBytes = 16 * 1024;
  static constexpr size_t kFlushBytes = 64 * 1024;
  static constexpr std::chrono::milliseconds kFlushEvery{200};
  static constexpr size_t kTailLines = 20;
  static constexpr size_t kTailBytes = 4096;

  // Lines, each ending in '\n'.
  using OnOutput = std::function<void(const std::string& lines)>;
  // The exit status (or 128 + the signal that ended it) and stderr's last lines.
  using OnExit = std::function<void(int code, const std::string& stderr_tail)>;

  // Starts the process; returns once it runs. Throws Error naming the program when it
  // cannot be started (pipes, fork, or exec: "cannot run /usr/bin/python3: ...").
  LaunchedProcess(ProcessSpec spec, OnOutput on_output, OnExit on_exit);
  // stop(kDefaultGrace).
  ~LaunchedProcess();
  LaunchedProcess(const LaunchedProcess&) = delete;
  LaunchedProcess& operator=(const LaunchedProcess&) = delete;

  static constexpr std::chrono::milliseconds kDefaultGrace{5000};

  pid_t pid() const { return pid_; }
  // Stops the process group (SIGTERM, then SIGKILL once `grace` passed) unless it has
  // exited, and returns once the child is reaped and on_exit has run. Idempotent.
  void stop(std::chrono::milliseconds grace);
  // Whether the child has been reaped.
  bool exited() const;

 private:
  void run(ProcessSpec spec);
  void read_until_exit(int out, int err);
  void add_output(const char* data, size_t n, std::string& partial, bool is_stderr);
  void add_line(std::string line, bool is_stderr);
  void flush();

  OnOutput on_output_;
  OnExit on_exit_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  pid_t pid_ = -1;
  bool started_ = false;    // the thread has forked and exec'd (or failed)
  std::string start_error_;
  bool exited_ = false;     // reaped, on_exit has run
  std::string pending_;     // lines not handed to on_output yet
  std::chrono::steady_clock::time_point pending_since_{};
  std::vector<std::string> tail_;
  std::thread thread_;      // last: starts once the rest is set
};

}  // namespace partita::runtime
