// The cluster's commands as a Ray user types them, in real processes on loopback: `start
// --head` and `start --address HEAD` detach and say where their logs are, `down` (and `stop
// --cluster`) stops the whole cluster only when confirmed (a terminal's "y", or --yes), `stop`
// alone refuses naming what to type, the head's address comes from --address, then
// PARTITA_ADDRESS, then ~/.partita/head_address, then 127.0.0.1:7070, global options go
// anywhere on the line, and bad addresses and peers are named once and in words.
//
// Every test has its own HOME (a temporary folder), so that ~/.partita is its own; daemons
// started in the background are killed by the test's guard if the test fails before it stops
// them. Waits are bounded only to end a hang.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/subprocess.h"
#include "test_paths.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kPartitaBinary;
using testing::TempDir;

constexpr double kProcessSeconds = 120;

// A HOME of the test's own, and the daemons `start` left in the background there: killed on
// destruction if still running (a failed test leaves nothing behind).
class Home {
 public:
  Home() { fs::create_directories(dir_.path()); }
  ~Home() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_ / ".partita", ec)) {
      if (entry.path().extension() != ".pid") continue;
      std::ifstream in(entry.path());
      long pid = 0;
      if (in >> pid && pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  const std::string& path() const { return dir_.path(); }
  std::string operator/(const std::string& name) const { return dir_ / name; }
  // partita with this HOME and `env` (VAR=VALUE entries); stdin from /dev/null (no terminal).
  ProcessResult run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) const {
    std::string line = "exec /usr/bin/env -u PARTITA_ADDRESS HOME='" + path() + "'";
    for (const auto& e : env) line += " '" + e + "'";
    line += " '" + std::string(kPartitaBinary) + "'";
    for (const auto& a : args) line += " '" + a + "'";
    line += " </dev/null";
    ProcessResult r = run_process({"/bin/sh", "-c", line}, kProcessSeconds);
    EXPECT_FALSE(r.timed_out) << line;
    return r;
  }
  pid_t pid_of(const std::string& daemon) const {
    std::ifstream in(dir_ / (".partita/" + daemon + ".pid"));
    long pid = 0;
    return in >> pid ? static_cast<pid_t>(pid) : 0;
  }

 private:
  TempDir dir_;
};

