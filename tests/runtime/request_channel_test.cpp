// The request channel: replies in request order, large bodies intact and readable in
// pieces, clients that do not belong refused, every wait ended by its deadline or by a shut
// down, frames over their limits refused with an error naming the length and the limit.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "expect_error.h"
#include "runtime/runtime_test_util.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {
namespace {

using namespace std::chrono_literals;

// Holds a service's answers until opened, so that a test controls when a reply comes
// without sleeping.
class Gate {
 public:
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void pass() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Answers each request with the request as the head and, as the body, request[0] * 100000
// copies of it (so that a small request can ask for a large body), once `gate` (if any)
// lets it. Refusals are "refused: <why>" as the head.
std::function<ChannelService()> repeat(std::shared_ptr<Gate> gate = nullptr) {
  return [gate] {
    ChannelService service;
    service.answer = [gate](Span<const char> request, ChannelReply& reply) {
      if (gate) gate->pass();
      if (reply.head.size() < request.size()) reply.head.resize(request.size());
      std::memcpy(reply.head.data(), request.data(), request.size());
      reply.head_length = request.size();
      const size_t copies = request.empty() ? 0 : static_cast<unsigned char>(request[0]) * size_t{100000};
      reply.storage.assign(request.begin(), request.end());
      reply.body_bytes = copies * request.size();
      reply.body_unit = request.size();
      const char* one = reply.storage.data();
      const size_t size = request.size();
      reply.fill = [one, size](char* piece, uint64_t, uint64_t bytes) {
        for (uint64_t done = 0; done < bytes; done += size) std::memcpy(piece + done, one, size);
      };
    };
    service.refuse = [](const std::string& why, ChannelReply& reply) {
      const std::string text = "refused: " + why;
      reply.head.assign(text.begin(), text.end());
      reply.head_length = text.size();
    };
    return service;
  };
}

using testing::next_reply;

using testing::error_of;

TEST(RequestChannel, RepliesComeInRequestOrderAndLargeOnesIntact) {
  RequestServer server("127.0.0.1", 7, repeat(), 10s, "server 7");
  RequestClient client("server 7");
  client.open(server.open(), 7, 10s);
  std::vector<char> small{0, 1, 2, 3}, large(100);
  std::iota(large.begin(), large.end(), 1);
  large[0] = 7;  // 7 * 100000 copies of 100 bytes: a 70 MB body
  client.send(small, 10s);
  client.send(large, 10s);
  client.send(small, 10s);
  testing::ChannelReplyBytes reply = next_reply(client, 10s);
  EXPECT_EQ(reply.head, small);
  EXPECT_TRUE(reply.body.empty());
  reply = next_reply(client, 30s);
  EXPECT_EQ(reply.head, large);
  ASSERT_EQ(reply.body.size(), 700u * 100000u);
  for (size_t c = 0; c < reply.body.size(); c += 100 * 99991) {
    EXPECT_EQ(std::memcmp(reply.body.data() + c, large.data(), 100), 0) << "copy at " << c;
  }
  EXPECT_EQ(next_reply(client, 10s).head, small);
}

TEST(RequestChannel, ABodyMayBeReadInPiecesButNotBeyondItsEnd) {
  RequestServer server("127.0.0.1", 7, repeat(), 10s, "server 7");
  RequestClient client("server 7");
  client.open(server.open(), 7, 10s);
  std::vector<char> request{1, 5, 6, 7};  // a body of 100000 copies of it: 400000 bytes
  client.send(request, 10s);
  std::vector<char> head;
  uint64_t body_bytes = 0;
  client.receive_head(head, body_bytes, 10s);
  ASSERT_EQ(body_bytes, 400000u);
  // The first half of the body into the second half of a buffer, then the rest.
  std::vector<char> out(400000);
  client.receive_body(out.data() + 200000, 200000, 10s);
  EXPECT_EQ(client.body_left(), 200000u);
  client.receive_body(out.data(), 200000, 10s);
  EXPECT_EQ(client.body_left(), 0u);
  for (size_t i = 0; i < out.size(); i += 4) ASSERT_EQ(std::memcmp(out.data() + i, request.data(), 4), 0) << i;
  // The next reply: a head is due before any body, and no more than the body is read.
  EXPECT_CONTAINS(error_of([&] { client.receive_body(out.data(), 4, 10s); }), "no reply head");
  RequestClient other("server 7");
  other.open(server.open(), 7, 10s);
  other.send(request, 10s);
  other.receive_head(head, body_bytes, 10s);
  EXPECT_CONTAINS(error_of([&] { other.receive_body(out.data(), 400001, 10s); }), "asked for 400001 bytes");
}

TEST(RequestChannel, ADiscardedBodyKeepsTheStreamInStep) {
  RequestServer server("127.0.0.1", 7, repeat(), 10s, "server 7");
  RequestClient client("server 7");
  client.open(server.open(), 7, 10s);
  std::vector<char> large{30, 1, 2, 3}, small{0, 9};
  client.send(large, 10s);
  client.send(small, 10s);
  std::vector<char> head;
  uint64_t body_bytes = 0;
  client.receive_head(head, body_bytes, 10s);
  EXPECT_EQ(body_bytes, 30u * 100000 * 4);
  client.discard_body(10s);
  EXPECT_EQ(next_reply(client, 10s).head, small);
}

TEST(RequestChannel, AClientWithTheWrongTokenOrServerIsRefused) {
  RequestServer server("127.0.0.1", 1, repeat(), 10s, "server 1");
  ChannelOffer offer = server.open();
  ChannelOffer forged = offer;
  forged.token ^= 1;
  RequestClient intruder("server 1");
  EXPECT_CONTAINS(error_of([&] { intruder.open(forged, 1, 2s); }), "server 1");
  // The real client still gets in: a refused connection does not end the session.
  RequestClient client("server 1");
  client.open(offer, 1, 10s);
  // A client that expects another server (a stale offer) notices.
  RequestClient confused("server 2");
  EXPECT_CONTAINS(error_of([&] { confused.open(server.open(), 2, 2s); }), "answered by someone else");
}

// A client whose one request waits at a closed gate: its reply comes only once the test
// opens the gate (on destruction at the latest).
struct HeldReply {
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  RequestServer server{"127.0.0.1", 3, repeat(gate), 10s, "server 3"};
  RequestClient client{"server 3"};
  std::vector<char> request{1}, head;
  uint64_t body_bytes = 0;

