#include "actors/feature_channel.h"

#include "base/error.h"

namespace partita {

// ---------------------------------------------------------------------------------------
// Server

ChannelServer::ChannelServer(std::string host, uint32_t self, std::function<ChannelHandler()> make_handler,
                             std::chrono::milliseconds deadline, std::string name)
    : server_(
          std::move(host), self,
          [make_handler = std::move(make_handler), name] {
            auto encoder = std::make_shared<Encoder>();  // one per session, as Encoder wants
            runtime::ChannelService service;
            service.answer = make_handler();
            service.refuse = [encoder, name](const std::string& why, ChannelReply& reply) {
              encoder->error_reply(0, WireErrorCode::kBadRequest, name + ": feature channel: " + why, reply.head);
              reply.head_length = reply.head.size();
            };
            return service;
          },
          deadline, name) {}

DecodedChannelOffer ChannelServer::open() {
  const runtime::ChannelOffer offer = server_.open();
  DecodedChannelOffer decoded;
  decoded.host = offer.host;
  decoded.port = offer.port;
  decoded.token = offer.token;
  decoded.client = offer.client;
  return decoded;
}

// ---------------------------------------------------------------------------------------
// Client

void ChannelClient::open(const DecodedChannelOffer& offer, uint32_t server, std::chrono::milliseconds deadline) {
  open(runtime::ChannelOffer{offer.host, offer.port, offer.token, offer.client}, server, deadline);
}

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

// ---------------------------------------------------------------------------------------
// Worker

ChannelWorker::ChannelWorker(int part, DecodedChannelOffer offer, std::chrono::milliseconds deadline,
                             std::function<void(uint64_t tag)> report)
    : part_(part),
      client_(part_name(part)),
      deadline_(deadline),
      worker_(
          "channel." + std::to_string(part),
          [report = std::move(report)](uint64_t tag, const std::string&) { report(tag); },
          [this] { client_.shut_down(); }) {
  worker_.post(0, [this, offer = std::move(offer)] {
    std::string failure;
    try {
      client_.open(offer, static_cast<uint32_t>(part_), deadline_);
    } catch (const Error& e) {
      failure = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      failure_ = failure;
    }
    connect_reported_ = true;
  });
}

void ChannelWorker::submit(uint64_t tag, ChannelFetch* fetch) {
  worker_.post(tag, [this, fetch] {
    this->fetch(*fetch);
    fetch->reported = true;
  });
}

std::string ChannelWorker::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void ChannelWorker::fetch(ChannelFetch& fetch) {
  fetch.error.clear();
  try {
    if (std::string why = failure(); !why.empty()) throw Error(why);
    if (fetch.prepare) fetch.prepare(fetch);
    // Both requests go out before either reply is read: the partition answers them back to
    // back.
    for (int k = 0; k < 2; ++k) {
      if (fetch.asked[k]) client_.send(fetch.requests[k], deadline_);
    }
    // Every reply asked for is read, even after one is refused, so that the channel stays
    // in step for later batches; the first refusal is the fetch's error.
    std::string refused;
    for (int k = 0; k < 2; ++k) {
      if (!fetch.asked[k]) continue;
      uint64_t body_bytes = 0;
      Span<const char> head = receive_rows_head(client_, fetch.scratch, body_bytes, deadline_);
      try {
        if (!refused.empty()) throw Error(refused);
        check_rows_header(fetch.targets[k], fetch.ids[k], head, body_bytes);
      } catch (const Error& e) {
        if (refused.empty()) refused = e.what();
        client_.discard_body(deadline_);
        continue;
      }
      receive_rows_body(client_, fetch.targets[k], fetch.scratch, deadline_);
    }
    if (!refused.empty()) throw Error(refused);
    if (fetch.finish) fetch.finish(fetch);
  } catch (const Error& e) {
    fetch.error = e.what();
  }
}

}  // namespace partita
