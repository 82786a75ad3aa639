// The codec between the sampling/feature protocol (sampling.capnp) and byte buffers.
//
// Encoding writes one Cap'n Proto message into a caller-owned std::vector<char> (CAF copies
// that type with one memcpy; see caf_types.h). Bulk tensor bytes are copied exactly once,
// from the source straight into the output buffer: the message references them as external
// segments instead of copying them into the builder first. The output vector's capacity is
// reused across calls, because fresh memory is slow here (first touch runs at ~2 GB/s).
//
// Decoding is zero-copy: the decoded spans point into the input buffer, which must outlive
// them. Every decoded message is validated first (dtypes, shapes against byte counts,
// offsets against neighbour counts); anything malformed, truncated or inconsistent throws
// partita::Error naming the message type and the problem, never crashes.
//
// No CAF and no Cap'n Proto headers here, so code that only encodes pays for neither.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/span.h"
#include "graph/epoch_plan.h"
#include "graph/mini_batch.h"
#include "graph/hop_sampler.h"
#include "messages/tensor_view.h"

namespace partita {

enum class MessageKind {
  kHopRequest,
  kHopReply,
  kFeatureRequest,
  kFeatureReply,
  kErrorReply,
  kChannelOffer,
  kMiniBatch,
  kSamplerAck,
  kFeatureRowsHeader,
  kLinkPlan,
};
const char* message_kind_name(MessageKind kind);  // "hop request", ...

// Mirrors sampling.capnp's ErrorCode.
enum class WireErrorCode { kUnknown, kBadRequest, kOutOfRange, kNotFound, kInternal };
const char* wire_error_code_name(WireErrorCode code);  // "bad request", ...

// Thrown by a typed decoder when the peer answered with an error reply instead.
class RemoteError : public Error {
 public:
  RemoteError(const std::string& what, uint64_t request_id, WireErrorCode code)
      : Error(what), request_id_(request_id), code_(code) {}
  uint64_t request_id() const { return request_id_; }
  WireErrorCode code() const { return code_; }

