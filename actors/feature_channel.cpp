#include "actors/feature_channel.h"

#include <limits.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "base/error.h"

namespace partita {

namespace {

using Clock = std::chrono::steady_clock;

// Reply bodies go out in pieces of about this much, which stay in the L2 cache between the
// handler's fill and the kernel's copy.
constexpr uint64_t kPieceBytes = uint64_t{256} << 10;

// Sessions one server keeps at once: the samplers of other partitions, a few per trainer.
// Beyond that a request for another is refused rather than given another thread.
constexpr size_t kMaxSessions = 64;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "frame lengths are written in host order");

// A wait that ended without the socket becoming ready.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Waits until the channel's socket has `events` (or an error, which the next transfer
// reports). Throws Error at the deadline (Clock::time_point::max(): none) and Interrupted
// when `wakeup` fires.
void wait(const runtime::BulkChannel& channel, short events, Clock::time_point deadline,
          const runtime::Wakeup& wakeup, const char* doing) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
    }
    pollfd fds[2] = {{channel.fd(), events, 0}, {wakeup.fd(), POLLIN, 0}};
    const int n = ::poll(fds, 2, timeout_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("poll failed while ") + doing + ": " + std::strerror(errno));
    if (fds[1].revents != 0) throw Interrupted(std::string("interrupted while ") + doing);
    if (fds[0].revents != 0) return;
    if (timeout_ms == 0) throw Error(std::string("timed out while ") + doing);
  }
}

void receive_exactly(runtime::BulkChannel& channel, void* data, size_t bytes, Clock::time_point deadline,
                     const runtime::Wakeup& wakeup, const char* doing) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    const size_t n = channel.recv_some(p, bytes);
    p += n;
    bytes -= n;
    if (bytes > 0 && n == 0) wait(channel, POLLIN, deadline, wakeup, doing);
  }
}

void send_exactly(runtime::BulkChannel& channel, const void* data, size_t bytes, Clock::time_point deadline,
                  const runtime::Wakeup& wakeup, const char* doing) {
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const size_t n = channel.send_some(p, bytes);
    p += n;
    bytes -= n;
    if (bytes > 0 && n == 0) wait(channel, POLLOUT, deadline, wakeup, doing);
  }
}

// Sends every byte of `pieces` (which is consumed) with sendmsg, at most IOV_MAX pieces
// per call (the BulkChannel sends one buffer at a time), waiting for room until the deadline.
void send_pieces(runtime::BulkChannel& channel, iovec* pieces, size_t count, Clock::time_point deadline,
                 const runtime::Wakeup& wakeup, const char* doing) {
  while (count > 0 && pieces->iov_len == 0) {
    ++pieces;
    --count;
  }
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = pieces;
    msg.msg_iovlen = std::min<size_t>(count, IOV_MAX);
    // MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE for the process.
    const ssize_t n = ::sendmsg(channel.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw Error("lost the connection to " + channel.peer_name() + " while " + doing + ": " +
                    std::strerror(errno));
      }
      wait(channel, POLLOUT, deadline, wakeup, doing);
      continue;
    }
    auto done = static_cast<size_t>(n);
    while (count > 0 && done >= pieces->iov_len) {
      done -= pieces->iov_len;
      ++pieces;
      --count;
    }
    if (count > 0) {
      pieces->iov_base = static_cast<char*>(pieces->iov_base) + done;
      pieces->iov_len -= done;
    }
  }
}

uint64_t random_token() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string millis(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

// ---------------------------------------------------------------------------------------
// Server

struct ChannelServer::Session {
  DecodedChannelOffer offer;
  std::unique_ptr<runtime::BulkListener> listener;
  std::thread thread;
  std::atomic<bool> done{false};
};

ChannelServer::ChannelServer(std::string host, uint32_t self, std::function<ChannelHandler()> make_handler,
                             std::chrono::milliseconds deadline, std::string name)
    : host_(std::move(host)),
      self_(self),
      make_handler_(std::move(make_handler)),
      deadline_(deadline),
      name_(std::move(name)) {}

ChannelServer::~ChannelServer() {
  stop_.notify();
  for (auto& session : sessions_) session->thread.join();
}

DecodedChannelOffer ChannelServer::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Reap the sessions that ended, so that a long-lived server does not accumulate threads.
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  if (sessions_.size() >= kMaxSessions) {
    throw Error(name_ + ": feature channel: " + std::to_string(sessions_.size()) + " sessions are open already");
  }
  auto session = std::make_unique<Session>();
  session->listener = std::make_unique<runtime::BulkListener>(host_);
  session->offer.host = session->listener->endpoint().host;
  session->offer.port = session->listener->endpoint().port;
  session->offer.token = random_token();
  session->offer.client = next_client_++;
  ChannelHandler handler = make_handler_();
  Session& s = *session;
  sessions_.push_back(std::move(session));
  s.thread = std::thread([this, &s, h = std::move(handler)]() mutable { serve(s, std::move(h)); });
  return s.offer;
}

