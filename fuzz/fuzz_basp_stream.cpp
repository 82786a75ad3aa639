// CAF's actor port as a member of the cluster reaches it: the input is the byte stream a
// peer sends after a complete TLS handshake with a certificate of the cluster (any
// member's certificate gets that far, a CLI user's included). The process publishes an
// actor through the gateway (runtime/tls/caf_gateway.h), as every daemon and head does;
// the gateway follows the stream header by header and closes the connection at the first
// header CAF 0.17 must not see; what passes reaches CAF's BASP broker in this process.
//
// A finding is a crash or a sanitizer report in either (a handshake header without payload
// made CAF read through a null pointer), an allocation beyond -malloc_limit_mb (a payload
// length CAF would allocate at once), or a hang. CAF itself is not instrumented (Debian's
// library): coverage guides the gateway's checks, and CAF's crashes still end the process.
//
// Each input is one connection: the handshake (~2-4 ms of CPU under ASan), the input, then
// reading until the gateway closes the connection or stays silent for kQuiet. What CAF does
// with the bytes may finish after the input has returned, so a crash may show under the
// next input; the artifact is then that one's (rerun the corpus to find the first).
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/error.h"
#include "base/file_util.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/tls/caf_gateway.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"
#include "runtime/transport/tcp_socket.h"
#include "runtime/transport/wait.h"

namespace {

using namespace partita;
using namespace partita::runtime;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kDeadline{8};  // libFuzzer's -timeout (10 s) bounds a hang
constexpr int kQuietMs = 20;

// Every listener and connection of this process speaks TLS from here on (set before main).
const bool kTls = (tls::set_process_credentials(tls::Credentials::ephemeral()), true);

// The published actor and its port, made once; never destroyed (the actor system would wait
// for its actors at exit, and the process ends with libFuzzer).
uint16_t published_port() {
  static ActorSystem* const system = new ActorSystem();  // reachable: not a leak to LSan
  static const uint16_t port = [] {
    caf::actor echo = system->get().spawn([]() -> caf::behavior { return {[](int32_t x) { return x; }}; });
    caf::expected<uint16_t> bound = tls::publish(system->get(), echo, Endpoint{"127.0.0.1", 0}, false);
    if (!bound) {
      std::fprintf(stderr, "fuzz_basp_stream: cannot publish: %s\n", system->get().render(bound.error()).c_str());
      std::abort();
    }
    return *bound;
  }();
  return port;
}

// Sends `data` in a session, then reads until the peer closes or is quiet for kQuietMs.
void send_stream(tls::Session& session, int fd, const uint8_t* data, size_t size) {
  const Deadline until = Clock::now() + kDeadline;
  for (size_t sent = 0; sent < size;) {
    const size_t n = session.write_some(data + sent, size - sent);
    if (n == 0) wait_ready(fd, session.wants(), until, nullptr, "sending the input");
    sent += n;
  }
  char sink[4096];
  for (;;) {
    if (session.read_some(sink, sizeof(sink)) > 0) continue;
    pollfd p{fd, session.wants(), 0};
    if (::poll(&p, 1, kQuietMs) == 0) return;  // quiet: CAF is waiting for more
    if (Clock::now() > until) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)kTls;
  const uint16_t port = published_port();
  try {
    ScopedFd fd = connect_tcp("127.0.0.1", port, Clock::now() + kDeadline, nullptr);
    tls::Session session(tls::process_credentials(), fd.get(), tls::Session::Role::client);
    const Deadline until = Clock::now() + kDeadline;
    while (!session.handshake()) wait_ready(fd.get(), session.wants(), until, nullptr, "the TLS handshake");
    send_stream(session, fd.get(), data, size);
  } catch (const Error&) {
    // The gateway closed the connection (a header it refused) or CAF did: expected.
  }
  return 0;
}
