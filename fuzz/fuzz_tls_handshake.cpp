// The TLS handshake (runtime/tls/session.h) fed the bytes of a peer without credentials: what
// anyone who can reach a port of the cluster can send before they are refused. Every
// listener (the bulk transport's, the CAF gateway's) and every connecting member runs this
// handshake before a byte reaches a Partita parser (runtime/transport/connection.h). The
// process has TLS credentials (an in-memory CA, runtime/tls/credentials.h); the input's
// first byte picks the side that reads the rest:
//   even  a server session reads the input as a client's first flight
//   odd   a client session (a connecting member's) reads it as the server's answer to its
//         ClientHello
// over a socket pair whose other end holds the input and is then closed. The handshake must
// fail with HandshakeFailed or SessionClosed: one that completes would have let in a peer
// without a certificate of the cluster (abort: a finding), and one that still waits after
// its peer closed would hang a listener's slot (abort too).
//
// This was modes 3 and 4 of fuzz_transport_tls, whose streams each cost a full mutual
// handshake between two threads: there the streams' inputs filled the corpus and the
// handshakes got a sixth of ~100 inputs a second. On their own they run thousands a second
// (BENCHMARKS.md, "Fuzzing"). OpenSSL allocates on libc's heap here, with a leak check of
// its own (fuzz/openssl_heap.h): ASan's allocator under OpenSSL was half of each input's CPU.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_input.h"
#include "fuzz/openssl_heap.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"

namespace {

using namespace partita::runtime;

// Every session of this process has the in-memory CA's credentials (set before main).
const bool kTls = (tls::set_process_credentials(tls::Credentials::ephemeral()), true);

void handshake_from(tls::Session::Role role, const uint8_t* data, size_t size) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends) != 0) {
    std::perror("fuzz_tls_handshake: socketpair");
    std::abort();
  }
  // An input is at most -max_len bytes (4 KiB by default): the pair's buffer holds it.
  const ssize_t sent = ::send(ends[1], data, size, MSG_NOSIGNAL);
  ::shutdown(ends[1], SHUT_WR);
  try {
    tls::Session session(tls::process_credentials(), ends[0], role);
    for (int step = 0;; ++step) {
      if (session.handshake()) {
        std::fprintf(stderr, "fuzz_tls_handshake: a handshake completed with %zd bytes of a peer without credentials\n",
                     sent);
        std::abort();
      }
      // Our own flight filled the pair's buffer (the other end never reads): give up.
      if (session.wants() == POLLOUT) break;
      // The peer's bytes end in a close, which a read must report: waiting on would hang.
      if (step == 1000) {
        std::fprintf(stderr, "fuzz_tls_handshake: a handshake still waits after its peer closed\n");
        std::abort();
      }
    }
  } catch (const tls::HandshakeFailed&) {
  } catch (const tls::SessionClosed&) {
  }
  ::close(ends[0]);
  ::close(ends[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto role = data[0] % 2 == 0 ? tls::Session::Role::server : tls::Session::Role::client;
  partita::fuzz::openssl_heap::each_input([&] { handshake_from(role, data + 1, size - 1); });
  return 0;
}
