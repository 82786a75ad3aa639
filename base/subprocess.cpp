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

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string make_temp_file() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/partita-child-XXXXXX";
  int fd = ::mkstemp(pattern.data());
  if (fd < 0) throw Error("cannot create a temporary file in " + pattern);
  ::close(fd);
  return pattern;
}

}  // namespace

// Files rather than pipes: a pipe needs a reader thread, or the child blocks when it fills.
// Temporary ones are removed with the child; a log file the caller named stays.
struct ChildProcess::Capture {
  std::string out, err;
  bool temporary = true;
  ~Capture() {
    if (!temporary) return;
    ::unlink(out.c_str());
    ::unlink(err.c_str());
  }
};

namespace {

pid_t spawn_with_output(const std::vector<std::string>& args, const std::string& out, const std::string& err, int flags) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), flags, 0644);
  if (err == out) {
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), flags, 0644);
  }
  // Nothing else of the parent's: not its listening sockets (a head's port, its status
  // page), connections or files, which would stay open while the child lives.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<std::string> storage(args);
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error("cannot start " + args.at(0) + ": error " + std::to_string(rc));
  return pid;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& args) : capture_(std::make_unique<Capture>()) {
  capture_->out = make_temp_file();
  capture_->err = make_temp_file();
  started_ = now_seconds();
  pid_ = spawn_with_output(args, capture_->out, capture_->err, O_WRONLY | O_TRUNC);
}

ChildProcess::ChildProcess(const std::vector<std::string>& args, const std::string& log_file)
    : capture_(std::make_unique<Capture>()) {
  capture_->out = capture_->err = log_file;
  capture_->temporary = false;
  started_ = now_seconds();
  pid_ = spawn_with_output(args, log_file, log_file, O_WRONLY | O_CREAT | O_APPEND);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    try_reap(true);
  }
}

bool ChildProcess::try_reap(bool block) {
  if (reaped_) return true;
  struct rusage usage {};
  pid_t done = ::wait4(pid_, &status_, block ? 0 : WNOHANG, &usage);
  if (done != pid_) return false;
  reaped_ = true;
  max_rss_bytes_ = static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports kilobytes
  return true;
}

bool ChildProcess::running() { return !try_reap(false); }

int ChildProcess::exit_code() const {
  if (!reaped_) return -1;
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

void ChildProcess::kill() {
  if (!reaped_) ::kill(pid_, SIGKILL);
}

void ChildProcess::signal(int signo) {
  if (!reaped_) ::kill(pid_, signo);
}

std::string ChildProcess::output_so_far() const { return slurp(capture_->out); }

std::string ChildProcess::errors_so_far() const { return slurp(capture_->err); }

ProcessResult ChildProcess::wait(double timeout_seconds) {
  ProcessResult result;
  const double deadline = started_ + timeout_seconds;
  auto pause = std::chrono::milliseconds(1);
  while (!try_reap(false)) {
    if (now_seconds() > deadline) {
      kill();
      try_reap(true);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  result.wall_seconds = now_seconds() - started_;
  result.exit_code = exit_code();
  result.max_rss_bytes = max_rss_bytes_;
  result.out = slurp(capture_->out);
  result.err = slurp(capture_->err);
  return result;
}

ProcessResult run_process(const std::vector<std::string>& argv, double timeout_seconds) {
  return ChildProcess(argv).wait(timeout_seconds);
}

std::string self_executable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw Error("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace partita
