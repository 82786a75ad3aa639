#include "runtime/transport/request_channel.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "runtime/transport/wire_format.h"
#include "runtime/transport/worker.h"

namespace partita::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Both ends fix their socket buffers at this size instead of the kernel's autotuning, which
// starts every connection small (16 KiB to send, 128 KiB to receive) and grows it with the
// connection's own history: a long-lived channel's throughput then depended on its past and
// on where the scheduler put the two threads, 0.55 to 1.2x raw TCP from one round to the
// next; with 4 MiB the sender rarely waits for room (BENCHMARKS.md, "Remote feature
// transfer"). (The allreduce ring keeps autotuning: its segments are consumed as they come.)
constexpr int kSocketBufferBytes = 4 << 20;

// Reply bodies go out in pieces of about this much, which stay in the L2 cache between the
// service's fill and the kernel's copy. 64 KiB rather than 256 KiB: with the fixed socket
// buffers (connection.cpp) it held remote feature transfer at 0.8-1.1x raw TCP round after
// round, where 256 KiB pieces swung between 0.6 and 1.2x (BENCHMARKS.md).
constexpr uint64_t kPieceBytes = uint64_t{64} << 10;

// Sessions one server keeps at once: the clients of other processes, a few per trainer.
// Beyond that a request for another is refused rather than given another thread.
constexpr size_t kMaxSessions = 64;

uint64_t random_token() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string millis(milliseconds d) { return std::to_string(d.count()) + " ms"; }

std::string over_limit(const char* what, uint64_t length, uint64_t limit) {
  return std::string(what) + " of " + std::to_string(length) + " bytes exceeds the limit of " + std::to_string(limit) +
         " bytes";
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Server

struct RequestServer::Session {
  ChannelOffer offer;
  std::unique_ptr<Listener> listener;
  std::atomic<bool> done{false};
  std::unique_ptr<Worker> worker;  // last: joined before the rest goes
};

RequestServer::RequestServer(std::string host, uint32_t self, std::function<ChannelService()> make_service,
                             milliseconds deadline, std::string name)
    : host_(std::move(host)),
      self_(self),
      make_service_(std::move(make_service)),
      deadline_(deadline),
      name_(std::move(name)) {}

RequestServer::~RequestServer() {
  stop_.notify();
  sessions_.clear();  // joins each session's thread
}

ChannelOffer RequestServer::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Reap the sessions that ended, so that a long-lived server does not accumulate threads.
  sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->done.load(); }),
                  sessions_.end());
  if (sessions_.size() >= kMaxSessions) {
    throw Error(name_ + ": request channel: " + std::to_string(sessions_.size()) + " sessions are open already");
  }
  auto session = std::make_unique<Session>();
  session->listener = std::make_unique<Listener>(host_);
  session->offer = {session->listener->endpoint().host, session->listener->endpoint().port, random_token(),
                    next_client_++};
  Session& s = *session;
  s.worker = std::make_unique<Worker>(
      "channel.session", [&s](uint64_t, std::string) { s.done = true; }, nullptr);
  s.worker->post(s.offer.client, [this, &s, service = make_service_()] { serve(s, service); });
  sessions_.push_back(std::move(session));
  return s.offer;
}

void RequestServer::serve(Session& session, const ChannelService& service) {
  const std::string client = "channel client " + std::to_string(session.offer.client);
  try {
    Connection connection = session.listener->accept(session.offer.token, session.offer.client, self_, client,
                                                     Clock::now() + deadline_, &stop_);
    session.listener.reset();  // one client per session: stop listening
    connection.set_buffer_bytes(kSocketBufferBytes);
    answer_requests(connection, service, deadline_, &stop_, name_);
  } catch (const Interrupted&) {
    // The server is stopping.
  } catch (const std::exception& e) {
    if (stop_.notified()) {
      spdlog::debug("{}: {} left: {}", name_, client, e.what());
    } else {
      spdlog::warn("{}: request channel: dropping {}: {}", name_, client, e.what());
    }
  }
  session.listener.reset();
}