void ChannelServer::serve(Session& session, ChannelHandler handler) {
  const std::string client = "feature channel client " + std::to_string(session.offer.client);
  bool between_requests = false;
  try {
    runtime::BulkChannel channel = session.listener->accept(session.offer.token, session.offer.client, self_, client,
                                                            Clock::now() + deadline_, &stop_);
    session.listener.reset();  // one client per session: stop listening
    std::vector<char> request;
    ChannelReply reply;
    std::vector<char> piece;
    Encoder encoder;
    for (;;) {
      // Between requests a client may idle as long as it likes; a closed connection here
      // is the normal end of a session.
      between_requests = true;
      wait(channel, POLLIN, Clock::time_point::max(), stop_, "waiting for a request");
      uint64_t length = 0;
      size_t got = channel.recv_some(&length, sizeof(length));
      between_requests = false;
      const auto deadline = Clock::now() + deadline_;
      receive_exactly(channel, reinterpret_cast<char*>(&length) + got, sizeof(length) - got, deadline, stop_,
                      "reading a request");
      const bool oversized = length > kMaxChannelRequestBytes;
      reply.body_bytes = 0;
      reply.body_unit = 1;
      reply.fill = nullptr;
      if (oversized) {
        // The stream cannot be resynchronised: answer once, naming the problem, and close.
        encoder.error_reply(0, WireErrorCode::kBadRequest,
                            name_ + ": feature channel: a request of " + std::to_string(length) +
                                " bytes exceeds the limit of " + std::to_string(kMaxChannelRequestBytes),
                            reply.head);
        reply.head_length = reply.head.size();
      } else {
        if (request.size() < length) request.resize(length);
        receive_exactly(channel, request.data(), length, deadline, stop_, "reading a request");
        handler(Span<const char>(request.data(), length), reply);
      }
      // Head length, head and body length in one sendmsg, then the body piece by piece.
      const auto write_deadline = Clock::now() + deadline_;
      uint64_t head_length = reply.head_length, body_length = reply.fill ? reply.body_bytes : 0;
      iovec frames[3] = {{&head_length, sizeof(head_length)},
                         {reply.head.data(), reply.head_length},
                         {&body_length, sizeof(body_length)}};
      send_pieces(channel, frames, 3, write_deadline, stop_, "writing a reply");
      const uint64_t unit = std::max<uint64_t>(reply.body_unit, 1);
      const uint64_t piece_bytes = std::max<uint64_t>(1, kPieceBytes / unit) * unit;
      if (body_length > 0 && piece.size() < std::min(piece_bytes, body_length)) {
        piece.resize(std::min(piece_bytes, body_length));
      }
      for (uint64_t offset = 0; offset < body_length; offset += piece_bytes) {
        const uint64_t bytes = std::min(piece_bytes, body_length - offset);
        reply.fill(piece.data(), offset, bytes);
        send_exactly(channel, piece.data(), bytes, write_deadline, stop_, "writing a reply");
      }
      if (oversized) break;
    }
  } catch (const Interrupted&) {
    // The server is stopping.
  } catch (const std::exception& e) {
    if (between_requests || stop_.notified()) {
      spdlog::debug("{}: {} left: {}", name_, client, e.what());
    } else {
      spdlog::warn("{}: feature channel: dropping {}: {}", name_, client, e.what());
    }
  }
  session.listener.reset();
  session.done = true;
}

// ---------------------------------------------------------------------------------------
// Client

void ChannelClient::open(const DecodedChannelOffer& offer, uint32_t server, std::chrono::milliseconds deadline) {
  const auto until = Clock::now() + deadline;
  const runtime::Endpoint endpoint{offer.host, offer.port};
  try {
    channel_ = runtime::BulkChannel::connect(endpoint, offer.token, offer.client, name_ + "'s feature channel", until,
                                             &wakeup_);
    channel_.confirm(offer.token, server, until, &wakeup_);
  } catch (const Error& e) {
    broken_ = true;
    throw Error(name_ + ": cannot open its feature channel at " + endpoint.to_string() + ": " +
                (shut_ ? std::string("shut down") : std::string(e.what())) + " (deadline " + millis(deadline) + ")");
  }
}

void ChannelClient::shut_down() {
  shut_ = true;
  wakeup_.notify();
}

void ChannelClient::fail(const std::string& what, std::chrono::milliseconds deadline) {
  if (broken_ && !first_failure_.empty()) {
    throw Error(name_ + ": feature channel: unusable since an earlier failure: " + first_failure_);
  }
  broken_ = true;
  first_failure_ = (shut_ ? std::string("shut down") : what) + " (deadline " + millis(deadline) + ")";
  throw Error(name_ + ": feature channel: " + first_failure_);
}

