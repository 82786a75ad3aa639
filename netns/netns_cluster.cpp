#include "netns/netns_cluster.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/subprocess.h"

namespace partita {

namespace {

using Clock = std::chrono::steady_clock;

// The wire's MTU: loopback's order (64 KB), below the TAP driver's limit of 65535 - 14.
constexpr int kWireMtu = 65000;
// Frames one host may have in flight on the wire; beyond, the wire drops what it is sent
// (as a full link buffer does, and TCP sends again). 10 Gbit/s for 1 ms is 1.25 MB.
constexpr size_t kWireHeldBytes = 64u << 20;

void run_ip(const std::vector<std::string>& args, const char* tool = NetnsCluster::kIp) {
  std::vector<std::string> argv{tool};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, 30);
  if (r.exit_code != 0) {
    std::string line;
    for (const auto& a : argv) line += a + " ";
    throw Error(line + "failed: " + r.err);
  }
}

// Namespaces of processes that are gone.
void remove_stale() {
  ProcessResult r = run_process({NetnsCluster::kIp, "netns", "list"}, 30);
  std::istringstream lines(r.out);
  std::string name;
  while (lines >> name) {
    if (name.rfind("ptc-", 0) == 0) {
      const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + 4));
      if (pid > 0 && ::kill(pid, 0) != 0) run_process({NetnsCluster::kIp, "netns", "del", name}, 30);
    }
    lines.ignore(1 << 12, '\n');  // "(id: N)" after the name
  }
}

// Moves the calling thread (only it) into namespace `ns`. Throws Error naming it.
void enter_namespace(const std::string& ns) {
  const std::string path = "/run/netns/" + ns;
  const int ns_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns_fd < 0 || ::setns(ns_fd, CLONE_NEWNET) != 0) {
    const std::string why = std::strerror(errno);
    if (ns_fd >= 0) ::close(ns_fd);
    throw Error("cannot enter network namespace " + path + ": " + why);
  }
  ::close(ns_fd);
}

// A TAP device named `device` in namespace `ns` (made on a thread that enters it, so this
// thread stays where it is); the returned descriptor is non-blocking. The device goes when
// the descriptor is closed.
int open_tap(const std::string& ns, const std::string& device) {
  int fd = -1;
  std::string failure;
  std::thread enter([&] {
    try {
      enter_namespace(ns);
    } catch (const Error& e) {
      failure = e.what();
      return;
    }
    fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      failure = std::string("cannot open /dev/net/tun: ") + std::strerror(errno);
      return;
    }
    ifreq request{};
    request.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::strncpy(request.ifr_name, device.c_str(), IFNAMSIZ - 1);
    if (::ioctl(fd, TUNSETIFF, &request) != 0) {
      failure = "cannot create TAP device " + device + " in " + ns + ": " + std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  });
  enter.join();
  if (fd < 0) throw Error(failure);
  return fd;
}

}  // namespace

// Each host's TAP eth0 and its TAP port on the bridge, and the thread between them: what
// the host sends is held for the delay, then written to the port; what the port sends
// reaches the host at once (the other host's wire delayed it already).
struct NetnsCluster::Wire {
  struct Frame {
    Clock::time_point due;
    std::vector<char> bytes;
  };
  struct Link {
    int host_fd = -1, port_fd = -1;
    std::deque<Frame> held;
    size_t held_bytes = 0;
  };
  std::vector<Link> links;
  std::atomic<int64_t> delay_ns{0};
  std::string rate;  // tbf's on every eth0, "" for none
  int stop_fd = -1;
  std::thread thread;

  Wire() {
    stop_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (stop_fd < 0) throw Error(std::string("cannot make an eventfd for the wire: ") + std::strerror(errno));
  }
  ~Wire() {
    if (thread.joinable()) {
      const uint64_t one = 1;
      if (::write(stop_fd, &one, sizeof one) < 0) {
        // An eventfd write fails only on overflow; the thread stops at its next wake-up anyway.
      }
      thread.join();
    }
    for (Link& l : links) {
      if (l.host_fd >= 0) ::close(l.host_fd);
      if (l.port_fd >= 0) ::close(l.port_fd);
    }
    ::close(stop_fd);
  }