void RequestServer::answer_requests(Connection& connection, const ChannelService& service, milliseconds deadline,
                                    const Wakeup* stop, const std::string& name) {
  std::vector<char> request;
  ChannelReply reply;
  std::vector<char> piece;
  for (;;) {
    // Between requests a client may idle as long as it likes; a closed connection here
    // is the normal end of a session.
    unsigned char length_bytes[wire::kFrameLengthBytes];
    size_t got = 0;
    try {
      connection.wait_readable(kNoDeadline, stop, "waiting for a request");
      got = connection.recv_some(length_bytes, sizeof(length_bytes));
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      spdlog::debug("{}: {} left: {}", name, connection.peer_name(), e.what());
      return;
    }
    const auto until = Clock::now() + deadline;
    connection.recv_all(length_bytes + got, sizeof(length_bytes) - got, until, stop, "reading a request");
    const uint64_t length = wire::decode_frame_length(length_bytes);
    const bool oversized = length > wire::kMaxRequestBytes;
    reply.body_bytes = 0;
    reply.body_unit = 1;
    reply.fill = nullptr;
    if (oversized) {
      // The stream cannot be resynchronised: answer once, naming the problem, and close.
      service.refuse(over_limit("a request", length, wire::kMaxRequestBytes), reply);
    } else {
      // The buffer grows with the bytes that arrive (doubling), not with the length alone:
      // 8 bytes claiming 255 MiB allocated 255 MiB at once (found by fuzz/fuzz_transport).
      for (uint64_t got = 0; got < length;) {
        const uint64_t piece = std::min(length - got, std::max<uint64_t>(got, kPieceBytes));
        if (request.size() < got + piece) request.resize(got + piece);
        connection.recv_all(request.data() + got, piece, until, stop, "reading a request");
        got += piece;
      }
      service.answer(Span<const char>(request.data(), length), reply);
    }
    // Head length, head and body length in one sendmsg, then the body piece by piece.
    const auto write_until = Clock::now() + deadline;
    const uint64_t body_length = reply.fill ? reply.body_bytes : 0;
    unsigned char head_frame[wire::kFrameLengthBytes], body_frame[wire::kFrameLengthBytes];
    wire::encode_frame_length(reply.head_length, head_frame);
    wire::encode_frame_length(body_length, body_frame);
    iovec frames[3] = {{head_frame, sizeof(head_frame)},
                       {reply.head.data(), reply.head_length},
                       {body_frame, sizeof(body_frame)}};
    connection.send_all(frames, 3, write_until, stop, "writing a reply");
    const uint64_t unit = std::max<uint64_t>(reply.body_unit, 1);
    const uint64_t piece_bytes = std::max<uint64_t>(1, kPieceBytes / unit) * unit;
    if (body_length > 0 && piece.size() < std::min(piece_bytes, body_length)) {
      piece.resize(std::min(piece_bytes, body_length));
    }
    for (uint64_t offset = 0; offset < body_length; offset += piece_bytes) {
      const uint64_t bytes = std::min(piece_bytes, body_length - offset);
      reply.fill(piece.data(), offset, bytes);
      connection.send_all(piece.data(), bytes, write_until, stop, "writing a reply");
    }
    if (oversized) return;
  }
}

// ---------------------------------------------------------------------------------------
// Client

void RequestClient::open(const ChannelOffer& offer, uint32_t server, milliseconds deadline) {
  const auto until = Clock::now() + deadline;
  const Endpoint endpoint{offer.host, offer.port};
  try {
    Connection connection = Connection::connect(endpoint, offer.token, offer.client, "its server", until, &wakeup_);
    connection.confirm(offer.token, server, until, &wakeup_);
    attach(std::move(connection));
  } catch (const Error& e) {
    fail("cannot open at " + endpoint.to_string() + ": " + e.what(), deadline);
  }
}

void RequestClient::attach(Connection connection) {
  connection_ = std::move(connection);
  connection_.set_buffer_bytes(kSocketBufferBytes);
}

