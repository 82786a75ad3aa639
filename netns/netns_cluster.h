// Separate hosts on one machine: Linux network namespaces, one per host, each with its own
// network stack and a private address (10.77.S.N/24) on one virtual switch, so that daemons
// talk over links and a bridge rather than loopback, and an address bound in one host does
// not exist in the others (or outside: the creating process cannot reach them). The cluster
// tests and `partita bench network` run their daemons in these hosts.
//
//   switch namespace  <NAME>-sw: bridge br0
//   host namespaces   <NAME>-h0, <NAME>-h1, ...: eth0 (linked to br0) with 10.77.S.(i+1), lo
//
// NAME is "ptc-<pid>-<n>", unique per cluster; S depends on it, so concurrent tests (ctest -j)
// each have their own switch. Commands run in a host with `ip netns exec` (command()); the
// child keeps the pid (ip execs the command), so signals reach the daemon itself.
//
// Links. By default a veth pair joins each host's eth0 to the bridge: the kernel's own path,
// as fast as the machine. With NetnsLink::kWire, eth0 is instead a TAP device whose frames
// this object carries to and from a TAP port of the bridge on a thread of its own, so that
// what a host sends can be held back (set_wire(): a delay on every host's way out, as
// `tc netem delay` on eth0 would; and a token-bucket rate, `tc ... tbf`, on eth0). The
// wire is in user space because kernels without sch_netem (CONFIG_NET_SCH_NETEM unset, as
// on the machines this project runs on) cannot delay packets at all; its MTU is 64 KB, as
// loopback's, so that frames, not bytes, cost the thread its system calls.
//
// Needs root (CAP_SYS_ADMIN) and iproute2: unavailable() says why not, and the caller skips.
// The destructor stops the wire and deletes every namespace (which deletes their links),
// also when the caller fails; namespaces left by a process that died (SIGKILL, a crash) are
// deleted by the next NetnsCluster, which removes every ptc-<pid>-* whose pid no longer runs.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace partita {

enum class NetnsLink {
  kVeth,  // the kernel's veth pair: nothing in between
  kWire,  // TAP devices and a forwarding thread that can delay and rate-limit (set_wire())
};

class NetnsCluster {
 public:
  static constexpr const char* kIp = "/usr/sbin/ip";
  static constexpr const char* kTc = "/usr/sbin/tc";

  // Creates `hosts` host namespaces on one switch. Check unavailable() before use.
  explicit NetnsCluster(int hosts, NetnsLink link = NetnsLink::kVeth);
  ~NetnsCluster();
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  // "" when the hosts exist; otherwise why not (for GTEST_SKIP or a benchmark's message).
  const std::string& unavailable() const { return unavailable_; }

  int hosts() const { return hosts_; }
  // Host i's address, e.g. "10.77.42.1".
  std::string address(int host) const;
  std::string host_name(int host) const;

  // argv that runs `argv` in host `host`.
  std::vector<std::string> command(int host, const std::vector<std::string>& argv) const;

  // Moves the calling thread (not the process) into host `host`'s network namespace, e.g.
  // to open a socket there. Throws Error if it cannot.
  void enter(int host) const;

  // kWire only: from now on, what every host sends waits `delay_ms` before it reaches the
  // switch (the one-way delay between two hosts; a round trip is twice that), and leaves
  // eth0 at most at `rate` (tc's syntax, e.g. "10gbit"; "" for no limit). Throws Error if
  // the links are veth or tc fails (the message names the command).
  void set_wire(double delay_ms, const std::string& rate);

 private:
  struct Wire;
  std::string switch_name() const;
  void add_veth_link(int host);
  void add_wire_link(int host);

  int hosts_ = 0;
  std::string name_;
  int subnet_ = 1;
  std::vector<std::string> namespaces_;  // created, in order
  std::string unavailable_;
  std::unique_ptr<Wire> wire_;  // kWire: the TAP devices and their thread
};

}  // namespace partita
