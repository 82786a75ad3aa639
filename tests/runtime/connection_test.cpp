// Transport connections over loopback: the hello pairs the right ends, strangers (another
// token, another peer, garbage) are refused without harm, every wait ends at its deadline or
// its wakeup, and a peer that goes away is an error naming it.
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
#include "runtime/transport/connection.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Accepts on a thread (accept blocks until the hello) while the test connects.
struct Accepted {
  std::thread thread;
  Connection channel;
  std::string error;
};

void accept_async(Listener& listener, uint64_t token, uint32_t peer, Accepted& out, Deadline deadline,
                  const Wakeup* wakeup = nullptr) {
  out.thread = std::thread([&listener, token, peer, &out, deadline, wakeup] {
    try {
      out.channel = listener.accept(token, peer, 100, "peer " + std::to_string(peer), deadline, wakeup);
    } catch (const Error& e) {
      out.error = e.what();
    }
  });
}

// Both ends of a connection to `listener`, paired with {token, peer}: the accepted one first.
std::pair<Connection, Connection> connected_pair(Listener& listener, uint64_t token, uint32_t peer,
                                                 const std::string& server_name) {
  Accepted accepted;
  const Deadline deadline = Clock::now() + 10s;
  accept_async(listener, token, peer, accepted, deadline);
  Connection client = Connection::connect(listener.endpoint(), token, peer, server_name, deadline, nullptr);
  client.confirm(token, 100, deadline, nullptr);
  accepted.thread.join();
  EXPECT_EQ(accepted.error, "");
  return {std::move(accepted.channel), std::move(client)};
}

std::string recv_all(Connection& channel, size_t bytes) {
  std::string out(bytes, '\0');
  channel.recv_all(out.data(), bytes, Clock::now() + 30s, nullptr, "receiving");
  return out;
}

// A raw loopback socket connected to `port`, for bytes no Connection would send.
int raw_connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

TEST(TransportConnection, PairedEndsMoveBytesBothWays) {
  Listener listener("127.0.0.1");
  ASSERT_NE(listener.endpoint().port, 0);
  auto [server, client] = connected_pair(listener, 7, 3, "server");
  const std::string big(3 << 20, 'x');
  // A structured binding is captured by an init-capture: C++17 lambdas cannot name one.
  std::thread sender([&, &client = client] { client.send_all(big.data(), big.size(), Clock::now() + 30s, nullptr, "sending"); });
  EXPECT_EQ(recv_all(server, big.size()), big);
  sender.join();
  server.send_all("back", 4, Clock::now() + 30s, nullptr, "sending");
  EXPECT_EQ(recv_all(client, 4), "back");
}

TEST(TransportConnection, StrangersAreRefusedAndTheRightPeerStillGetsIn) {
  Listener listener("127.0.0.1");
  Accepted accepted;
  const Deadline deadline = Clock::now() + 10s;
  accept_async(listener, 7, 3, accepted, deadline);
  // Another group's token, the wrong peer, and a connection that says nothing at all.
  Connection other_group = Connection::connect(listener.endpoint(), 8, 3, "server", deadline, nullptr);
  Connection wrong_peer = Connection::connect(listener.endpoint(), 7, 4, "server", deadline, nullptr);
  const int silent = raw_connect(listener.endpoint().port);
  Connection right = Connection::connect(listener.endpoint(), 7, 3, "server", deadline, nullptr);
  right.confirm(7, 100, deadline, nullptr);
  accepted.thread.join();
  ::close(silent);
  EXPECT_EQ(accepted.error, "");
  EXPECT_THROW(other_group.confirm(8, 100, Clock::now() + 5s, nullptr), Error) << "a refused end must hear it";
}