  HeldReply() {
    client.open(server.open(), 3, 10s);
    client.send(request, 1s);
  }
  ~HeldReply() { gate->open(); }
  std::string receive_head(std::chrono::milliseconds deadline) {
    return error_of([&] { client.receive_head(head, body_bytes, deadline); });
  }
};

TEST(RequestChannel, ASlowReplyFailsAtTheDeadlineAndTheClientStaysBroken) {
  HeldReply held;
  const std::string failure = held.receive_head(50ms);
  EXPECT_CONTAINS(failure, "server 3: timed out while waiting for a reply");
  EXPECT_CONTAINS(failure, "deadline 50 ms");
  // Half a frame may be on its way: the stream cannot be trusted any more.
  EXPECT_CONTAINS(error_of([&] { held.client.send(held.request, 1s); }),
                  "unusable since an earlier failure: timed out");
}

TEST(RequestChannel, ShutDownWakesABlockedReceive) {
  HeldReply held;
  // The reply cannot come before the gate opens, which happens only after the receive
  // ended: only the shut down can end it (or the 60 s deadline: "timed out" instead of
  // "interrupted"). The pause makes it likely that the receive is waiting by then.
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    held.client.shut_down();
  });
  const std::string failure = held.receive_head(60s);
  stopper.join();
  EXPECT_CONTAINS(failure, "server 3: shut down");
  EXPECT_EQ(failure.find("timed out"), std::string::npos) << failure;
}

TEST(RequestChannel, AStoppedServerFailsItsClientsAtOnce) {
  auto server = std::make_unique<RequestServer>("127.0.0.1", 4, repeat(), 10s, "server 4");
  RequestClient client("server 4");
  client.open(server->open(), 4, 10s);
  server.reset();  // joins its sessions
  std::vector<char> request{1}, head;
  uint64_t body_bytes = 0;
  // With a 60 s deadline, "timed out" would mean the closed connection went unnoticed.
  std::string failure = error_of([&] {
    client.send(request, 60s);
    client.receive_head(head, body_bytes, 60s);
  });
  EXPECT_CONTAINS(failure, "server 4");
  EXPECT_EQ(failure.find("timed out"), std::string::npos) << failure;
}

