// The bulk transport's byte layouts (runtime/transport/wire_format.h) as a peer receives
// them, decoded in one thread: each input is what one end of a request channel reads, put
// into one end of a socketpair (and that end closed) before the other end's code runs over
// a Connection (Connection::adopt) with its own reads and writes. The input's first byte
// picks who reads the rest:
//
//   0  the header decoders alone: hello, frame length, allreduce operation header
//   1  a session's request loop (RequestServer::answer_requests, the server end of a
//      feature channel, past the hello): the input is the stream of request frames, then
//      the client closes its sending side. The session answers each request (an echo
//      service) or refuses an oversized one; it must return when the bytes end between two
//      requests and fail with an Error when they end inside one. The harness then reads
//      the replies back: one per whole request, in order, each the echo of its request
//      (or the refusal, last); anything else is a finding.
//   2  a RequestClient (a sampler's end of a feature channel, past the hello): the input is
//      the stream of reply frames. The client reads heads and bodies until the stream
//      fails, which must be an Error naming the problem.
//
// Why not over loopback TCP with a listener and a thread per input, as until 2026-11-24:
// those cost 0.3-2 ms an input in accept, thread start and wake-ups (608 inputs a second at
// best), for plumbing the frame parsers do not depend on. The listener, the hello, a
// session's thread and TLS are the end-to-end target's (fuzz/fuzz_transport_tls.cpp).
//
// Every wait here finds its bytes (or the end) already there: a TimedOut is a hang, and a
// finding. The replies must fit the socket's buffer while the harness is not reading:
// inputs are at most kMaxInput bytes, and the first input checks once that the kernel
// lets a socketpair hold the most replies such an input can cause (net.core.wmem_max).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "fuzz/transport_harness.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace {

using namespace partita;
using namespace partita::runtime;
using fuzz::decode_headers;
using fuzz::echo_service;
using fuzz::kEchoHead;
using fuzz::kRefusal;
using std::chrono::milliseconds;

constexpr milliseconds kDeadline{8000};

// Longer inputs are refused (libFuzzer's default -max_len is 4,096 here: the seeds are
// smaller). A whole request is at least a frame length; each gets a reply of at most two
// writes (head frames, then the body), so an input causes at most kMaxInput / 4 writes.
constexpr size_t kMaxInput = 16 << 10;
constexpr size_t kMaxWrites = kMaxInput / 4;
// What the session's and the client's ends ask for (as RequestServer and RequestClient do).
constexpr int kSocketBufferBytes = 4 << 20;

[[noreturn]] void harness_broken(const char* what) {
  std::fprintf(stderr, "fuzz_transport: %s\n", what);
  std::abort();
}

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_transport: %s\n", what.c_str());
  std::abort();
}

// Two connected ends, each as a Connection with its buffers set.
struct Pair {
  Connection near, far;  // near: the code under test's end; far: the harness's
  Pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) harness_broken("socketpair failed");
    near = Connection::adopt(fds[0], "the fuzz input");
    far = Connection::adopt(fds[1], "the code under test");
    near.set_buffer_bytes(kSocketBufferBytes);
    far.set_buffer_bytes(kSocketBufferBytes);
  }
  // The input as what `near` reads, then the end of the stream.
  void put(const uint8_t* data, size_t size) {
    const size_t sent = size == 0 ? 0 : far.send_some(data, size);
    if (sent != size) harness_broken("the socketpair did not take the input at once");
    ::shutdown(far.fd(), SHUT_WR);
  }
};

// Once: a socketpair holds kMaxWrites writes of a reply's head frames (the longest head
// and its two lengths) beside the input, unread. Then no reply of an input waits.
void check_socket_room() {
  static const bool checked = [] {
    Pair pair;
    char frames[2 * wire::kFrameLengthBytes + 64] = {};
    for (size_t i = 0; i < kMaxWrites + kMaxWrites / 4; ++i) {  // a margin for the bodies' bytes
      if (pair.near.send_some(frames, sizeof(frames)) != sizeof(frames)) {
        harness_broken("a socketpair cannot hold the replies to one input unread: raise net.core.wmem_max");
      }
    }
    return true;
  }();
  (void)checked;
}

