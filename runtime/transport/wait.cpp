#include "runtime/transport/wait.h"

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/file_util.h"

namespace partita::runtime {

void wait_ready(pollfd* fds, size_t count, Deadline deadline, const Wakeup* wakeup, const std::string& doing) {
  // The wakeup rides along as one more descriptor, so that a notify ends the poll at once.
  // On the stack: this runs every time a socket is full or empty.
  if (count > kMaxWaitDescriptors) throw Error("wait_ready: " + std::to_string(count) + " descriptors while " + doing);
  pollfd all[kMaxWaitDescriptors + 1];
  std::copy(fds, fds + count, all);
  all[count] = {wakeup != nullptr ? wakeup->fd() : -1, POLLIN, 0};
  for (;;) {
    int timeout_ms = -1;
    if (deadline != kNoDeadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
    }
    const int n = ::poll(all, count + 1, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error("poll failed while " + doing + ": " + errno_text());
    if (all[count].revents != 0) throw Interrupted("interrupted while " + doing);
    if (n > 0) {
      for (size_t i = 0; i < count; ++i) fds[i].revents = all[i].revents;
      return;
    }
    if (timeout_ms == 0) throw TimedOut("timed out while " + doing);
  }
}

short wait_ready(int fd, short events, Deadline deadline, const Wakeup* wakeup, const std::string& doing) {
  pollfd p{fd, events, 0};
  wait_ready(&p, 1, deadline, wakeup, doing);
  return p.revents;
}

Wakeup::Wakeup() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw Error("cannot create an eventfd: " + errno_text());
}

Wakeup::~Wakeup() { ::close(fd_); }

void Wakeup::notify() {
  const uint64_t one = 1;
  if (::write(fd_, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN) {
    spdlog::error("transport: cannot signal a wakeup: {}", errno_text());
  }
}

bool Wakeup::notified() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace partita::runtime
