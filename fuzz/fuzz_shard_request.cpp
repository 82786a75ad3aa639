// shard_wire::answer (embeddings/embedding_shard.h): a trainer's request frames as the
// shard's channel passes them on, in the form fuzz/shard_harness.h describes, answered by
// one shard. Besides the sanitizers, each reply is checked against the frame format
// (runtime/transport/wire_format.h, section 5): a status head; an ok read's or range's body
// of count x dim floats, read out whole through its fill; no body with a refusal; and with
// one trainer (no step pending) a refused request leaves the shard's checkpoint as it was.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/shard_harness.h"
#include "runtime/transport/wire_format.h"

namespace {

using namespace partita;
namespace wire = runtime::wire;

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::unique_ptr<EmbeddingShard> shard = fuzz::make_shard(data[0]);
  const EmbeddingShardConfig& config = shard->config();
  // Replies waiting for a step never wait: a read behind a missing trainer's push is refused.
  const std::chrono::milliseconds wait(0);
  runtime::ChannelReply reply;  // reused, as a session does
  std::vector<char> frame, body;
  size_t at = 1;
  while (at < size) {
    size_t length = data[at];
    if (at + 1 < size) length |= size_t{data[at + 1]} << 8;
    at += 2;
    length = at < size ? std::min(length, size - at) : 0;
    // A frame of its own (as the channel hands one over), not a view into the input.
    frame.assign(reinterpret_cast<const char*>(data) + std::min(at, size),
                 reinterpret_cast<const char*>(data) + std::min(at, size) + length);
    at += length;
    std::vector<char> before;
    if (config.num_trainers == 1) before = shard->save(wait);
    shard_wire::answer(*shard, Span<const char>(frame), reply, wait);

    check(reply.head_length >= sizeof(uint32_t) && reply.head_length <= reply.head.size());
    uint32_t status = 0;
    std::memcpy(&status, reply.head.data(), sizeof(status));
    if (status == wire::kShardReplyOk) {
      check(reply.head_length == sizeof(status));
      wire::ShardRequestHead head;
      check(wire::decode_shard_request_head(reinterpret_cast<const unsigned char*>(frame.data()), frame.size(), head));
      const bool rows = head.op == wire::ShardOp::kRead || head.op == wire::ShardOp::kReadRange;
      check(reply.body_bytes == (rows ? static_cast<uint64_t>(head.count * config.dim) * sizeof(float) : 0));
      check(reply.body_bytes <= wire::kMaxReplyBodyBytes);
      if (reply.body_bytes > 0) {
        body.resize(reply.body_bytes);
        // In pieces of a row or so, as the server asks for them.
        const uint64_t piece = static_cast<uint64_t>(config.dim) * sizeof(float);
        for (uint64_t offset = 0; offset < reply.body_bytes; offset += piece) {
          reply.fill(body.data() + offset, offset, std::min(piece, reply.body_bytes - offset));
        }
      }
    } else {
      check(status == wire::kShardReplyRefused);
      check(reply.body_bytes == 0);
      check(reply.head_length > sizeof(status));  // a reason
      if (config.num_trainers == 1) check(shard->save(wait) == before);
    }
  }
  return 0;
}
