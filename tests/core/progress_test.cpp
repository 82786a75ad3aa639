// Progress on a terminal is a bar redrawn in place (carriage return, the bar, the rate, the
// ETA and the note, the rest of the line cleared) and cleared at the end; the automatic
// output picks the bar only when stdout is a terminal.
#include "base/progress.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "test_paths.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::kPartitaBinary;

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  return text;
}

TEST(ProgressTest, ABarIsRedrawnInPlaceAndClearedWhenDone) {
  std::FILE* terminal = std::tmpfile();
  ASSERT_NE(terminal, nullptr);
  {
    Progress progress("epoch 1/5", 10, "steps", Progress::Output{terminal, std::chrono::milliseconds(0)});
    progress.set_note("loss 0.4123");
    progress.set(5);
    const std::string half = contents(terminal);
    EXPECT_EQ(half.rfind('\r', 0), 0u) << "not redrawn from the line's start: " << half;
    EXPECT_NE(half.find("epoch 1/5 [############------------]  50%  5/10 steps"), std::string::npos) << half;
    EXPECT_NE(half.find("ETA"), std::string::npos) << half;
    EXPECT_NE(half.find("loss 0.4123"), std::string::npos) << half;
    EXPECT_NE(half.find("\x1b[K"), std::string::npos) << "the rest of the line is not cleared";
    progress.set(10);
    EXPECT_NE(contents(terminal).find("[########################] 100%"), std::string::npos);
    progress.done(false);
  }
  const std::string all = contents(terminal);
  EXPECT_EQ(all.substr(all.size() - 4), "\r\x1b[K") << "the bar was left on the terminal";
  std::fclose(terminal);
}

TEST(ProgressTest, TheBarIsForTerminalsOnly) {
  // The test's stdout is a pipe or a file under ctest, a terminal when run by hand.
  const Progress::Output automatic = Progress::Output::automatic();
  EXPECT_EQ(automatic.bar != nullptr, ::isatty(STDOUT_FILENO) == 1);
  EXPECT_EQ(automatic.period, automatic.bar != nullptr ? std::chrono::milliseconds(100) : std::chrono::milliseconds(2000));
}

// Runs the partita binary on a pseudo-terminal, as a user at a shell does; returns what it
// printed there (stdout and stderr, as a terminal shows them). Bounded by `timeout_s`.
std::string run_on_a_terminal(const std::vector<std::string>& args, int timeout_s) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return "forkpty failed";
  if (pid == 0) {
    std::vector<char*> argv;
    std::string binary = kPartitaBinary;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  std::string out;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      out += "\n[timed out]";
      break;
    }
    if (::poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof(buf));
    if (n <= 0) break;  // the child closed the terminal: it has ended
    out.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  return out;
}

TEST(ProgressTest, LongCommandsDrawABarOnATerminalAndLogLinesElsewhere) {
  testing::TempDir tmp;
  const std::vector<std::string> args{"--threads", "1", "generate", "rmat", "--nodes", "1000000", "--avg-degree", "16",
                                      "-o", tmp / "on-terminal"};
  const std::string terminal = run_on_a_terminal(args, 120);
  EXPECT_NE(terminal.find("\rrmat ["), std::string::npos) << terminal.substr(0, 2000);
  EXPECT_NE(terminal.find("% "), std::string::npos);
  EXPECT_NE(terminal.find("ETA"), std::string::npos);
  EXPECT_NE(terminal.find("rmat: "), std::string::npos) << "no final line: " << terminal.substr(0, 2000);

  std::vector<std::string> piped = args;
  piped.back() = tmp / "piped";
  testing::CommandResult result = testing::run_partita(piped, 120);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.find('\r'), std::string::npos) << "a bar drawn into a pipe";
  EXPECT_NE(result.err.find("rmat: "), std::string::npos) << result.err;
}

}  // namespace
}  // namespace partita
