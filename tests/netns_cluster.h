// Separate hosts for cluster tests: Linux network namespaces, one per host, each with its
// own network stack and a private address (10.77.S.N/24) on one virtual switch, so that
// daemons talk over veth pairs and a bridge rather than loopback, and an address bound in
// one host does not exist in the others (or outside: the test process cannot reach them).
//
//   switch namespace  <NAME>-sw: bridge br0
//   host namespaces   <NAME>-h0, <NAME>-h1, ...: eth0 (veth to br0) with 10.77.S.(i+1), lo
//
// NAME is "ptc-<pid>-<n>", unique per test; S depends on it, so concurrent tests (ctest -j)
// each have their own switch. Commands run in a host with `ip netns exec` (command()); the
// child keeps the pid (ip execs the command), so signals reach the daemon itself.
//
// Needs root (CAP_SYS_ADMIN) and iproute2: available() says why not, and the test skips.
// The destructor deletes every namespace (which deletes their links), also when the test
// fails; namespaces left by a test process that died (SIGKILL, a crash) are deleted by the
// next NetnsCluster, which removes every ptc-<pid>-* whose pid no longer runs.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/subprocess.h"

namespace partita::testing {

class NetnsCluster {
 public:
  static constexpr const char* kIp = "/usr/sbin/ip";

  // Creates `hosts` host namespaces on one switch. Check available() before use.
  explicit NetnsCluster(int hosts) {
    if (::geteuid() != 0) {
      unavailable_ = "network namespaces need root (this test runs as uid " + std::to_string(::geteuid()) + ")";
      return;
    }
    if (!std::filesystem::exists(kIp)) {
      unavailable_ = std::string(kIp) + " is missing (Debian package iproute2)";
      return;
    }
    remove_stale();
    static std::atomic<int> counter{0};
    const int n = counter++;
    name_ = "ptc-" + std::to_string(::getpid()) + "-" + std::to_string(n);
    subnet_ = static_cast<int>((::getpid() * 7 + n) % 250) + 1;
    try {
      run({"netns", "add", switch_name()});
      namespaces_.push_back(switch_name());
      run({"-n", switch_name(), "link", "add", "br0", "type", "bridge"});
      run({"-n", switch_name(), "link", "set", "br0", "up"});
      for (int i = 0; i < hosts; ++i) {
        const std::string host = host_name(i);
        run({"netns", "add", host});
        namespaces_.push_back(host);
        // One veth pair straight between the two namespaces: nothing in ours.
        run({"link", "add", "eth0", "netns", host, "type", "veth", "peer", "name", "p" + std::to_string(i), "netns",
             switch_name()});
        run({"-n", switch_name(), "link", "set", "p" + std::to_string(i), "master", "br0", "up"});
        run({"-n", host, "addr", "add", address(i) + "/24", "dev", "eth0"});
        run({"-n", host, "link", "set", "eth0", "up"});
        run({"-n", host, "link", "set", "lo", "up"});
      }
    } catch (const Error& e) {
      unavailable_ = std::string("cannot create network namespaces: ") + e.what();
    }
  }

  ~NetnsCluster() {
    for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
      run_process({kIp, "netns", "del", *it}, 30);
    }
  }

  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  // "" when the hosts exist; otherwise why not (for GTEST_SKIP).
  const std::string& unavailable() const { return unavailable_; }

  // Host i's address, e.g. "10.77.42.1".
  std::string address(int host) const {
    return "10.77." + std::to_string(subnet_) + "." + std::to_string(host + 1);
  }
  std::string host_name(int host) const { return name_ + "-h" + std::to_string(host); }

  // argv that runs `argv` in host `host`.
  std::vector<std::string> command(int host, const std::vector<std::string>& argv) const {
    std::vector<std::string> full{kIp, "netns", "exec", host_name(host)};
    full.insert(full.end(), argv.begin(), argv.end());
    return full;
  }

 private:
  std::string switch_name() const { return name_ + "-sw"; }

  static void run(const std::vector<std::string>& args) {
    std::vector<std::string> argv{kIp};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = run_process(argv, 30);
    if (r.exit_code != 0) {
      std::string line;
      for (const auto& a : argv) line += a + " ";
      throw Error(line + "failed: " + r.err);
    }
  }

  // Namespaces of test processes that are gone.
  static void remove_stale() {
    ProcessResult r = run_process({kIp, "netns", "list"}, 30);
    std::istringstream lines(r.out);
    std::string name;
    while (lines >> name) {
      if (name.rfind("ptc-", 0) == 0) {
        const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + 4));
        if (pid > 0 && ::kill(pid, 0) != 0) run_process({kIp, "netns", "del", name}, 30);
      }
      lines.ignore(1 << 12, '\n');  // "(id: N)" after the name
    }
  }

  std::string name_;
  int subnet_ = 1;
  std::vector<std::string> namespaces_;  // created, in order
  std::string unavailable_;
};

}  // namespace partita::testing