  // Until stop_fd is written: carries frames both ways, holding each host's for the delay.
  void run() {
    std::vector<char> buffer(kWireMtu + 64);
    std::vector<pollfd> fds(1 + 2 * links.size());
    fds[0] = {stop_fd, POLLIN, 0};
    for (size_t i = 0; i < links.size(); ++i) {
      fds[1 + 2 * i] = {links[i].host_fd, POLLIN, 0};
      fds[2 + 2 * i] = {links[i].port_fd, POLLIN, 0};
    }
    for (;;) {
      // Sleep until a frame is readable or the earliest held frame is due (at most 100 ms).
      Clock::time_point wake = Clock::now() + std::chrono::milliseconds(100);
      for (const Link& l : links) {
        if (!l.held.empty()) wake = std::min(wake, l.held.front().due);
      }
      const int64_t wait_ns = std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::nanoseconds>(wake - Clock::now()).count());
      const timespec timeout{static_cast<time_t>(wait_ns / 1000000000), static_cast<long>(wait_ns % 1000000000)};
      for (pollfd& p : fds) p.revents = 0;
      if (::ppoll(fds.data(), fds.size(), &timeout, nullptr) < 0 && errno != EINTR) {
        spdlog::error("network namespaces: the wire stops, its hosts are cut off: ppoll: {}", std::strerror(errno));
        return;
      }
      if (fds[0].revents != 0) return;
      // A device that is gone (its namespace deleted from outside) polls as an error for
      // ever, and reads fail: carrying on would spin this real-time thread on a core.
      for (size_t f = 1; f < fds.size(); ++f) {
        if ((fds[f].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) {
          spdlog::error("network namespaces: the wire stops, its hosts are cut off: host {}'s {} failed",
                        (f - 1) / 2, f % 2 == 1 ? "eth0" : "switch port");
          return;
        }
      }
      const auto delay = std::chrono::nanoseconds(delay_ns.load(std::memory_order_relaxed));
      for (size_t i = 0; i < links.size(); ++i) {
        Link& l = links[i];
        if (fds[1 + 2 * i].revents != 0) {
          for (int n = 0; n < 64; ++n) {  // a bounded batch, so one busy host does not starve the rest
            const ssize_t got = ::read(l.host_fd, buffer.data(), buffer.size());
            if (got <= 0) break;
            if (delay.count() == 0 && l.held.empty()) {
              forward(l.port_fd, buffer.data(), got);
            } else if (l.held_bytes + static_cast<size_t>(got) <= kWireHeldBytes) {
              l.held.push_back({Clock::now() + delay, std::vector<char>(buffer.data(), buffer.data() + got)});
              l.held_bytes += static_cast<size_t>(got);
            }
          }
        }
        if (fds[2 + 2 * i].revents != 0) {
          for (int n = 0; n < 64; ++n) {
            const ssize_t got = ::read(l.port_fd, buffer.data(), buffer.size());
            if (got <= 0) break;
            forward(l.host_fd, buffer.data(), got);
          }
        }
      }
      const Clock::time_point now = Clock::now();
      for (Link& l : links) {
        while (!l.held.empty() && l.held.front().due <= now) {
          forward(l.port_fd, l.held.front().bytes.data(), static_cast<ssize_t>(l.held.front().bytes.size()));
          l.held_bytes -= l.held.front().bytes.size();
          l.held.pop_front();
        }
      }
    }
  }

  // A write to a TAP descriptor hands the frame to the device's receive path; one it
  // refuses is lost, as on a wire.
  static void forward(int fd, const char* frame, ssize_t size) {
    if (::write(fd, frame, static_cast<size_t>(size)) < 0) {
      // Dropped (the receiving queue is full); TCP sends it again.
    }
  }
};

