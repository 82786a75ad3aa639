#include "base/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/error.h"

extern char** environ;

namespace partita {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Temporary files for the child's stdout/stderr: pipes would need a reader thread to
// avoid the child blocking on a full pipe.
struct CaptureFiles {
  std::string out, err;
  CaptureFiles() {
    std::string dir = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
    out = make(dir);
    err = make(dir);
  }
  ~CaptureFiles() {
    ::unlink(out.c_str());
    ::unlink(err.c_str());
  }
  static std::string make(const std::string& dir) {
    std::string pattern = dir + "/partita-child-XXXXXX";
    int fd = ::mkstemp(pattern.data());
    if (fd < 0) throw Error("cannot create a temporary file in " + dir);
    ::close(fd);
    return pattern;
  }
};

}  // namespace

ProcessResult run_process(const std::vector<std::string>& args, double timeout_seconds) {
  CaptureFiles capture;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, capture.out.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, capture.err.c_str(), O_WRONLY | O_TRUNC, 0);
  std::vector<std::string> storage(args);
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error("cannot start " + args.at(0) + ": error " + std::to_string(rc));

  ProcessResult result;
  auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  int status = 0;
  struct rusage usage {};
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &usage);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.max_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux: kilobytes
  result.out = slurp(capture.out);
  result.err = slurp(capture.err);
  return result;
}

std::string self_executable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw Error("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace partita
