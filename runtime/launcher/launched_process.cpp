#include "runtime/launcher/launched_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>

#include <cerrno>
#include <cstring>
#include <numeric>

#include "base/error.h"

namespace partita::runtime {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot make a pipe: ") + std::strerror(errno));
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (read >= 0) ::close(read);
    read = -1;
  }
  void close_write() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

std::vector<char*> c_strings(std::vector<std::string>& texts) {
  std::vector<char*> out;
  for (auto& t : texts) out.push_back(t.data());
  out.push_back(nullptr);
  return out;
}

// In the child, between fork and exec: async-signal-safe calls only. Reports exec's errno
// on `report` (close-on-exec: the parent reads EOF once exec worked).
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, char* const* envp, int in, int out, int err,
                             int report, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the thread that forked is gone already
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::dup2(in, STDIN_FILENO);
  ::dup2(out, STDOUT_FILENO);
  ::dup2(err, STDERR_FILENO);
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);  // the daemon's sockets and files stay behind
  int code = 0;
  if (::chdir(spec.cwd.c_str()) != 0) {
    code = errno;
  } else {
    ::execve(spec.program.c_str(), argv, envp);
    code = errno;
  }
  const ssize_t ignored = ::write(report, &code, sizeof(code));
  (void)ignored;
  ::_exit(127);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

LaunchedProcess::LaunchedProcess(ProcessSpec spec, OnOutput on_output, OnExit on_exit)
    : on_output_(std::move(on_output)), on_exit_(std::move(on_exit)) {
  thread_ = std::thread([this, spec = std::move(spec)]() mutable { run(std::move(spec)); });
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return started_; });
  if (!start_error_.empty()) {
    lock.unlock();
    thread_.join();
    throw Error(start_error_);
  }
}

LaunchedProcess::~LaunchedProcess() { stop(kDefaultGrace); }

bool LaunchedProcess::exited() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return exited_;
}

void LaunchedProcess::stop(std::chrono::milliseconds grace) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!exited_ && pid_ > 0) {
      ::kill(-pid_, SIGTERM);
      if (!changed_.wait_for(lock, grace, [this] { return exited_; })) ::kill(-pid_, SIGKILL);
    }
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void LaunchedProcess::run(ProcessSpec spec) {
  auto fail_start = [this](const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    start_error_ = why;
    started_ = true;
    changed_.notify_all();
  };
  try {
    Pipe out, err, report;
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in < 0) return fail_start(std::string("cannot open /dev/null: ") + std::strerror(errno));
    std::vector<char*> argv = c_strings(spec.argv);
    std::vector<char*> envp = c_strings(spec.env);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(in);
      return fail_start(std::string("cannot fork: ") + std::strerror(errno));
    }
    if (pid == 0) exec_child(spec, argv.data(), envp.data(), in, out.write, err.write, report.write, parent);
    ::close(in);
    out.close_write();
    err.close_write();
    report.close_write();
    int code = 0;
    ssize_t got;
    do {
      got = ::read(report.read, &code, sizeof(code));
    } while (got < 0 && errno == EINTR);
    if (got == static_cast<ssize_t>(sizeof(code))) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      return fail_start("cannot run " + spec.program + " in " + spec.cwd + ": " + std::strerror(code));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pid_ = pid;
      started_ = true;
      changed_.notify_all();
    }
    read_until_exit(out.read, err.read);
  } catch (const std::exception& e) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!started_) {
      lock.unlock();
      return fail_start(e.what());
    }
  }
}

void LaunchedProcess::read_until_exit(int out, int err) {
  ::fcntl(out, F_SETFL, O_NONBLOCK);
  ::fcntl(err, F_SETFL, O_NONBLOCK);
  std::string partial[2];
  char buffer[16384];
  bool open[2] = {true, true};
  int status = 0;
  for (;;) {
    pollfd fds[2] = {{open[0] ? out : -1, POLLIN, 0}, {open[1] ? err : -1, POLLIN, 0}};
    ::poll(fds, 2, 100);
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      for (;;) {  // what is there now
        const ssize_t n = ::read(i == 0 ? out : err, buffer, sizeof(buffer));
        if (n > 0) {
          add_output(buffer, static_cast<size_t>(n), partial[i], i == 1);
          continue;
        }
        if (n == 0) open[i] = false;  // every writer closed it
        break;
      }
    }
    if (!pending_.empty() && Clock::now() - pending_since_ >= kFlushEvery) flush();
    // Exited (not reaped yet, so that its group id stays its own): kill what is left of the
    // group, take the last output, then reap.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) {
      ::kill(-pid_, SIGKILL);
      for (int i = 0; i < 2; ++i) {
        ssize_t n;
        while (open[i] && (n = ::read(i == 0 ? out : err, buffer, sizeof(buffer))) > 0) {
          add_output(buffer, static_cast<size_t>(n), partial[i], i == 1);
        }
      }
      ::waitpid(pid_, &status, 0);
      break;
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (!partial[i].empty()) add_line(partial[i] + "\n", i == 1);
  }
  flush();
  std::string tail;
  for (const auto& line : tail_) tail += line;
  on_exit_(exit_code_of(status), tail);
  std::lock_guard<std::mutex> lock(mutex_);
  exited_ = true;
  changed_.notify_all();
}

void LaunchedProcess::add_output(const char* data, size_t n, std::string& partial, bool is_stderr) {
  for (size_t i = 0; i < n; ++i) {
    partial += data[i];
    if (data[i] == '\n') {
      add_line(std::move(partial), is_stderr);
      partial.clear();
    } else if (partial.size() >= kMaxLineBytes) {
      add_line(std::move(partial) + "\n", is_stderr);
      partial.clear();
    }
  }
}

void LaunchedProcess::add_line(std::string line, bool is_stderr) {
  if (is_stderr) {
    tail_.push_back(line.size() > kTailBytes ? line.substr(line.size() - kTailBytes) : line);
    size_t bytes = 0;
    for (const auto& l : tail_) bytes += l.size();
    while (tail_.size() > kTailLines || bytes > kTailBytes) {
      bytes -= tail_.front().size();
      tail_.erase(tail_.begin());
    }
  }
  if (pending_.size() + line.size() > kFlushBytes) flush();
  if (pending_.empty()) pending_since_ = Clock::now();
  pending_ += line;
}

void LaunchedProcess::flush() {
  if (pending_.empty()) return;
  std::string lines;
  lines.swap(pending_);
  on_output_(lines);
}

}  // namespace partita::runtime