void RequestClient::shut_down() {
  shut_ = true;
  wakeup_.notify();
}

void RequestClient::fail(const std::string& what, milliseconds deadline) {
  if (broken_) throw Error(name_ + ": unusable since an earlier failure: " + first_failure_);
  broken_ = true;
  // After a shut down every wait ends "interrupted": say why.
  // The deadline is named where it is what ended the wait (TimedOut says "timed out").
  const bool timed_out = what.find("timed out") != std::string::npos;
  first_failure_ = (shut_ ? (what.empty() ? std::string("shut down") : "shut down: " + what) : what) +
                   (timed_out ? " (deadline " + millis(deadline) + ")" : std::string());
  throw Error(name_ + ": " + first_failure_);
}

void RequestClient::check_usable(bool body_expected, milliseconds deadline) {
  if (broken_ || shut_) fail("", deadline);
  if (body_due_ && !body_expected) fail("a reply body was left unread", deadline);
  if (!body_due_ && body_expected) fail("no reply head was read", deadline);
}

void RequestClient::send(Span<const char> request, milliseconds deadline) {
  check_usable(false, deadline);
  unsigned char length[wire::kFrameLengthBytes];
  wire::encode_frame_length(request.size(), length);
  iovec frame[2] = {{length, sizeof(length)}, {const_cast<char*>(request.data()), request.size()}};
  try {
    connection_.send_all(frame, 2, Clock::now() + deadline, &wakeup_, "sending a request");
  } catch (const Error& e) {
    fail(e.what(), deadline);  // a half-sent frame leaves the stream unusable
  }
}

size_t RequestClient::receive_head(std::vector<char>& head, uint64_t& body_bytes, milliseconds deadline) {
  check_usable(false, deadline);
  const auto until = Clock::now() + deadline;
  try {
    unsigned char length_bytes[wire::kFrameLengthBytes];
    connection_.recv_all(length_bytes, sizeof(length_bytes), until, &wakeup_, "waiting for a reply");
    const uint64_t length = wire::decode_frame_length(length_bytes);
    if (length > wire::kMaxReplyHeadBytes) throw Error(over_limit("a reply head", length, wire::kMaxReplyHeadBytes));
    if (head.size() < length) head.resize(length);
    connection_.recv_all(head.data(), length, until, &wakeup_, "reading a reply");
    connection_.recv_all(length_bytes, sizeof(length_bytes), until, &wakeup_, "reading a reply");
    body_left_ = wire::decode_frame_length(length_bytes);
    if (body_left_ > wire::kMaxReplyBodyBytes) {
      throw Error(over_limit("a reply body", body_left_, wire::kMaxReplyBodyBytes));
    }
    body_bytes = body_left_;
    body_due_ = body_left_ > 0;
    return length;
  } catch (const Error& e) {
    fail(e.what(), deadline);  // a half-read frame leaves the stream unusable
  }
}

void RequestClient::receive_body(void* data, uint64_t bytes, milliseconds deadline) {
  check_usable(true, deadline);
  if (bytes > body_left_) {
    fail("asked for " + std::to_string(bytes) + " bytes of a body with " + std::to_string(body_left_) + " left",
         deadline);
  }
  try {
    connection_.recv_all(data, bytes, Clock::now() + deadline, &wakeup_, "reading a reply body");
    body_left_ -= bytes;
    body_due_ = body_left_ > 0;
  } catch (const Error& e) {
    fail(e.what(), deadline);
  }
}

void RequestClient::discard_body(milliseconds deadline) {
  std::vector<char> sink(std::min<uint64_t>(body_left(), uint64_t{1} << 20));
  while (body_left() > 0) receive_body(sink.data(), std::min<uint64_t>(body_left(), sink.size()), deadline);
}

void RequestClient::receive_body(std::vector<char>& buffer, milliseconds deadline) {
  const uint64_t bytes = body_left();
  if (buffer.size() < bytes) buffer.resize(bytes);
  if (bytes > 0) receive_body(buffer.data(), bytes, deadline);
}

}  // namespace partita::runtime