TEST(TransportConnection, AcceptEndsAtItsDeadlineOrWakeup) {
  Listener listener("127.0.0.1");
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

TEST(TransportConnection, APeerThatGoesAwayIsAnErrorNamingIt) {
  Listener listener("127.0.0.1");
  auto [server, client] = connected_pair(listener, 5, 1, "rank 0");
  server = Connection();  // closes the server end
  try {
    char byte = 0;
    client.recv_all(&byte, 1, Clock::now() + 60s, nullptr, "waiting for a byte");
    FAIL() << "a closed peer went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
}

TEST(TransportConnection, NothingListeningIsAnErrorNamingTheAddress) {
  uint16_t port = 0;
  {
    Listener closed("127.0.0.1");
    port = closed.endpoint().port;
  }
  try {
    Connection::connect(Endpoint{"127.0.0.1", port}, 1, 1, "rank 4", Clock::now() + 5s, nullptr);
    FAIL() << "connected to a closed port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 4 at 127.0.0.1:" + std::to_string(port)), std::string::npos) << e.what();
  }
  EXPECT_THROW(Listener("no-such-host.invalid"), Error);
}

TEST(TransportConnection, GarbageAndTruncatedHellosAreClosedWithoutHarm) {
  Listener listener("127.0.0.1");
  Accepted accepted;
  accept_async(listener, 9, 2, accepted, Clock::now() + 30s);
  // Bytes that are not a hello, a hello cut short then closed, and a hello with a wrong
  // magic but the right token: each is dropped, and the right peer still gets in.
  const int garbage = raw_connect(listener.endpoint().port);
  ASSERT_EQ(::write(garbage, "GET / HTTP/1.0\r\n\r\nxx", 20), 20);
  unsigned char hello[wire::kHelloBytes];
  wire::encode_hello({9, 2}, hello);
  const int cut = raw_connect(listener.endpoint().port);
  ASSERT_EQ(::write(cut, hello, 10), 10);
  ::close(cut);
  hello[0] = 'X';
  const int forged = raw_connect(listener.endpoint().port);
  ASSERT_EQ(::write(forged, hello, sizeof(hello)), static_cast<ssize_t>(sizeof(hello)));
  // The refused ones are closed: reading them ends (0 bytes) rather than blocking.
  for (int fd : {garbage, forged}) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 30000), 1);
    char byte = 0;
    EXPECT_LE(::read(fd, &byte, 1), 0) << "a refused connection got an answer";
    ::close(fd);
  }
  Connection right = Connection::connect(listener.endpoint(), 9, 2, "server", Clock::now() + 30s, nullptr);
  right.confirm(9, 100, Clock::now() + 30s, nullptr);
  accepted.thread.join();
  EXPECT_EQ(accepted.error, "");
}

TEST(TransportConnection, WaitReadyEndsAtItsDeadlineWithTimedOut) {
  Wakeup never;
  try {
    wait_ready(never.fd(), POLLIN, Clock::now() + 20ms, nullptr, "waiting for nothing");
    FAIL() << "an eventfd nobody wrote to became readable";
  } catch (const TimedOut& e) {
    EXPECT_EQ(std::string(e.what()), "timed out while waiting for nothing");
  }
}

TEST(WireFormat, HeadersRoundTripLittleEndian) {
  unsigned char hello[wire::kHelloBytes];
  wire::encode_hello({0x0102030405060708, 0x0a0b0c0d}, hello);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(hello), 8), "PTBULK01");
  EXPECT_EQ(hello[8], 0x08);  // least significant byte first
  EXPECT_EQ(hello[16], 0x0d);
  wire::Hello h;
  ASSERT_TRUE(wire::decode_hello(hello, h));
  EXPECT_EQ(h.token, 0x0102030405060708u);
  EXPECT_EQ(h.sender, 0x0a0b0c0du);
  unsigned char op[wire::kOpHeaderBytes];
  wire::encode_op_header({3, 42, 1000003}, op);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(op), 4), "PTAR");
  wire::OpHeader o;
  ASSERT_TRUE(wire::decode_op_header(op, o));
  EXPECT_EQ(o.rank, 3u);
  EXPECT_EQ(o.seq, 42u);
  EXPECT_EQ(o.floats, 1000003u);
  op[0] ^= 1;
  EXPECT_FALSE(wire::decode_op_header(op, o));
  unsigned char length[wire::kFrameLengthBytes];
  wire::encode_frame_length(wire::kMaxReplyBodyBytes + 1, length);
  EXPECT_EQ(wire::decode_frame_length(length), wire::kMaxReplyBodyBytes + 1);
  EXPECT_EQ(length[0], 0x01);
  EXPECT_EQ(length[3], 0x40);  // 2^30 + 1
}

}  // namespace
}  // namespace partita::runtime