// Whether `pid` ends within `seconds`.
bool ends_within(pid_t pid, int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (testing::process_runs(pid)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// "on HOST:PORT" in `start`'s output.
std::string started_on(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex(" on (127\\.0\\.0\\.1:\\d+)")) ? std::string(m[1]) : "";
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A head in the foreground (`partita daemon --head`, plaintext on loopback) for the tests of
// the commands that ask it.
struct ForegroundHead {
  explicit ForegroundHead(const Home& home)
      : process({"/usr/bin/env", "HOME=" + home.path(), kPartitaBinary, "--insecure", "--log-level", "info", "daemon",
                 "--head", "--listen", "127.0.0.1:0", "--runs", home / "runs"}) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::smatch m;
    std::string out;
    while (std::chrono::steady_clock::now() < until && process.running()) {
      out = process.output_so_far();
      if (std::regex_search(out, m, std::regex("listening on (\\S+)\n"))) {
        address = m[1];
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the head did not start: " << process.errors_so_far();
  }
  ChildProcess process;
  std::string address;
};

// Runs partita on a pseudo-terminal, as a user at a shell does, typing `answer` once it has
// printed `prompt`; returns what the terminal showed and the exit code.
std::pair<std::string, int> run_on_a_terminal(const Home& home, const std::vector<std::string>& args,
                                              const std::string& prompt, const std::string& answer) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return {"forkpty failed", -1};
  if (pid == 0) {
    ::setenv("HOME", home.path().c_str(), 1);
    ::unsetenv("PARTITA_ADDRESS");
    std::vector<std::string> copy{kPartitaBinary};
    copy.insert(copy.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string out;
  bool answered = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(pid, SIGKILL);
      out += "\n[timed out]";
      break;
    }
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof(buf));
    if (n <= 0) break;  // the child closed the terminal: it has ended
    out.append(buf, static_cast<size_t>(n));
    if (!answered && out.find(prompt) != std::string::npos) {
      const std::string line = answer + "\n";
      EXPECT_EQ(::write(master, line.data(), line.size()), static_cast<ssize_t>(line.size()));
      answered = true;
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

TEST(CliShapeTest, GlobalOptionsAreTakenAnywhereOnTheLine) {
  Home home;
  ProcessResult r = home.run({"generate", "rmat", "--nodes", "2000", "-o", home / "g", "--threads", "1", "--log-level",
                              "warn"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(home / "g/edge_index.npy"));
  EXPECT_EQ(r.err, "") << "--log-level warn after the command still silences the info lines";
  // Checked as where they come first.
  r = home.run({"inspect", home / "g", "--threads", "abc"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--threads: expected an integer, got 'abc'");
  // In partita-full too (`run` is one of its commands), and under a command group.
  r = home.run({"run", home / "missing.yaml", "--threads", "1"});
  EXPECT_CONTAINS(r.err, "cannot read job file " + home / "missing.yaml") << "the job file is what is wrong, not the flag";
  EXPECT_EQ(r.err.find("--threads"), std::string::npos) << r.err;
  r = home.run({"job", "list", "--address", "127.0.0.1:abc", "--log-level", "warn"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--address '127.0.0.1:abc': the port is not a number");
}

TEST(CliShapeTest, StopAloneRefusesAndNamesWhatStopsAJobOrTheCluster) {
  Home home;
  ForegroundHead head(home);
  ASSERT_FALSE(head.address.empty());
  ProcessResult r = home.run({"--insecure", "stop", "--address", head.address});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "partita job stop JOB");
  EXPECT_CONTAINS(r.err, "partita down");
  r = home.run({"--insecure", "stop", "job-1", "--cluster", "--address", head.address});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "not both");
  // Without a terminal, the whole cluster stops only with --yes; nothing else reaches the head.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--insecure", "down", "--address", head.address},
        std::vector<std::string>{"--insecure", "stop", "--cluster", "--address", head.address}}) {
    r = home.run(args);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_CONTAINS(r.err, "needs --yes when there is no terminal");
    EXPECT_CONTAINS(r.err, head.address);
  }
  EXPECT_TRUE(head.process.running()) << "a refused stop stops nothing";
  r = home.run({"--insecure", "stop", "--cluster", "--yes", "--address", head.address});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "stopped the cluster of " + head.address + ": 0 node(s) and the head");
  EXPECT_EQ(head.process.wait(kProcessSeconds).exit_code, 0);
}

TEST(CliShapeTest, DownOnATerminalAsksAndStopsOnlyOnYes) {
  Home home;
  ForegroundHead head(home);
  ASSERT_FALSE(head.address.empty());
  const std::string prompt = "and the head? [y/N] ";
  auto [said, code] = run_on_a_terminal(home, {"--insecure", "down", "--address", head.address}, prompt, "n");
  EXPECT_EQ(code, 1) << said;
  EXPECT_CONTAINS(said, "stop the whole cluster of " + head.address + ": 0 running job(s), 0 node(s) and the head?");
  EXPECT_CONTAINS(said, "not confirmed; nothing was stopped");
  EXPECT_TRUE(head.process.running()) << "a 'n' stops nothing";
  std::tie(said, code) = run_on_a_terminal(home, {"--insecure", "down", "--address", head.address}, prompt, "y");
  EXPECT_EQ(code, 0) << said;
  EXPECT_CONTAINS(said, "stopped the cluster of " + head.address);
  EXPECT_EQ(head.process.wait(kProcessSeconds).exit_code, 0);
}

TEST(CliShapeTest, TheHeadsAddressComesFromTheFlagThenTheEnvironmentThenTheFileThenTheDefault) {
  Home home;
  ForegroundHead head(home);
  ASSERT_FALSE(head.address.empty());
  const std::string nowhere = "127.0.0.1:1";  // nothing listens on port 1
  const auto status = [&](const std::vector<std::string>& flags, const std::vector<std::string>& env) {
    std::vector<std::string> args{"--insecure", "status", "--timeout", "3"};
    args.insert(args.end(), flags.begin(), flags.end());
    return home.run(args, env);
  };
  // The environment, where nothing else says.
  ProcessResult r = status({}, {"PARTITA_ADDRESS=" + head.address});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "head " + head.address);
  // The flag over the environment.
  r = status({"--address", head.address}, {"PARTITA_ADDRESS=" + nowhere});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = status({"--address", nowhere}, {"PARTITA_ADDRESS=" + head.address});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "cannot reach the head at " + nowhere);
  // The file, under the environment.
  fs::create_directories(home / ".partita");
  testing::write_text(home / ".partita/head_address", head.address + "\n");
  r = status({}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "head " + head.address);
  r = status({}, {"PARTITA_ADDRESS=" + nowhere});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "cannot reach the head at " + nowhere);
  // Nothing: the default (whatever answers there, the command names it).
  fs::remove(home / ".partita/head_address");
  r = status({}, {});
  EXPECT_CONTAINS(r.out + r.err, "127.0.0.1:7070");
  // A bad address from the environment is named as such.
  r = status({}, {"PARTITA_ADDRESS=127.0.0.1:http"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "'127.0.0.1:http': the port is not a number");
}

TEST(CliShapeTest, StartDetachesAHeadAndANodeThatDownStops) {
  Home home;
  ProcessResult r = home.run({"--insecure", "start", "--head", "--listen", "127.0.0.1:0", "--runs", home / "runs"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string head = started_on(r.out);
  ASSERT_FALSE(head.empty()) << r.out;
  EXPECT_CONTAINS(r.out, "its log: " + home / ".partita/logs/head.log");
  EXPECT_CONTAINS(r.out, "partita start --address " + head);
  EXPECT_CONTAINS(r.out, "partita down");
  const pid_t head_pid = home.pid_of("head");
  ASSERT_GT(head_pid, 0);
  EXPECT_TRUE(testing::process_runs(head_pid)) << "the head goes on after start returned";
  EXPECT_EQ(testing::read_text(home / ".partita/head_address"), head + "\n");

  // A second head of the same user is refused, naming the first.
  r = home.run({"--insecure", "start", "--head", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "runs already (pid " + std::to_string(head_pid));
  r = home.run({"start"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "start needs --head");

  // A node joins it; the commands that follow find the head without --address.
  r = home.run({"--insecure", "start", "--address", head, "--name", "n1", "--listen", "127.0.0.1:0", "--cache",
                home / "cache"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "started node node-n1");
  EXPECT_CONTAINS(r.out, "its log: " + home / ".partita/logs/node-n1.log");
  const pid_t node_pid = home.pid_of("node-n1");
  ASSERT_GT(node_pid, 0);
  r = home.run({"--insecure", "status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["head"], head);
  ASSERT_EQ(s["nodes"].size(), 1u) << s.dump(2);
  EXPECT_EQ(s["nodes"][0]["name"], "n1");
  r = home.run({"--insecure", "job", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "no jobs on " + head);

  // A node whose head is not there fails at start, saying why, and leaves no pid file.
  r = home.run({"--insecure", "start", "--address", "127.0.0.1:1", "--name", "lost", "--join-timeout", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "the daemon exited at start-up");
  EXPECT_CONTAINS(r.err, "127.0.0.1:1");
  EXPECT_FALSE(fs::exists(home / ".partita/node-lost.pid"));

  r = home.run({"--insecure", "down", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "stopped the cluster of " + head + ": 1 node(s) and the head");
  EXPECT_TRUE(ends_within(head_pid, 30));
  EXPECT_TRUE(ends_within(node_pid, 30));
  EXPECT_FALSE(fs::exists(home / ".partita/head_address")) << "a stopped head's address is forgotten";
  EXPECT_FALSE(fs::exists(home / ".partita/head.pid")) << "and its pid file";
  EXPECT_FALSE(fs::exists(home / ".partita/node-n1.pid"));
  // An orderly stop: the node leaves, it is not "dead".
  const std::string log = testing::read_text(home / ".partita/logs/head.log");
  EXPECT_CONTAINS(log, "[info] head: member 1 (n1, ");
  EXPECT_CONTAINS(log, "left: the cluster is stopping");
  EXPECT_EQ(log.find("is dead"), std::string::npos) << log;
}

TEST(CliShapeTest, AStartThatBlocksStaysInTheForeground) {
  Home home;
  ChildProcess head({"/usr/bin/env", "HOME=" + home.path(), kPartitaBinary, "--insecure", "start", "--head", "--block",
                     "--listen", "127.0.0.1:0", "--runs", home / "runs"});
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(home / ".partita/head_address") && head.running() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(head.running()) << head.errors_so_far();
  EXPECT_CONTAINS(head.output_so_far(), "partita daemon listening on ");
  EXPECT_EQ(home.pid_of("head"), head.pid());
  ProcessResult r = home.run({"--insecure", "down", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(head.wait(kProcessSeconds).exit_code, 0);
  EXPECT_FALSE(fs::exists(home / ".partita/head.pid"));
}

// What a user gets wrong is named once, in words.
TEST(CliShapeTest, AddressesAndPeersAreNamedOnceAndInWords) {
  Home home;
  ProcessResult r = home.run({"--insecure", "daemon", "--listen", "127.0.0.1:abcdefg"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "the port is not a number");
  EXPECT_EQ(r.err.find("out of range"), std::string::npos) << r.err;
  r = home.run({"--insecure", "daemon", "--listen", "127.0.0.1:99999"});
  EXPECT_CONTAINS(r.err, "port out of range 0..65535");

  ForegroundHead head(home);
  ASSERT_FALSE(head.address.empty());
  r = home.run({"--insecure", "daemon", "--head", "--listen", head.address});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(count(r.err, "cannot listen on " + head.address), 1u) << r.err;
  EXPECT_CONTAINS(r.err, "Address already in use");

  // A server that answers with HTTP, as anything but a Partita process might.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&bound), sizeof(bound)), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof(bound);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &len);
  const std::string other = "127.0.0.1:" + std::to_string(ntohs(bound.sin_port));
  std::atomic<bool> done{false};
  std::thread server([&] {
    while (!done.load()) {
      pollfd p{listener, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept(listener, nullptr, nullptr);
      if (c < 0) continue;
      char buf[512];
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 2000) > 0) (void)::read(c, buf, sizeof(buf));
      const std::string reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
      (void)::write(c, reply.data(), reply.size());
      ::close(c);
    }
  });
  ProcessResult init = home.run({"cluster", "init", home / ".partita/tls"});
  EXPECT_EQ(init.exit_code, 0) << init.err;
  r = home.run({"status", "--address", other, "--timeout", "5"});
  done.store(true);
  server.join();
  ::close(listener);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "does not speak TLS");
  EXPECT_EQ(r.err.find("wrong version number"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace partita
