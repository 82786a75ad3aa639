// The bulk transport's byte layouts (runtime/transport/wire_format.h) as a peer receives
// them, over real loopback connections. The input's first byte picks who reads the rest:
//
//   0  the header decoders alone: hello, frame length, allreduce operation header
//   1  a RequestServer session (the server end of a feature channel): the client's hello is
//      right, then the input arrives as the stream of request frames, then the client
//      closes its sending side. The session answers each request (an echo service) or
//      refuses an oversized one, and must end its session cleanly at the end of the bytes.
//   2  a RequestClient (a sampler's end of a feature channel): the server's hello is right,
//      then the input arrives as the stream of reply frames. The client reads heads and
//      bodies until the stream fails, which must be an Error naming the problem.
//
// Deadlines are short (the peer here never stalls): a hang shows as a libFuzzer timeout.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace {

using namespace partita;
using namespace partita::runtime;
using std::chrono::milliseconds;

// Generous: a loaded machine schedules threads late; libFuzzer's -timeout (10 s) bounds a hang.
constexpr milliseconds kDeadline{8000};

void decode_headers(const uint8_t* data, size_t size) {
  unsigned char block[wire::kOpHeaderBytes] = {};
  std::memcpy(block, data, std::min(size, sizeof(block)));
  wire::Hello hello;
  wire::OpHeader op;
  volatile uint64_t sink = wire::decode_hello(block, hello) + wire::decode_frame_length(block) +
                           wire::decode_op_header(block, op) + hello.token + op.floats;
  (void)sink;
}

// Mode 1. One server for the whole run; each input is a session of its own.
void serve_stream(const uint8_t* data, size_t size) {
  static RequestServer server(
      "127.0.0.1", /*self=*/7,
      [] {
        ChannelService service;
        service.answer = [](Span<const char> request, ChannelReply& reply) {
          // Echo: the first bytes as the head, the whole request as the body.
          const size_t head = std::min<size_t>(request.size(), 64);
          reply.head.assign(request.data(), request.data() + head);
          reply.head_length = head;
          reply.storage.assign(request.data(), request.data() + request.size());
          reply.body_bytes = request.size();
          reply.fill = [&reply](char* piece, uint64_t offset, uint64_t bytes) {
            std::memcpy(piece, reply.storage.data() + offset, bytes);
          };
        };
        service.refuse = [](const std::string& why, ChannelReply& reply) {
          reply.head.assign(why.begin(), why.end());
          reply.head_length = why.size();
        };
        return service;
      },
      kDeadline, "fuzz");
  const ChannelOffer offer = server.open();
  const auto until = std::chrono::steady_clock::now() + kDeadline;
  Connection c = Connection::connect({offer.host, offer.port}, offer.token, offer.client, "server", until, nullptr);
  c.confirm(offer.token, 7, until, nullptr);
  c.send_all(data, size, until, nullptr, "sending the input");
  ::shutdown(c.fd(), SHUT_WR);
  // Read the replies until the session closes its end.
  std::vector<char> sink(1 << 16);
  try {
    for (;;) {
      c.wait_readable(until, nullptr, "reading replies");
      c.recv_some(sink.data(), sink.size());
    }
  } catch (const TimedOut&) {
    std::fprintf(stderr, "fuzz_transport: the session did not end after the client closed\n");
    std::abort();
  } catch (const Error&) {
    // Closed: the session ended.
  }
}

// Mode 2. A fake server on its own thread: for each connection it reads the client's hello,
// answers with the right one, then writes the current input and closes.
class FakeServer {
 public:
  static constexpr uint64_t kToken = 0x5eed;
  static constexpr uint32_t kClient = 3, kServer = 9;

  FakeServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::perror("fuzz_transport: fake server");
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
    std::thread([this] { run(); }).detach();  // lives as long as the process
  }
  uint16_t port() const { return port_; }
  void set_reply(const uint8_t* data, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    reply_.assign(data, data + size);
  }

 private:
  void run() {
    for (;;) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      unsigned char hello[wire::kHelloBytes];
      size_t got = 0;
      while (got < sizeof(hello)) {
        const ssize_t n = ::recv(fd, hello + got, sizeof(hello) - got, 0);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      wire::encode_hello({kToken, kServer}, hello);
      std::vector<unsigned char> out(hello, hello + sizeof(hello));
      {
        std::lock_guard<std::mutex> lock(mutex_);
        out.insert(out.end(), reply_.begin(), reply_.end());
      }
      for (size_t sent = 0; sent < out.size();) {
        const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(fd);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mutex_;
  std::vector<unsigned char> reply_;
};

void read_replies(const uint8_t* data, size_t size) {
  static FakeServer server;
  server.set_reply(data, size);
  RequestClient client("fuzz client");
  client.open({"127.0.0.1", server.port(), FakeServer::kToken, FakeServer::kClient}, FakeServer::kServer, kDeadline);
  std::vector<char> head;
  for (;;) {
    uint64_t body_bytes = 0;
    client.receive_head(head, body_bytes, kDeadline);  // ends with an Error at the end of the input
    // Half the body piece by piece, the rest whole: both ways a feature channel reads.
    if (body_bytes > 1) {
      char piece[7];
      client.receive_body(piece, std::min<uint64_t>(sizeof(piece), body_bytes / 2), kDeadline);
    }
    client.discard_body(kDeadline);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  try {
    switch (mode) {
      case 0: decode_headers(data, size); break;
      case 1: serve_stream(data, size); break;
      case 2: read_replies(data, size); break;
    }
  } catch (const Error&) {
  }
  return 0;
}