 private:
  uint64_t request_id_;
  WireErrorCode code_;
};

// One Data field holds at most 2^29-1 bytes; chunks are kept a multiple of 8 bytes so that
// no element straddles two chunks and every chunk of an aligned source stays aligned.
constexpr size_t kMaxChunkBytes = (size_t{1} << 29) - 8;

// Not thread-safe: one Encoder per thread (it owns scratch space reused across calls).
class Encoder {
 public:
  // `max_chunk_bytes` (rounded down to a multiple of 8, at least 8) splits tensor data; tests
  // lower it to exercise split tensors without allocating 512 MiB.
  explicit Encoder(size_t max_chunk_bytes = kMaxChunkBytes);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  // Each replaces the contents of `out` with the encoded message. Throws Error if the
  // input is inconsistent (a tensor whose shape does not match its bytes, offsets that do
  // not end at the neighbour count, ...), so a bad message is caught at its sender.
  void hop_request(uint64_t request_id, const SampleKey& key, int hop, const HopInput& input,
                   uint64_t config_fingerprint, std::vector<char>& out);
  void hop_reply(uint64_t request_id, const HopOutput& output, std::vector<char>& out);
  void feature_request(uint64_t request_id, const std::string& group, const std::string& name,
                       Span<const int64_t> ids, std::vector<char>& out);
  void feature_reply(uint64_t request_id, const TensorView& values, std::vector<char>& out);
  // A feature reply whose values the caller writes itself: the message is `head`, then the
  // values (the bytes `dtype` and `shape` give), then the returned number of zero bytes. It
  // decodes as feature_reply()'s does. So a sender gathers rows straight into its output
  // buffer after the head, or hands head, rows and padding to writev, instead of copying
  // them into a message. Throws Error for values over one chunk (kMaxChunkBytes).
  size_t feature_reply_head(uint64_t request_id, DType dtype, const std::vector<int64_t>& shape,
                            std::vector<char>& head);
  void error_reply(uint64_t request_id, WireErrorCode code, const std::string& message,
                   std::vector<char>& out);
  void channel_offer(const std::string& host, uint16_t port, uint64_t token, uint32_t client,
                     std::vector<char>& out);
  // Copies the batch's arrays (x included) into the message.
  void mini_batch(const SampleKey& key, const MiniBatch& batch, std::vector<char>& out);
  void sampler_ack(int64_t num_batches, std::vector<char>& out);
  // A plan of link batches (its order, offsets, key and excluded edges; job_seed is sent
  // as the key's seed). Throws Error if the plan's arrays do not fit together.
  void link_plan(const EpochPlan& plan, std::vector<char>& out);
  // The head of a feature reply whose rows (`dtype`, `shape`) follow it raw on a channel.
  void feature_rows_header(uint64_t request_id, DType dtype, const std::vector<int64_t>& shape,
                           std::vector<char>& out);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Decoded messages borrow from the buffer they were decoded from. `owned` keeps the memory
// the views point into when they cannot point into the input: a copy of an input that was
// not 8-byte aligned, or a tensor over 511 MiB joined from its chunks. It is empty in the
// zero-copy case.
using OwnedBuffers = std::vector<std::shared_ptr<const void>>;

struct DecodedHopRequest {
  uint64_t request_id = 0;
  SampleKey key;
  int hop = 0;
  uint64_t config_fingerprint = 0;
  HopInput input;  // trees/times are empty unless sent
  OwnedBuffers owned;
};

struct DecodedHopReply {
  uint64_t request_id = 0;
  Span<const int64_t> offsets;  // offsets.size() - 1 input nodes
  Span<const int64_t> neighbors;
  Span<const int64_t> edge_ids;
  Span<const int32_t> edge_types;  // empty for homogeneous graphs
  OwnedBuffers owned;
  size_t num_nodes() const { return offsets.empty() ? 0 : offsets.size() - 1; }
};

struct DecodedFeatureRequest {
  uint64_t request_id = 0;
  std::string group;
  std::string name;
  Span<const int64_t> ids;
  OwnedBuffers owned;
};

struct DecodedFeatureReply {
  uint64_t request_id = 0;
  TensorView values;
  OwnedBuffers owned;
};

struct DecodedErrorReply {
  uint64_t request_id = 0;
  WireErrorCode code = WireErrorCode::kUnknown;
  std::string message;
};

struct DecodedFeatureRowsHeader {
  uint64_t request_id = 0;
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;  // of the rows that follow
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
};

struct DecodedChannelOffer {
  std::string host;
  uint16_t port = 0;
  uint64_t token = 0;
  uint32_t client = 0;
};

// What a buffer holds, for dispatch, and its request id (so that even a request that fails
// validation can be answered with an error reply to the right id; 0 for the kinds without
// one: channel offers, mini-batches and sampler acks). Throws Error if the
// buffer is not a protocol message.
struct MessageHeader {
  MessageKind kind;
  uint64_t request_id;
};
MessageHeader peek_message(Span<const char> bytes);

// Each throws Error if `bytes` does not hold a valid message of that kind, and RemoteError
// if it holds an error reply (except decode_error_reply). The optional expectation is
// checked when not negative: the number of nodes the request asked about, the number of
// rows requested.
DecodedHopRequest decode_hop_request(Span<const char> bytes);
DecodedHopReply decode_hop_reply(Span<const char> bytes, int64_t expected_nodes = -1);
DecodedFeatureRequest decode_feature_request(Span<const char> bytes);
DecodedFeatureReply decode_feature_reply(Span<const char> bytes, int64_t expected_rows = -1);
DecodedErrorReply decode_error_reply(Span<const char> bytes);
DecodedChannelOffer decode_channel_offer(Span<const char> bytes);
// Copies the arrays into `batch` (reusing its vectors' capacity) after checking that they
// are consistent: edge and per-hop counts add up, local indices are within the nodes, x is
// [nodes, feature_dim] float32, y has one int64 label per node.
void decode_mini_batch(Span<const char> bytes, MiniBatch& batch, SampleKey* key = nullptr);
int64_t decode_sampler_ack(Span<const char> bytes);  // the number of batches
// A copy of the plan, after checking that its offsets run from 0 to their array's size
// without decreasing and that there are as many excluded sources as destinations.
EpochPlan decode_link_plan(Span<const char> bytes);
// Checks dtype and shape (at least one dimension, none negative, at most 1 GiB of rows)
// and, when not negative, the row count.
DecodedFeatureRowsHeader decode_feature_rows_header(Span<const char> bytes, int64_t expected_rows = -1);

}  // namespace partita
