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
//
// Each input ends only after every thread that served it has freed what it allocated for it
// (mode 1's server is the input's own and joins its session; mode 2 waits for the fake
// server to be done with the connection). libFuzzer counts mallocs and frees during an input
// and, when more were allocated than freed, runs the input again and then a whole-process
// leak check: with the server threads freeing after the input had returned, that happened
// after most inputs and was half of the TLS target's time (perf), and libFuzzer stops leak
// detection altogether after 1,000 such checks. Balanced inputs keep leak detection on and
// cheap.
//
// The end-to-end target: the process has TLS credentials (an in-memory CA,
// runtime/tls/credentials.h), so modes 1 and 2 run these streams inside TLS 1.3 sessions
// between two members of the cluster, over real loopback connections, as every daemon's
// transport does (runtime/transport/connection.h). What it covers beyond fuzz_transport
// (which drives the same session and client in one thread over a socketpair, at ~100x the
// rate): Connection's TLS transfers (records of any size splitting frames, a session holding
// decrypted bytes that poll cannot show: wait_readable's early return, send_all's gathering
// of frames into records), the Listener's TLS candidates and hello, a RequestServer's session
// lifecycle (its listener, worker thread and join) and RequestClient::open. Each input costs
// a full mutual handshake between two threads (~4 ms of CPU with ASan's allocator under
// OpenSSL, ~2 ms with libc's: fuzz/openssl_heap.h); its bytes are an authenticated member's.
// The bytes of a peer without credentials go to the handshake alone:
// fuzz/fuzz_tls_handshake.cpp.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "fuzz/openssl_heap.h"
#include "fuzz/transport_harness.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace {

using namespace partita;
using namespace partita::runtime;
using fuzz::decode_headers;
using fuzz::echo_service;
using std::chrono::milliseconds;

// Generous: a loaded machine schedules threads late; libFuzzer's -timeout (10 s) bounds a hang.
constexpr milliseconds kDeadline{8000};

// Every listener and connection of this process speaks TLS from here on (set before main).
const bool kTls = (tls::set_process_credentials(tls::Credentials::ephemeral()), true);

// The fake server's end of one connection: a TLS session as a member's listener would have
// (with the process's credentials). Blocking, each wait bounded by kDeadline.
class ServerEnd {
 public:
  explicit ServerEnd(int fd) : fd_(fd) {
    if (auto credentials = tls::process_credentials()) {
      tls_ = std::make_unique<tls::Session>(credentials, fd, tls::Session::Role::server);
      while (!tls_->handshake()) wait(tls_->wants());
    }
  }
  void read_exact(unsigned char* data, size_t bytes) {
    for (size_t got = 0; got < bytes;) {
      const ssize_t n = tls_ ? static_cast<ssize_t>(tls_->read_some(data + got, bytes - got))
                             : ::recv(fd_, data + got, bytes - got, MSG_DONTWAIT);
      if (n > 0) {
        got += static_cast<size_t>(n);
      } else if (n == 0 && !tls_) {
        throw Error("the client closed before its hello");
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        throw Error("cannot read the client's hello");
      } else {
        wait(tls_ ? tls_->wants() : POLLIN);
      }
    }
  }
  void write_all(const unsigned char* data, size_t bytes) {
    for (size_t sent = 0; sent < bytes;) {
      const ssize_t n = tls_ ? static_cast<ssize_t>(tls_->write_some(data + sent, bytes - sent))
                             : ::send(fd_, data + sent, bytes - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        throw Error("the client went away");
      } else {
        wait(tls_ ? tls_->wants() : POLLOUT);
      }
    }
  }

 private:
  void wait(short events) { wait_ready(fd_, events, std::chrono::steady_clock::now() + kDeadline, nullptr, "fake server"); }
  int fd_;
  std::unique_ptr<tls::Session> tls_;
};

// Mode 1. A server of its own per input (its destructor joins the session's thread), with
// one session.
void serve_stream(const uint8_t* data, size_t size) {
  RequestServer server("127.0.0.1", /*self=*/7, echo_service, kDeadline, "fuzz");
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
    std::fprintf(stderr, "fuzz_transport_tls: the session did not end after the client closed\n");
    std::abort();
  } catch (const Error&) {
    // Closed: the session ended.
  }
}

// Mode 2. A fake server on its own thread: for each connection it reads the client's hello,
// answers with the right one, then writes the current input and closes. served() counts
// the connections it is done with (their memory freed).
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
      std::perror("fuzz_transport_tls: fake server");
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
  uint64_t served() {
    std::lock_guard<std::mutex> lock(mutex_);
    return served_;
  }
  // Waits until `count` connections were served; false at the deadline.
  bool wait_served(uint64_t count) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, kDeadline, [&] { return served_ >= count; });
  }

 private:
  void run() {
    for (;;) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) continue;
      try {
        ServerEnd end(fd);
        unsigned char hello[wire::kHelloBytes];
        end.read_exact(hello, sizeof(hello));
        wire::encode_hello({kToken, kServer}, hello);
        std::vector<unsigned char> out(hello, hello + sizeof(hello));
        {
          std::lock_guard<std::mutex> lock(mutex_);
          out.insert(out.end(), reply_.begin(), reply_.end());
        }
        end.write_all(out.data(), out.size());
      } catch (const Error&) {
        // The client gave up (its reads of this input ended): the next input connects anew.
      }
      ::close(fd);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++served_;
      }
      done_.notify_all();
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<unsigned char> reply_;
  uint64_t served_ = 0;
};

void read_replies(const uint8_t* data, size_t size) {
  static FakeServer server;
  server.set_reply(data, size);
  const uint64_t connection = server.served() + 1;  // the one this input's client makes
  {
    RequestClient client("fuzz client");
    try {
      client.open({"127.0.0.1", server.port(), FakeServer::kToken, FakeServer::kClient}, FakeServer::kServer,
                   kDeadline);
      // Until the end of the input (or of the connection): the client closes below.
      fuzz::read_replies_until_error(client, kDeadline);
    } catch (const Error&) {
      // The hello refused: the client closes below.
    }
  }
  // The client is closed: the server's writes end (written, or refused) and it closes too.
  if (!server.wait_served(connection)) {
    std::fprintf(stderr, "fuzz_transport_tls: the fake server did not finish a connection its client closed\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  // Each run ends here, its Error caught, so that the heap check sees the failing paths too.
  const auto run = [&](void (*mode_run)(const uint8_t*, size_t)) {
    try {
      mode_run(data, size);
    } catch (const Error&) {
    }
  };
  switch (mode) {
    case 0: run(decode_headers); break;
    case 1: fuzz::openssl_heap::each_input([&] { run(serve_stream); }); break;
    case 2: fuzz::openssl_heap::each_input([&] { run(read_replies); }); break;
  }
  return 0;
}
