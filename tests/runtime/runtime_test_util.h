// Helpers for the runtime tests.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transport/request_channel.h"
#include "test_util.h"

namespace partita::testing {

// A port that refuses connections: bound (so nobody else takes it) but not listening.
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot bind a loopback socket");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

struct ChannelReplyBytes {
  std::vector<char> head, body;
};

// The next reply of `client`, head and body in vectors of exactly their bytes.
inline ChannelReplyBytes next_reply(runtime::RequestClient& client, std::chrono::milliseconds deadline) {
  ChannelReplyBytes r;
  uint64_t body_bytes = 0;
  r.head.resize(client.receive_head(r.head, body_bytes, deadline));
  client.receive_body(r.body, deadline);
  r.body.resize(body_bytes);
  return r;
}

}  // namespace partita::testing