// A client that speaks the frames by hand, to send what RequestClient never would.
class RawClient {
 public:
  RawClient(const ChannelOffer& offer, uint32_t server) {
    connection_ = Connection::connect({offer.host, offer.port}, offer.token, offer.client, "server", until(), nullptr);
    connection_.confirm(offer.token, server, until(), nullptr);
  }
  void send_length(uint64_t length) {
    unsigned char bytes[wire::kFrameLengthBytes];
    wire::encode_frame_length(length, bytes);
    connection_.send_all(bytes, sizeof(bytes), until(), nullptr, "sending");
  }
  uint64_t receive_length() {
    unsigned char bytes[wire::kFrameLengthBytes];
    connection_.recv_all(bytes, sizeof(bytes), until(), nullptr, "receiving");
    return wire::decode_frame_length(bytes);
  }
  std::string receive(size_t bytes) {
    std::string out(bytes, '\0');
    connection_.recv_all(out.data(), bytes, until(), nullptr, "receiving");
    return out;
  }
  Connection& connection() { return connection_; }

 private:
  static Deadline until() { return std::chrono::steady_clock::now() + 30s; }
  Connection connection_;
};

TEST(RequestChannel, AnOversizedRequestIsRefusedNamingItsLengthAndTheSessionCloses) {
  RequestServer server("127.0.0.1", 5, repeat(), 10s, "server 5");
  const ChannelOffer offer = server.open();
  RawClient raw(offer, 5);
  raw.send_length(wire::kMaxRequestBytes + 1);
  const std::string head = raw.receive(raw.receive_length());
  EXPECT_CONTAINS(head, "refused: a request of " + std::to_string(wire::kMaxRequestBytes + 1) +
                            " bytes exceeds the limit of " + std::to_string(wire::kMaxRequestBytes) + " bytes");
  EXPECT_EQ(raw.receive_length(), 0u) << "a refusal has no body";
  // The stream cannot be resynchronised: the server closes it.
  EXPECT_CONTAINS(error_of([&] { raw.receive(1); }), "closed its connection");
}

// Found by fuzz/fuzz_transport.cpp: a request's length alone (8 bytes) made the session
// allocate that much (up to 256 MiB) before a byte of it arrived. Memory now follows the
// bytes that come: a client that claims 200 MiB and sends 10 bytes costs no 200 MiB.
TEST(RequestChannel, ARequestsLengthAloneAllocatesNothingBeyondWhatArrives) {
  RequestServer server("127.0.0.1", 6, repeat(), 10s, "server 6");
  const ChannelOffer offer = server.open();
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  {
    RawClient raw(offer, 6);
    raw.send_length(200u << 20);
    raw.connection().send_all("ten bytes.", 10, std::chrono::steady_clock::now() + 10s, nullptr, "sending");
    ::shutdown(raw.connection().fd(), SHUT_WR);
    // The session reads what came, meets the end of the stream and closes.
    EXPECT_CONTAINS(error_of([&] { raw.receive(1); }), "closed its connection");
  }
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak resident set grown";
}

// A session's loop and a client over the two ends of a socketpair, in one thread (what
// fuzz/fuzz_transport.cpp does with every input): the requests written and the stream
// closed first, the session answers each in order and returns when the stream ends between
// two requests; the client attached to the other end reads the replies.
TEST(RequestChannel, ASessionAndAClientRunInOneThreadOverASocketpair) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  Connection session_end = Connection::adopt(fds[0], "channel client 1");
  Connection client_end = Connection::adopt(fds[1], "its server");
  const auto until = std::chrono::steady_clock::now() + 30s;
  session_end.set_buffer_bytes(4 << 20);  // as a session's: holds the replies until read
  const std::vector<char> first{1, 'a'}, second{0, 'z'};  // bodies of 100000 copies, and none
  for (const auto* request : {&first, &second}) {
    unsigned char length[wire::kFrameLengthBytes];
    wire::encode_frame_length(request->size(), length);
    client_end.send_all(length, sizeof(length), until, nullptr, "sending");
    client_end.send_all(request->data(), request->size(), until, nullptr, "sending");
  }
  ::shutdown(client_end.fd(), SHUT_WR);
  const std::function<ChannelService()> make_service = repeat();
  RequestServer::answer_requests(session_end, make_service(), 10s, nullptr, "server 1");  // returns: the end came
  session_end = Connection();

  RequestClient client("server 1");
  client.attach(std::move(client_end));
  testing::ChannelReplyBytes reply = next_reply(client, 10s);
  EXPECT_EQ(reply.head, first);
  ASSERT_EQ(reply.body.size(), 100000u * first.size());
  EXPECT_EQ(std::vector<char>(reply.body.end() - 2, reply.body.end()), first);
  reply = next_reply(client, 10s);
  EXPECT_EQ(reply.head, second);
  EXPECT_TRUE(reply.body.empty());
  std::vector<char> head;
  uint64_t body_bytes = 0;
  EXPECT_CONTAINS(error_of([&] { client.receive_head(head, body_bytes, 10s); }), "closed its connection");
}

