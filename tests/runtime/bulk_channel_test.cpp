// Bulk channels over loopback: the hello pairs the right ends, strangers are refused, every
// wait ends at its deadline or its wakeup, and a peer that goes away is an error naming it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "runtime/bulk_channel.h"

namespace partita::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Accepts on a thread (accept blocks until the hello) while the test connects.
struct Accepted {
  std::thread thread;
  BulkChannel channel;
  std::string error;
};

void accept_async(BulkListener& listener, uint64_t token, uint32_t peer, Accepted& out, Deadline deadline,
                  const Wakeup* wakeup = nullptr) {
  out.thread = std::thread([&listener, token, peer, &out, deadline, wakeup] {
    try {
      out.channel = listener.accept(token, peer, 100, "peer " + std::to_string(peer), deadline, wakeup);
    } catch (const Error& e) {
      out.error = e.what();
    }
  });
}

void send_all(BulkChannel& channel, const char* data, size_t bytes) {
  while (bytes > 0) {
    const size_t n = channel.send_some(data, bytes);
    data += n;
    bytes -= n;
    if (n == 0) {
      pollfd p{channel.fd(), POLLOUT, 0};
      ::poll(&p, 1, 1000);
    }
  }
}

std::string recv_all(BulkChannel& channel, size_t bytes) {
  std::string out(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const size_t n = channel.recv_some(out.data() + got, bytes - got);
    got += n;
    if (n == 0) {
      pollfd p{channel.fd(), POLLIN, 0};
      ::poll(&p, 1, 1000);
    }
  }
  return out;
}

TEST(BulkChannelTest, PairedEndsMoveBytesBothWays) {
  BulkListener listener("127.0.0.1");
  ASSERT_NE(listener.endpoint().port, 0);
  Accepted accepted;
  const Deadline deadline = Clock::now() + 10s;
  accept_async(listener, 7, 3, accepted, deadline);
  BulkChannel client = BulkChannel::connect(listener.endpoint(), 7, 3, "server", deadline, nullptr);
  client.confirm(7, 100, deadline, nullptr);
  accepted.thread.join();
  ASSERT_EQ(accepted.error, "");
  const std::string big(3 << 20, 'x');
  std::thread sender([&] { send_all(client, big.data(), big.size()); });
  EXPECT_EQ(recv_all(accepted.channel, big.size()), big);
  sender.join();
  send_all(accepted.channel, "back", 4);
  EXPECT_EQ(recv_all(client, 4), "back");
}

TEST(BulkChannelTest, StrangersAreRefusedAndTheRightPeerStillGetsIn) {
  BulkListener listener("127.0.0.1");
  Accepted accepted;
  const Deadline deadline = Clock::now() + 10s;
  accept_async(listener, 7, 3, accepted, deadline);
  // Another group's token, the wrong peer, and a connection that says nothing at all.
  BulkChannel other_group = BulkChannel::connect(listener.endpoint(), 8, 3, "server", deadline, nullptr);
  BulkChannel wrong_peer = BulkChannel::connect(listener.endpoint(), 7, 4, "server", deadline, nullptr);
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(listener.endpoint().port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  BulkChannel right = BulkChannel::connect(listener.endpoint(), 7, 3, "server", deadline, nullptr);
  right.confirm(7, 100, deadline, nullptr);
  accepted.thread.join();
  ::close(silent);
  EXPECT_EQ(accepted.error, "");
  EXPECT_THROW(other_group.confirm(8, 100, Clock::now() + 5s, nullptr), Error) << "a refused end must hear it";
}

TEST(BulkChannelTest, AcceptEndsAtItsDeadlineOrWakeup) {
  BulkListener listener("127.0.0.1");
  try {
    listener.accept(1, 1, 2, "peer 1", Clock::now() + 50ms, nullptr);
    FAIL() << "accepted nobody";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("peer 1"), std::string::npos) << e.what();
  }
  Wakeup wakeup;
  Accepted accepted;
  accept_async(listener, 1, 1, accepted, Clock::now() + 60s, &wakeup);
  wakeup.notify();
  accepted.thread.join();
  EXPECT_NE(accepted.error.find("interrupted"), std::string::npos) << accepted.error;
  EXPECT_TRUE(wakeup.notified());
}

TEST(BulkChannelTest, APeerThatGoesAwayIsAnErrorNamingIt) {
  BulkListener listener("127.0.0.1");
  Accepted accepted;
  const Deadline deadline = Clock::now() + 10s;
  accept_async(listener, 5, 1, accepted, deadline);
  BulkChannel client = BulkChannel::connect(listener.endpoint(), 5, 1, "rank 0", deadline, nullptr);
  client.confirm(5, 100, deadline, nullptr);
  accepted.thread.join();
  ASSERT_EQ(accepted.error, "");
  accepted.channel = BulkChannel();  // closes the server end
  pollfd p{client.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  try {
    client.check_silent_peer();
    FAIL() << "a closed peer went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

TEST(BulkChannelTest, NothingListeningIsAnErrorNamingTheAddress) {
  uint16_t port = 0;
  {
    BulkListener closed("127.0.0.1");
    port = closed.endpoint().port;
  }
  try {
    BulkChannel::connect(Endpoint{"127.0.0.1", port}, 1, 1, "rank 4", Clock::now() + 5s, nullptr);
    FAIL() << "connected to a closed port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 4 at 127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
  }
  EXPECT_THROW(BulkListener("no-such-host.invalid"), Error);
}

}  // namespace
}  // namespace partita::runtime
