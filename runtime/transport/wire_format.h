// Every byte layout the bulk transport puts on a TCP connection, in one place (in the manner
// of LevelDB's log_format.h). Control, failure detection and set-up travel as CAF messages;
// what is described here is only what flows on the transport's own connections
// (runtime/transport/connection.h), which carry bulk bytes beside CAF because CAF 0.17 moves
// large messages at about half of raw loopback TCP's speed (BENCHMARKS.md).
//
// Byte order: every integer of a header is little-endian, whatever the host. Payloads that
// are arrays of numbers (allreduce floats, feature rows) go in host order; the build
// requires a little-endian host (static_assert below), so both are the same and a
// big-endian port would have to swap payloads too.
//
// 1. Hello: the first bytes each end of a connection sends, 20 bytes:
//
//      offset 0   8 bytes  magic "PTBULK01"
//             8   u64      token: a secret both ends were told through CAF messages
//                          (a group's or a session's); another token is another group
//            16   u32      the sender's id within that group (allreduce rank, channel
//                          client number, server's partition)
//
//    The connecting end sends its hello at once; the accepting end reads it, checks magic,
//    token and id, and answers with its own hello. A connection whose hello is wrong (or
//    that says nothing before the deadline) is closed and logged, never parsed further.
//
// 2. Request channel (runtime/transport/request_channel.h): frames, each
//
//      u64 length, then `length` bytes
//
//    A request is one frame. A reply is two frames: its head (at most kMaxReplyHeadBytes)
//    and its body (raw, possibly empty, at most kMaxReplyBodyBytes), where the body's
//    length is sent right after the head, before the body's bytes, so that the receiver
//    can put the body in place piece by piece. Replies come in request order. A request
//    longer than kMaxRequestBytes is answered once with the service's refusal (an encoded
//    error reply for the feature channel) and the connection is closed: a stream whose
//    framing was broken cannot be resynchronised. A reply frame over its limit makes the
//    client fail with an error naming the length and the limit.
//
// 3. Allreduce ring (runtime/collective/ring.h): on each member's connection to its right
//    neighbour, per operation, an operation header of 24 bytes
//
//      offset 0   u32 magic 0x52415450 ("PTAR" read as little-endian bytes "PTAR")
//             4   u32 the sender's rank
//             8   u64 the operation's sequence number (1, 2, ...)
//            16   u64 the number of floats of the operation's buffer
//
//    then the operation's float32 values (2N-2 chunk steps, see ring.h), in host order.
//    The receiver checks magic, rank, sequence number and size before it sums a float:
//    members that disagree fail the operation with an error naming both.
//
// 4. Data staging (runtime/staging/): request-channel frames. A request is 24 bytes
//
//      offset 0   u32 magic 0x54535450 ("PTST" read as little-endian bytes "PTST")
//             4   u32 the file's index in the staging request's manifest (its units'
//                     files in order, runtime/staging/folder_manifest.h)
//             8   u64 the offset of the first byte wanted
//            16   u64 how many bytes (at most kMaxStageChunkBytes)
//
//    and its reply is a head of one byte, 0, and the file's bytes [offset, offset+length)
//    as the body; or, for a request the server refuses (an unknown file, a range past the
//    file's end, a read error), a head of 1 and the reason as text, and no body. The
//    receiver checks every file against the manifest's checksum before it uses it.
//
// 5. Embedding shard requests (embeddings/embedding_shard.h): request-channel frames
//    between a trainer and the shard of a sharded embedding table (dim floats per row). A
//    request is a head of 24 bytes
//
//      offset 0   u32 the operation: 1 read, 2 read a range, 3 push, 4 write
//             4   i32 the trainer (read, push)
//             8   i64 count: ids (read, push, write) or rows (range)
//            16   i64 range: the first global id of the range; otherwise 0
//
//    then, for a read, the ids (i64 x count); for a push, the ids and their gradients
//    (f32 x count x dim); for a write, the ids and their new rows (f32 x count x dim); a
//    range request is the head alone. Ids and values are in host order. A frame of another
//    length than its operation and count say is refused, so is a count whose reply would
//    exceed kMaxReplyBodyBytes (count x dim x 4) or a range outside the shard.
//
//    The reply's head is a u32 status: 0, ok, then for a read or a range the rows (f32 x
//    count x dim, in the request's order) as the body, and no body otherwise; or 1, refused,
//    followed by the reason as text, and no body.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace partita::runtime::wire {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "payloads are sent in host order (see the header)");