// A stream that ends inside a request fails the session naming its client, with no reply.
TEST(RequestChannel, AStreamCutInsideARequestFailsTheSessionNamingTheClient) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  Connection session_end = Connection::adopt(fds[0], "channel client 4");
  Connection client_end = Connection::adopt(fds[1], "its server");
  unsigned char length[wire::kFrameLengthBytes];
  wire::encode_frame_length(100, length);
  client_end.send_all(length, sizeof(length), std::chrono::steady_clock::now() + 30s, nullptr, "sending");
  client_end.send_all("ten bytes.", 10, std::chrono::steady_clock::now() + 30s, nullptr, "sending");
  ::shutdown(client_end.fd(), SHUT_WR);
  const std::function<ChannelService()> make_service = repeat();
  EXPECT_CONTAINS(error_of([&] { RequestServer::answer_requests(session_end, make_service(), 10s, nullptr, "s"); }),
                  "channel client 4 closed its connection");
  session_end = Connection();
  char byte = 0;
  EXPECT_EQ(::recv(client_end.fd(), &byte, 1, 0), 0) << "no reply to a request that never came whole";
}

// A server that is a raw listener, to answer with frames no RequestServer would send.
TEST(RequestChannel, AnOversizedReplyHeadOrBodyFailsTheClientNamingTheLimit) {
  for (const bool head_too_long : {true, false}) {
    Listener listener("127.0.0.1");
    const ChannelOffer offer{listener.endpoint().host, listener.endpoint().port, 77, 1};
    std::string server_error;
    std::thread server([&] {
      try {
        Connection c = listener.accept(77, 1, 9, "client", std::chrono::steady_clock::now() + 30s, nullptr);
        unsigned char frame[wire::kFrameLengthBytes];
        const auto until = std::chrono::steady_clock::now() + 30s;
        c.recv_all(frame, sizeof(frame), until, nullptr, "reading a request length");  // a 0-byte request
        wire::encode_frame_length(head_too_long ? wire::kMaxReplyHeadBytes + 1 : 0, frame);
        c.send_all(frame, sizeof(frame), until, nullptr, "writing");
        if (!head_too_long) {
          wire::encode_frame_length(wire::kMaxReplyBodyBytes + 1, frame);
          c.send_all(frame, sizeof(frame), until, nullptr, "writing");
        }
        char byte = 0;
        c.recv_all(&byte, 1, until, nullptr, "waiting for the client to go");
        server_error = "the client sent more than one request";
      } catch (const Error& e) {
        server_error = e.what();
      }
    });
    {
      RequestClient client("raw server");
      client.open(offer, 9, 30s);
      client.send({}, 30s);
      std::vector<char> head;
      uint64_t body_bytes = 0;
      const std::string failure = error_of([&] { client.receive_head(head, body_bytes, 30s); });
      if (head_too_long) {
        EXPECT_CONTAINS(failure, "a reply head of " + std::to_string(wire::kMaxReplyHeadBytes + 1) +
                                     " bytes exceeds the limit of " + std::to_string(wire::kMaxReplyHeadBytes));
        EXPECT_TRUE(head.empty()) << "the head was allocated before its length was checked";
      } else {
        EXPECT_CONTAINS(failure, "a reply body of " + std::to_string(wire::kMaxReplyBodyBytes + 1) +
                                     " bytes exceeds the limit of " + std::to_string(wire::kMaxReplyBodyBytes));
      }
    }  // closes the connection: the server's last wait ends
    server.join();
    EXPECT_CONTAINS(server_error, "closed its connection");
  }
}

}  // namespace
}  // namespace partita::runtime
