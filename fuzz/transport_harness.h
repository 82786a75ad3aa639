// What both request-channel targets run: fuzz_transport.cpp drives a channel in one thread
// over a socketpair, fuzz_transport_tls.cpp end to end over loopback TLS. The wire headers
// are decoded alone; a session answers with an echo service; a client reads replies the
// way a feature channel does.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace partita::fuzz {

// The wire format's fixed headers (hello, frame length, allreduce operation header)
// decoded from the input's first bytes, zero-padded to the longest.
inline void decode_headers(const uint8_t* data, size_t size) {
  unsigned char block[runtime::wire::kOpHeaderBytes] = {};
  std::memcpy(block, data, std::min(size, sizeof(block)));
  runtime::wire::Hello hello;
  runtime::wire::OpHeader op;
  volatile uint64_t sink = runtime::wire::decode_hello(block, hello) + runtime::wire::decode_frame_length(block) +
                           runtime::wire::decode_op_header(block, op) + hello.token + op.floats;
  (void)sink;
}

// The echo: a reply's head is the request's first kEchoHead bytes, its body the whole
// request; a refused request's head is kRefusal followed by the reason, with no body.
inline constexpr size_t kEchoHead = 64;
inline const std::string kRefusal = "refused: ";

inline runtime::ChannelService echo_service() {
  runtime::ChannelService service;
  service.answer = [](Span<const char> request, runtime::ChannelReply& reply) {
    const size_t head = std::min<size_t>(request.size(), kEchoHead);
    reply.head.assign(request.data(), request.data() + head);
    reply.head_length = head;
    reply.storage.assign(request.data(), request.data() + request.size());
    reply.body_bytes = request.size();
    reply.fill = [&reply](char* piece, uint64_t offset, uint64_t bytes) {
      std::memcpy(piece, reply.storage.data() + offset, bytes);
    };
  };
  service.refuse = [](const std::string& why, runtime::ChannelReply& reply) {
    const std::string text = kRefusal + why;
    reply.head.assign(text.begin(), text.end());
    reply.head_length = text.size();
  };
  return service;
}

// Reads replies from `client` until its stream fails, which it must do with an Error (the
// end of the input, a frame over its limit): returns that Error's message. Each body is
// read half piece by piece and the rest discarded whole, both ways a feature channel reads.
inline std::string read_replies_until_error(runtime::RequestClient& client, std::chrono::milliseconds deadline) {
  try {
    std::vector<char> head;
    for (;;) {
      uint64_t body_bytes = 0;
      client.receive_head(head, body_bytes, deadline);
      if (body_bytes > 1) {
        char piece[7];
        client.receive_body(piece, std::min<uint64_t>(sizeof(piece), body_bytes / 2), deadline);
      }
      client.discard_body(deadline);
    }
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace partita::fuzz
