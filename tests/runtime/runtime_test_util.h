// Helpers for the runtime tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transport/request_channel.h"

// Expects `part` inside `text`, printing the text when it is not.
#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)

namespace partita::testing {

struct ChannelReplyBytes {
  std::vector<char> head, body;
};

// The next reply of `client`, head and body in vectors of exactly their bytes.
inline ChannelReplyBytes next_reply(runtime::RequestClient& client, std::chrono::milliseconds deadline) {
  ChannelReplyBytes r;
  uint64_t body_bytes = 0;
  r.head.resize(client.receive_head(r.head, body_bytes, deadline));
  client.receive_body(r.body, deadline);
  r.body.resize(body_bytes);
  return r;
}

}  // namespace partita::testing