NetnsCluster::NetnsCluster(int hosts, NetnsLink link) : hosts_(hosts) {
  if (::geteuid() != 0) {
    unavailable_ = "network namespaces need root (this process runs as uid " + std::to_string(::geteuid()) + ")";
    return;
  }
  if (!std::filesystem::exists(kIp)) {
    unavailable_ = std::string(kIp) + " is missing (Debian package iproute2)";
    return;
  }
  if (link == NetnsLink::kWire && !std::filesystem::exists(kTc)) {
    unavailable_ = std::string(kTc) + " is missing (Debian package iproute2)";
    return;
  }
  remove_stale();
  static std::atomic<int> counter{0};
  const int n = counter++;
  name_ = "ptc-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  subnet_ = static_cast<int>((::getpid() * 7 + n) % 250) + 1;
  try {
    run_ip({"netns", "add", switch_name()});
    namespaces_.push_back(switch_name());
    run_ip({"-n", switch_name(), "link", "add", "br0", "type", "bridge"});
    if (link == NetnsLink::kWire) wire_ = std::make_unique<Wire>();
    for (int i = 0; i < hosts; ++i) {
      const std::string host = host_name(i);
      run_ip({"netns", "add", host});
      namespaces_.push_back(host);
      if (link == NetnsLink::kWire) {
        add_wire_link(i);
      } else {
        add_veth_link(i);
      }
      run_ip({"-n", host, "addr", "add", address(i) + "/24", "dev", "eth0"});
      run_ip({"-n", host, "link", "set", "eth0", "up"});
      run_ip({"-n", host, "link", "set", "lo", "up"});
    }
    run_ip({"-n", switch_name(), "link", "set", "br0", "up"});
    if (wire_) {
      wire_->thread = std::thread([w = wire_.get()] { w->run(); });
      // Real-time priority, so that a held frame leaves when due on a loaded machine too
      // (netem's timers run in the kernel's softirq); when refused, the delays only stretch.
      const sched_param priority{10};
      if (::pthread_setschedparam(wire_->thread.native_handle(), SCHED_FIFO, &priority) != 0) {
        spdlog::warn("network namespaces: the wire thread runs without real-time priority; delays may stretch");
      }
    }
  } catch (const std::exception& e) {  // also std::thread's: the destructor then deletes what exists
    unavailable_ = std::string("cannot create network namespaces: ") + e.what();
  }
}

// One veth pair straight between the host and the switch: nothing in this namespace.
void NetnsCluster::add_veth_link(int i) {
  const std::string port = "p" + std::to_string(i);
  run_ip({"link", "add", "eth0", "netns", host_name(i), "type", "veth", "peer", "name", port, "netns", switch_name()});
  run_ip({"-n", switch_name(), "link", "set", port, "master", "br0", "up"});
}

void NetnsCluster::add_wire_link(int i) {
  const std::string port = "p" + std::to_string(i);
  Wire::Link l;
  l.host_fd = open_tap(host_name(i), "eth0");
  try {
    l.port_fd = open_tap(switch_name(), port);
  } catch (...) {
    ::close(l.host_fd);
    throw;
  }
  wire_->links.push_back(std::move(l));
  const std::string mtu = std::to_string(kWireMtu);
  run_ip({"-n", host_name(i), "link", "set", "eth0", "mtu", mtu});
  run_ip({"-n", switch_name(), "link", "set", port, "mtu", mtu});
  run_ip({"-n", switch_name(), "link", "set", port, "master", "br0", "up"});
}

NetnsCluster::~NetnsCluster() {
  wire_.reset();  // the thread first: it reads the devices the namespaces hold
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
    run_process({kIp, "netns", "del", *it}, 30);
  }
}

std::string NetnsCluster::address(int host) const {
  return "10.77." + std::to_string(subnet_) + "." + std::to_string(host + 1);
}

std::string NetnsCluster::host_name(int host) const { return name_ + "-h" + std::to_string(host); }

std::string NetnsCluster::switch_name() const { return name_ + "-sw"; }

std::vector<std::string> NetnsCluster::command(int host, const std::vector<std::string>& argv) const {
  std::vector<std::string> full{kIp, "netns", "exec", host_name(host)};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

void NetnsCluster::enter(int host) const { enter_namespace(host_name(host)); }

void NetnsCluster::set_wire(double delay_ms, const std::string& rate) {
  if (!wire_) throw Error("NetnsCluster::set_wire: the hosts are joined by veth pairs, not by the wire");
  if (delay_ms < 0) throw Error("NetnsCluster::set_wire: a negative delay (" + std::to_string(delay_ms) + " ms)");
  wire_->delay_ns.store(static_cast<int64_t>(delay_ms * 1e6), std::memory_order_relaxed);
  for (int i = 0; i < hosts_; ++i) {
    const std::vector<std::string> tc{"-n", host_name(i), "qdisc"};
    if (!rate.empty()) {
      // A bucket of 1 MB (a millisecond at 10 Gbit/s) and a queue of 5 ms at the rate.
      std::vector<std::string> args = tc;
      args.insert(args.end(), {"replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "1mb", "latency", "5ms"});
      run_ip(args, kTc);
    } else if (!wire_->rate.empty()) {
      std::vector<std::string> args = tc;
      args.insert(args.end(), {"del", "dev", "eth0", "root"});
      run_ip(args, kTc);
    }
  }
  wire_->rate = rate;
}

}  // namespace partita
