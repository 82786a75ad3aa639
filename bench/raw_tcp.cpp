#include "bench/raw_tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/file_util.h"
#include "base/stopwatch.h"

namespace partita::bench {

namespace {

constexpr timeval kBound{120, 0};

void bound(int fd) {
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &kBound, sizeof kBound);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kBound, sizeof kBound);
}

}  // namespace

double raw_tcp_seconds(uint64_t total, uint64_t piece, int warmup) {
  const char* what = "raw TCP baseline";
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ScopedFd listen_fd(listener);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw Error(std::string(what) + ": cannot listen on loopback: " + errno_text());
  }
  bound(listener);  // accept gives up too
  piece = std::max<uint64_t>(1, std::min(piece, total));
  std::vector<char> out(piece, 1), in(piece);
  std::string failure;
  std::thread sender([&] {
    const int fd = ::accept(listen_fd.get(), nullptr, nullptr);
    if (fd < 0) return;
    ScopedFd conn(fd);
    bound(fd);
    try {
      for (int w = 0; w < warmup; ++w) write_all(fd, what, out.data(), out.size());
      for (uint64_t left = total; left > 0; left -= std::min(left, piece)) {
        write_all(fd, what, out.data(), std::min(left, piece));
      }
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ScopedFd conn(fd);
  if (fd >= 0) bound(fd);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::shutdown(listener, SHUT_RDWR);  // ends the sender's accept
    sender.join();
    throw Error(std::string(what) + ": cannot connect on loopback: " + errno_text());
  }
  try {
    for (int w = 0; w < warmup; ++w) read_exactly(fd, what, in.data(), in.size());
    Stopwatch watch;
    for (uint64_t left = total; left > 0; left -= std::min(left, piece)) {
      read_exactly(fd, what, in.data(), std::min(left, piece));
    }
    const double seconds = watch.seconds();
    sender.join();
    if (!failure.empty()) throw Error(failure);
    return seconds;
  } catch (...) {
    ::shutdown(fd, SHUT_RDWR);  // ends the sender's writes
    if (sender.joinable()) sender.join();
    throw;
  }
}

}  // namespace partita::bench