void ChannelClient::send(Span<const char> request, std::chrono::milliseconds deadline) {
  if (broken_ || shut_ || body_due_) fail(body_due_ ? "a reply body was left unread" : "shut down", deadline);
  const uint64_t length = request.size();
  const auto until = Clock::now() + deadline;
  try {
    send_exactly(channel_, &length, sizeof(length), until, wakeup_, "sending a request");
    send_exactly(channel_, request.data(), request.size(), until, wakeup_, "sending a request");
  } catch (const Error& e) {
    fail(e.what(), deadline);  // a half-sent frame leaves the stream unusable
  }
}

size_t ChannelClient::receive_head(std::vector<char>& head, uint64_t& body_bytes, std::chrono::milliseconds deadline) {
  if (broken_ || shut_ || body_due_) fail(body_due_ ? "a reply body was left unread" : "shut down", deadline);
  const auto until = Clock::now() + deadline;
  try {
    uint64_t length = 0;
    receive_exactly(channel_, &length, sizeof(length), until, wakeup_, "waiting for a reply");
    if (length > kMaxChannelHeadBytes) {
      throw Error("a reply head of " + std::to_string(length) + " bytes exceeds the limit of " +
                  std::to_string(kMaxChannelHeadBytes));
    }
    if (head.size() < length) head.resize(length);
    receive_exactly(channel_, head.data(), length, until, wakeup_, "reading a reply");
    receive_exactly(channel_, &body_left_, sizeof(body_left_), until, wakeup_, "reading a reply");
    if (body_left_ > kMaxChannelBodyBytes) {
      throw Error("a reply body of " + std::to_string(body_left_) + " bytes exceeds the limit of " +
                  std::to_string(kMaxChannelBodyBytes));
    }
    body_bytes = body_left_;
    body_due_ = body_left_ > 0;
    return length;
  } catch (const Error& e) {
    fail(e.what(), deadline);  // a half-read frame leaves the stream unusable
  }
}

void ChannelClient::receive_body(void* data, uint64_t bytes, std::chrono::milliseconds deadline) {
  if (broken_ || shut_ || !body_due_) fail(!body_due_ ? "no reply head was read" : "shut down", deadline);
  if (bytes > body_left_) {
    fail("asked for " + std::to_string(bytes) + " bytes of a body with " + std::to_string(body_left_) + " left",
         deadline);
  }
  try {
    receive_exactly(channel_, data, bytes, Clock::now() + deadline, wakeup_, "reading a reply body");
    body_left_ -= bytes;
    body_due_ = body_left_ > 0;
  } catch (const Error& e) {
    fail(e.what(), deadline);
  }
}

void ChannelClient::discard_body(std::chrono::milliseconds deadline) {
  std::vector<char> sink(std::min<uint64_t>(body_left(), uint64_t{1} << 20));
  while (body_left() > 0) receive_body(sink.data(), std::min<uint64_t>(body_left(), sink.size()), deadline);
}

void ChannelClient::receive_body(std::vector<char>& buffer, std::chrono::milliseconds deadline) {
  const uint64_t bytes = body_left();
  if (buffer.size() < bytes) buffer.resize(bytes);
  if (bytes > 0) receive_body(buffer.data(), bytes, deadline);
}

// ---------------------------------------------------------------------------------------
// Rows

Span<const char> receive_rows_head(ChannelClient& client, RowsScratch& scratch, uint64_t& body_bytes,
                                   std::chrono::milliseconds deadline) {
  const size_t length = client.receive_head(scratch.head, body_bytes, deadline);
  return Span<const char>(scratch.head.data(), length);
}

void receive_rows_body(ChannelClient& client, const RowsTarget& target, RowsScratch& scratch,
                       std::chrono::milliseconds deadline) {
  // Pieces of about this much stay in the L2 cache between the kernel's copy and ours.
  constexpr size_t kPieceBytes = size_t{256} << 10;
  const size_t rows = target.positions.size();
  const size_t per_piece = std::max<size_t>(1, kPieceBytes / std::max<size_t>(target.row_bytes, 1));
  if (scratch.body.size() < std::min(rows, per_piece) * target.row_bytes) {
    scratch.body.resize(std::min(rows, per_piece) * target.row_bytes);
  }
  for (size_t first = 0; first < rows; first += per_piece) {
    const size_t count = std::min(per_piece, rows - first);
    client.receive_body(scratch.body.data(), count * target.row_bytes, deadline);
    place_rows(target, scratch.body.data(), first, count);
  }
  if (client.body_left() > 0) client.discard_body(deadline);  // never: the head was checked
}

}  // namespace partita