inline void put_u32(unsigned char* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put_u64(unsigned char* at, uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint32_t get_u32(const unsigned char* at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{at[i]} << (8 * i);
  return v;
}
inline uint64_t get_u64(const unsigned char* at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{at[i]} << (8 * i);
  return v;
}

// --- 1. Hello ---

constexpr char kHelloMagic[8] = {'P', 'T', 'B', 'U', 'L', 'K', '0', '1'};
constexpr size_t kHelloBytes = 20;

struct Hello {
  uint64_t token = 0;
  uint32_t sender = 0;
};

inline void encode_hello(const Hello& h, unsigned char out[kHelloBytes]) {
  std::memcpy(out, kHelloMagic, 8);
  put_u64(out + 8, h.token);
  put_u32(out + 16, h.sender);
}
// False if the bytes do not start with the magic (not a Partita transport connection).
inline bool decode_hello(const unsigned char in[kHelloBytes], Hello& h) {
  if (std::memcmp(in, kHelloMagic, 8) != 0) return false;
  h.token = get_u64(in + 8);
  h.sender = get_u32(in + 16);
  return true;
}

// --- 2. Request channel frames ---

constexpr size_t kFrameLengthBytes = 8;
constexpr uint64_t kMaxRequestBytes = uint64_t{256} << 20;    // one request
constexpr uint64_t kMaxReplyHeadBytes = uint64_t{16} << 20;   // a reply's head
constexpr uint64_t kMaxReplyBodyBytes = uint64_t{1} << 30;    // a reply's body (rows)

inline void encode_frame_length(uint64_t length, unsigned char out[kFrameLengthBytes]) { put_u64(out, length); }
inline uint64_t decode_frame_length(const unsigned char in[kFrameLengthBytes]) { return get_u64(in); }

// --- 3. Allreduce operation header ---

constexpr uint32_t kOpMagic = 0x52415450;
constexpr size_t kOpHeaderBytes = 24;

struct OpHeader {
  uint32_t rank = 0;
  uint64_t seq = 0;
  uint64_t floats = 0;
};

inline void encode_op_header(const OpHeader& h, unsigned char out[kOpHeaderBytes]) {
  put_u32(out, kOpMagic);
  put_u32(out + 4, h.rank);
  put_u64(out + 8, h.seq);
  put_u64(out + 16, h.floats);
}
// False if the magic is wrong.
inline bool decode_op_header(const unsigned char in[kOpHeaderBytes], OpHeader& h) {
  if (get_u32(in) != kOpMagic) return false;
  h.rank = get_u32(in + 4);
  h.seq = get_u64(in + 8);
  h.floats = get_u64(in + 16);
  return true;
}

// --- 4. Data staging requests ---

constexpr uint32_t kStageMagic = 0x54535450;
constexpr size_t kStageRequestBytes = 24;
constexpr uint64_t kMaxStageChunkBytes = uint64_t{64} << 20;
constexpr char kStageReplyOk = 0;
constexpr char kStageReplyRefused = 1;

struct StageRequest {
  uint32_t file = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

inline void encode_stage_request(const StageRequest& r, unsigned char out[kStageRequestBytes]) {
  put_u32(out, kStageMagic);
  put_u32(out + 4, r.file);
  put_u64(out + 8, r.offset);
  put_u64(out + 16, r.bytes);
}
// False if the request is not 24 bytes or its magic is wrong.
inline bool decode_stage_request(const unsigned char* in, size_t bytes, StageRequest& r) {
  if (bytes != kStageRequestBytes || get_u32(in) != kStageMagic) return false;
  r.file = get_u32(in + 4);
  r.offset = get_u64(in + 8);
  r.bytes = get_u64(in + 16);
  return true;
}

// --- 5. Embedding shard requests ---

enum class ShardOp : uint32_t { kRead = 1, kReadRange = 2, kPush = 3, kWrite = 4 };
constexpr size_t kShardRequestHeadBytes = 24;
constexpr uint32_t kShardReplyOk = 0;
constexpr uint32_t kShardReplyRefused = 1;

struct ShardRequestHead {
  ShardOp op = ShardOp::kRead;
  int32_t trainer = 0;
  int64_t count = 0;
  int64_t first = 0;
};

inline void encode_shard_request_head(const ShardRequestHead& h, unsigned char out[kShardRequestHeadBytes]) {
  put_u32(out, static_cast<uint32_t>(h.op));
  put_u32(out + 4, static_cast<uint32_t>(h.trainer));
  put_u64(out + 8, static_cast<uint64_t>(h.count));
  put_u64(out + 16, static_cast<uint64_t>(h.first));
}
// False if fewer than kShardRequestHeadBytes bytes. The fields are not checked: an unknown
// operation or a negative count is the shard's to refuse.
inline bool decode_shard_request_head(const unsigned char* in, size_t bytes, ShardRequestHead& h) {
  if (bytes < kShardRequestHeadBytes) return false;
  h.op = static_cast<ShardOp>(get_u32(in));
  h.trainer = static_cast<int32_t>(get_u32(in + 4));
  h.count = static_cast<int64_t>(get_u64(in + 8));
  h.first = static_cast<int64_t>(get_u64(in + 16));
  return true;
}

}  // namespace partita::runtime::wire
