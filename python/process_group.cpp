#include "python/process_group.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "base/error.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "runtime/collective/allreduce_client.h"
#include "runtime/collective/allreduce_group.h"
#include "runtime/collective/allreduce_member.h"

namespace partita::python {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string what_group(const ProcessGroupOptions& o) {
  return "init_process_group(rank=" + std::to_string(o.rank) + ", world_size=" + std::to_string(o.size) +
         ", group='" + o.group.substr(0, 64) + "')";
}

}  // namespace

std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), "9", &hints, &found); rc != 0) {
    throw Error("the head's host '" + host + "' does not resolve: " + ::gai_strerror(rc));
  }
  std::string address;
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && address.empty(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    char text[NI_MAXHOST];
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      why = std::strerror(errno);
    } else if (const int rc = ::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, text, sizeof(text), nullptr, 0,
                                            NI_NUMERICHOST);
               rc != 0) {
      why = ::gai_strerror(rc);
    } else {
      address = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (address.empty()) throw Error("no route from this machine to the head's host '" + host + "': " + why);
  return address;
}

ProcessGroup::ProcessGroup(const ProcessGroupOptions& options) : options_(options) {
  const std::string what = what_group(options_);
  if (options_.size < 1) throw UsageError(what + ": the world size must be 1 or more");
  if (options_.rank < 0 || options_.rank >= options_.size) {
    throw UsageError(what + ": the rank must be 0 to world_size - 1 (" + std::to_string(options_.size - 1) + ")");
  }
  if (options_.group.empty()) throw UsageError(what + ": the group needs a name");
  if (options_.timeout.count() <= 0 || options_.op_timeout.count() <= 0) {
    throw UsageError(what + ": the timeouts must be positive");
  }
  if (options_.size == 1) return;  // nothing to sum with
  const std::string head = EmbeddedRuntime::instance().head_address();
  if (head.empty()) {
    throw UsageError(what + ": " + std::to_string(options_.size) +
                     " ranks find each other through a cluster's head, and this process's runtime runs in "
                     "one process: call partita.init(address='HEAD:PORT') first");
  }
  const runtime::Endpoint endpoint = runtime::parse_endpoint(head, "head address");
  host_ = local_address_toward(endpoint.host);
  const auto until = Clock::now() + options_.timeout;
  auto left = [&] { return std::max(milliseconds(1), std::chrono::duration_cast<milliseconds>(until - Clock::now())); };
  EmbeddedRuntime::instance().attach(this, what, [&](runtime::Runtime& rt) {
    caf::actor_system& system = rt.system();
    const caf::actor member = caf::actor_cast<caf::actor>(
        runtime::spawn_allreduce_member(system, runtime::AllreduceConfig{options_.rank, options_.size, host_}));
    {
      std::lock_guard<std::mutex> lock(member_mutex_);
      member_ = member;
    }
    try {
      const runtime::head_actor head_handle = runtime::connect_head(system, endpoint, left());
      const std::vector<caf::actor> members =
          runtime::rendezvous(system, head_handle, head, options_.group, options_.rank, options_.size, member, left());
      spdlog::debug("{}: the {} ranks met at head {}; this member on {}", what, options_.size, head, host_);
      if (options_.rank == 0) runtime::connect_allreduce_group(system, members, left());
      // Every rank returns once the ring is up: a first sum waits for the wiring.
      runtime::Allreduce barrier(system, member, left());
      float one = 1;
      barrier.sum(&one, 1);
      if (one != static_cast<float>(options_.size)) {
        throw Error("the group's first sum gave " + std::to_string(one) + ", not its size");
      }
      std::lock_guard<std::mutex> lock(mutex_);
      client_ = std::make_unique<runtime::Allreduce>(system, member, options_.op_timeout);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
  });
  attached_ = true;
}

ProcessGroup::~ProcessGroup() {
  try {
    close();
  } catch (const std::exception& e) {
    spdlog::warn("process group '{}': {}", options_.group, e.what());
  }
}

void ProcessGroup::allreduce_sum(float* data, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) {
    throw RuntimeClosed("allreduce of group '" + options_.group.substr(0, 64) + "': " +
                        (runtime_stopped_ ? "the partita runtime was shut down (partita.shutdown())"
                                          : "the process group was destroyed (destroy_process_group())"));
  }
  if (options_.size == 1 || n == 0) return;
  if (!client_) throw RuntimeClosed("allreduce of group '" + options_.group.substr(0, 64) + "': it is not set up");
  client_->sum(data, n);
}

void ProcessGroup::destroy() {
  {
    // The last sum of a rank returns once its own result is in, while the others may still
    // be reading theirs: a member stopped then would fail them. A last sum of one float
    // tells every rank that all have finished their real sums; whether this one completes
    // everywhere does not matter, so its failure is only logged.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_ && client_) {
      try {
        float one = 1;
        client_->sum(&one, 1);
      } catch (const std::exception& e) {
        spdlog::debug("process group '{}': leaving: {}", options_.group, e.what());
      }
    }
  }
  close();
}

void ProcessGroup::close() {
  if (attached_) {
    EmbeddedRuntime::instance().detach(this);
    attached_ = false;
  }
  close_for_shutdown();
  std::lock_guard<std::mutex> lock(mutex_);
  runtime_stopped_ = false;
}

bool ProcessGroup::destroyed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void ProcessGroup::close_for_shutdown() {
  // The member first, without the lock: a sum waiting on it returns (its member is lost),
  // and lets go of the lock.
  caf::actor member;
  {
    std::lock_guard<std::mutex> lock(member_mutex_);
    member = std::exchange(member_, nullptr);
  }
  if (member) caf::anon_send_exit(member, caf::exit_reason::user_shutdown);
  std::lock_guard<std::mutex> lock(mutex_);
  client_.reset();
  if (!closed_) runtime_stopped_ = true;
  closed_ = true;
}

}  // namespace partita::python