// The bytes `from` holds until its peer closed.
std::string drain(Connection& from) {
  std::string bytes;
  char piece[1 << 14];
  try {
    for (;;) {
      from.wait_readable(std::chrono::steady_clock::now() + kDeadline, nullptr, "reading the replies");
      const size_t n = from.recv_some(piece, sizeof(piece));
      bytes.append(piece, n);
    }
  } catch (const TimedOut&) {
    finding("the session's end did not close");
  } catch (const Error&) {
    // Closed.
  }
  return bytes;
}

// Mode 1's oracle: `replies` are the echoes of the whole request frames of `input`, in
// order, and a refusal for an oversized one (then nothing more).
void check_replies(std::string_view input, std::string_view replies) {
  auto take_length = [](std::string_view& from, uint64_t& length) {
    if (from.size() < wire::kFrameLengthBytes) return false;
    length = wire::decode_frame_length(reinterpret_cast<const unsigned char*>(from.data()));
    from.remove_prefix(wire::kFrameLengthBytes);
    return true;
  };
  for (size_t request = 0;; ++request) {
    const std::string where = "reply " + std::to_string(request) + ": ";
    uint64_t length = 0, head = 0, body = 0;
    if (!take_length(input, length)) break;
    const bool oversized = length > wire::kMaxRequestBytes;
    if (!oversized && input.size() < length) break;  // cut inside the request: no reply
    if (!take_length(replies, head) || replies.size() < head) finding(where + "missing or cut");
    const std::string_view head_bytes = replies.substr(0, head);
    replies.remove_prefix(head);
    if (!take_length(replies, body) || replies.size() < body) finding(where + "its body is missing or cut");
    const std::string_view body_bytes = replies.substr(0, body);
    replies.remove_prefix(body);
    if (oversized) {
      if (head_bytes.substr(0, kRefusal.size()) != kRefusal || body != 0) finding(where + "not the refusal");
      break;  // the session ends after a refusal
    }
    if (head_bytes != input.substr(0, std::min<uint64_t>(length, kEchoHead)) || body_bytes != input.substr(0, length)) {
      finding(where + "not the echo of its request");
    }
    input.remove_prefix(length);
  }
  if (!replies.empty()) finding(std::to_string(replies.size()) + " bytes of replies to no request");
}

// Mode 1.
void serve_stream(const uint8_t* data, size_t size) {
  Pair pair;
  pair.put(data, size);
  try {
    RequestServer::answer_requests(pair.near, echo_service(), kDeadline, nullptr, "fuzz");
  } catch (const TimedOut& e) {
    finding(std::string("the session waited on bytes that were all there: ") + e.what());
  } catch (const Error&) {
    // The input ended inside a request (checked below: no reply to it).
  }
  pair.near = Connection();  // the session's end closes
  check_replies(fuzz::as_text(data, size), drain(pair.far));
}

// Mode 2.
void read_replies(const uint8_t* data, size_t size) {
  Pair pair;
  pair.put(data, size);
  RequestClient client("fuzz client");
  client.attach(std::move(pair.near));
  // The end of the input (or a frame over its limit). Not a deadline: every byte was there.
  const std::string why = fuzz::read_replies_until_error(client, kDeadline);
  if (why.find("timed out") != std::string::npos) finding("the client waited: " + why);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (size - 1 > kMaxInput) return -1;  // not added to the corpus
  check_socket_room();
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  switch (mode) {
    case 0: decode_headers(data, size); break;
    case 1: serve_stream(data, size); break;
    case 2: read_replies(data, size); break;
  }
  return 0;
}
