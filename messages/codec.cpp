#include "messages/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "messages/sampling.capnp.h"
#include "messages/tensor.capnp.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the segment table is written in host order; Cap'n Proto's wire format is "
              "little-endian");

namespace partita {

namespace {

using wire::Envelope;

// The first segment of every message lives here, so building small messages allocates
// nothing: 8 KiB holds any request or reply header, and bulk tensor data is referenced
// as external segments rather than copied into the builder.
constexpr size_t kScratchWords = 1024;
// Chunks smaller than this are copied into the builder: an extra segment (a table entry,
// a separate memcpy) costs more than copying a few KiB.
constexpr size_t kMinExternalBytes = 4096;
// Deeper than any message of this protocol (Envelope > reply > Tensor > chunks > Data).
constexpr int kNestingLimit = 16;
constexpr size_t kMaxDims = 16;

[[noreturn]] void fail(const char* what, const std::string& problem) {
  throw Error(std::string(what) + ": " + problem);
}

std::string kj_description(const kj::Exception& e) {
  return std::string(e.getDescription().cStr());
}

// Runs `body`, turning Cap'n Proto's exceptions into Errors naming the message.
template <typename Body>
auto guarded(const char* what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error&) {
    throw;
  } catch (const kj::Exception& e) {
    fail(what, "malformed message: " + kj_description(e));
  }
}

}  // namespace

const char* message_kind_name(MessageKind kind) {
  switch (kind) {
    case MessageKind::kHopRequest: return "hop request";
    case MessageKind::kHopReply: return "hop reply";
    case MessageKind::kFeatureRequest: return "feature request";
    case MessageKind::kFeatureReply: return "feature reply";
    case MessageKind::kErrorReply: return "error reply";
    case MessageKind::kChannelOffer: return "channel offer";
    case MessageKind::kMiniBatch: return "mini-batch";
    case MessageKind::kSamplerAck: return "sampler ack";
    case MessageKind::kFeatureRowsHeader: return "feature rows header";
    case MessageKind::kLinkPlan: return "link plan";
  }
  return "unknown message";
}

const char* wire_error_code_name(WireErrorCode code) {
  switch (code) {
    case WireErrorCode::kUnknown: return "unknown";
    case WireErrorCode::kBadRequest: return "bad request";
    case WireErrorCode::kOutOfRange: return "out of range";
    case WireErrorCode::kNotFound: return "not found";
    case WireErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------
// Encoding

class Encoder::Impl {
 public:
  explicit Impl(size_t max_chunk_bytes)
      : chunk_bytes_(std::max<size_t>(8, std::min(max_chunk_bytes, kMaxChunkBytes) / 8 * 8)),
        scratch_(kScratchWords) {}

  // Builds one message with `fill(envelope, orphanage)` and writes it to `out`. With
  // `omit_external`, the one external segment (which must be the last) is left out: `out`
  // gets what precedes it, and the return value is the zero padding that must follow it.
  template <typename Fill>
  size_t encode(const char* what, std::vector<char>& out, Fill&& fill, bool omit_external = false) {
    return guarded(what, [&] {
      external_.clear();
      // The builder re-zeroes the scratch space it used on destruction, as it requires.
      capnp::MallocMessageBuilder message(kj::arrayPtr(scratch_.data(), scratch_.size()));
      fill(message.initRoot<Envelope>(), message.getOrphanage());
      return flatten(what, message.getSegmentsForOutput(), out, omit_external);
    });
  }

  // Writes `tensor` into `builder`: dtype, shape and data split into chunks. With
  // `all_external`, every chunk is referenced, however small (see feature_reply_head).
  void write_tensor(const char* what, const char* field, const TensorView& tensor,
                    wire::Tensor::Builder builder, capnp::Orphanage orphanage,
                    bool all_external = false) {
    if (tensor.shape.size() > kMaxDims) fail(what, std::string(field) + ": too many dimensions");
    uint64_t numel = 1;
    for (int64_t d : tensor.shape) {
      if (d < 0) fail(what, std::string(field) + ": negative dimension");
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * dtype_size(tensor.dtype) != tensor.bytes) {
      fail(what, std::string(field) + ": shape needs " +
                     std::to_string(numel * dtype_size(tensor.dtype)) + " bytes, data has " +
                     std::to_string(tensor.bytes));
    }
    builder.setDtype(static_cast<uint32_t>(tensor.dtype));
    auto shape = builder.initShape(static_cast<unsigned>(tensor.shape.size()));
    for (size_t i = 0; i < tensor.shape.size(); ++i) shape.set(i, tensor.shape[i]);

    const auto* src = static_cast<const capnp::byte*>(tensor.data);
    size_t num_chunks = (tensor.bytes + chunk_bytes_ - 1) / chunk_bytes_;
    auto chunks = builder.initChunks(static_cast<unsigned>(num_chunks));
    for (size_t i = 0; i < num_chunks; ++i) {
      size_t offset = i * chunk_bytes_;
      size_t len = std::min(chunk_bytes_, tensor.bytes - offset);
      const capnp::byte* begin = src + offset;
      if ((all_external || len >= kMinExternalBytes) && reinterpret_cast<uintptr_t>(begin) % 8 == 0) {
        chunks.adopt(i, orphanage.referenceExternalData(capnp::Data::Reader(begin, len)));
        external_.push_back({begin, len});
      } else {
        // Small or unaligned (external segments must start on a word): copy it into the
        // builder. For an unaligned bulk source this is a second copy; senders pass vectors
        // and mapped arrays, which are aligned.
        auto data = chunks.init(i, len);
        std::memcpy(data.begin(), begin, len);
      }
    }
  }

 private:
  struct External {
    const capnp::byte* begin;
    size_t bytes;
  };

  // The standard framing (segment count - 1, segment sizes, padding, segments) written into
  // `out`. External segments are copied by their exact byte length and padded with zeros:
  // Cap'n Proto would otherwise read up to 7 bytes past the end of the caller's data. With
  // `omit_external` the last segment, external, is not written; returns its padding.
  size_t flatten(const char* what, kj::ArrayPtr<const kj::ArrayPtr<const capnp::word>> segments,
                 std::vector<char>& out, bool omit_external) {
    size_t omitted_padding = 0;
    if (omit_external) {
      if (external_.size() != 1 || reinterpret_cast<const capnp::byte*>(segments.back().begin()) !=
                                       external_[0].begin) {
        fail(what, "the values must be one external segment at the end of the message");
      }
      omitted_padding = segments.back().size() * 8 - external_[0].bytes;
      segments = segments.slice(0, segments.size() - 1);
    }
    size_t table_words = (segments.size() + omit_external) / 2 + 1;
    size_t total = table_words * 8;
    for (auto& segment : segments) total += segment.size() * 8;
    // Resizing within capacity only zero-fills growth, so reuse costs nothing extra.
    out.resize(total);
    char* dst = out.data();
    std::memset(dst, 0, table_words * 8);
    auto* table = reinterpret_cast<uint32_t*>(dst);  // vector<char> storage is 16-aligned
    table[0] = static_cast<uint32_t>(segments.size() + omit_external - 1);
    for (size_t i = 0; i < segments.size(); ++i)
      table[i + 1] = static_cast<uint32_t>(segments[i].size());
    if (omit_external) {
      table[segments.size() + 1] = static_cast<uint32_t>((external_[0].bytes + 7) / 8);
    }
    dst += table_words * 8;

    size_t next_external = 0;
    for (auto& segment : segments) {
      size_t seg_bytes = segment.size() * 8;
      // Segments come out in creation order, so external ones appear in the order referenced.
      if (next_external < external_.size() &&
          reinterpret_cast<const capnp::byte*>(segment.begin()) ==
              external_[next_external].begin) {
        size_t len = external_[next_external++].bytes;
        std::memcpy(dst, segment.begin(), len);
        std::memset(dst + len, 0, seg_bytes - len);
      } else {
        std::memcpy(dst, segment.begin(), seg_bytes);
      }
      dst += seg_bytes;
    }
    return omitted_padding;
  }

  size_t chunk_bytes_;
  std::vector<capnp::word> scratch_;  // zeroed, as MallocMessageBuilder requires
  std::vector<External> external_;
};

Encoder::Encoder(size_t max_chunk_bytes) : impl_(std::make_unique<Impl>(max_chunk_bytes)) {}
Encoder::~Encoder() = default;

void Encoder::hop_request(uint64_t request_id, const SampleKey& key, int hop,
                          const HopInput& input, uint64_t config_fingerprint,
                          std::vector<char>& out) {
  const char* what = "hop request";
  size_t n = input.nodes.size();
  if (!input.trees.empty() && input.trees.size() != n)
    fail(what, "trees has " + std::to_string(input.trees.size()) + " entries for " +
                   std::to_string(n) + " nodes");
  if (!input.times.empty() && input.times.size() != n)
    fail(what, "times has " + std::to_string(input.times.size()) + " entries for " +
                   std::to_string(n) + " nodes");
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
    auto request = envelope.initHopRequest();
    request.setRequestId(request_id);
    request.setConfigFingerprint(config_fingerprint);
    auto k = request.initKey();
    k.setSeed(key.seed);
    k.setEpoch(key.epoch);
    k.setBatch(key.batch);
    request.setHop(hop);
    impl_->write_tensor(what, "nodes", TensorView::of(input.nodes), request.initNodes(),
                        orphanage);
    if (!input.trees.empty())
      impl_->write_tensor(what, "trees", TensorView::of(input.trees), request.initTrees(),
                          orphanage);
    if (!input.times.empty())
      impl_->write_tensor(what, "times", TensorView::of(input.times), request.initTimes(),
                          orphanage);
  });
}

void Encoder::hop_reply(uint64_t request_id, const HopOutput& output, std::vector<char>& out) {
  const char* what = "hop reply";
  size_t edges = output.neighbors.size();
  if (output.offsets.empty() || output.offsets.front() != 0 ||
      output.offsets.back() != static_cast<int64_t>(edges))
    fail(what, "offsets must run from 0 to the neighbour count " + std::to_string(edges));
  if (output.edge_ids.size() != edges)
    fail(what, "edge_ids has " + std::to_string(output.edge_ids.size()) + " entries for " +
                   std::to_string(edges) + " neighbours");
  if (!output.edge_types.empty() && output.edge_types.size() != edges)
    fail(what, "edge_types has " + std::to_string(output.edge_types.size()) +
                   " entries for " + std::to_string(edges) + " neighbours");
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
    auto reply = envelope.initHopReply();
    reply.setRequestId(request_id);
    impl_->write_tensor(what, "offsets", TensorView::of(output.offsets), reply.initOffsets(),
                        orphanage);
    impl_->write_tensor(what, "neighbors", TensorView::of(output.neighbors),
                        reply.initNeighbors(), orphanage);
    impl_->write_tensor(what, "edge_ids", TensorView::of(output.edge_ids), reply.initEdgeIds(),
                        orphanage);
    if (!output.edge_types.empty())
      impl_->write_tensor(what, "edge_types", TensorView::of(output.edge_types),
                          reply.initEdgeTypes(), orphanage);
  });
}

void Encoder::feature_request(uint64_t request_id, const std::string& group,
                              const std::string& name, Span<const int64_t> ids,
                              std::vector<char>& out) {
  const char* what = "feature request";
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
    auto request = envelope.initFeatureRequest();
    request.setRequestId(request_id);
    request.setGroup(capnp::Text::Reader(group.data(), group.size()));
    request.setName(capnp::Text::Reader(name.data(), name.size()));
    impl_->write_tensor(what, "ids", TensorView::of(ids), request.initIds(), orphanage);
  });
}

void Encoder::feature_reply(uint64_t request_id, const TensorView& values,
                            std::vector<char>& out) {
  const char* what = "feature reply";
  if (values.shape.empty()) fail(what, "values must have at least one dimension (rows)");
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
    auto reply = envelope.initFeatureReply();
    reply.setRequestId(request_id);
    impl_->write_tensor(what, "values", values, reply.initValues(), orphanage);
  });
}

size_t Encoder::feature_reply_head(uint64_t request_id, DType dtype,
                                  const std::vector<int64_t>& shape, std::vector<char>& head) {
  const char* what = "feature reply";
  if (shape.empty()) fail(what, "values must have at least one dimension (rows)");
  uint64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(what, "values: negative dimension");
    numel *= static_cast<uint64_t>(d);
  }
  const uint64_t bytes = numel * dtype_size(dtype);
  if (bytes > kMaxChunkBytes) fail(what, "values over one chunk cannot be written separately");
  if (bytes == 0) {  // no data segment at all: the head is the whole message
    feature_reply(request_id, TensorView(dtype, shape, nullptr, 0), head);
    return 0;
  }
  // The values are referenced, never read: the segment only needs an aligned address to
  // tell it apart in flatten(), which leaves it out.
  alignas(8) static const capnp::word placeholder{};
  return impl_->encode(
      what, head,
      [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
        auto reply = envelope.initFeatureReply();
        reply.setRequestId(request_id);
        impl_->write_tensor(what, "values", TensorView(dtype, shape, &placeholder, bytes),
                            reply.initValues(), orphanage, /*all_external=*/true);
      },
      /*omit_external=*/true);
}

void Encoder::error_reply(uint64_t request_id, WireErrorCode code, const std::string& message,
                          std::vector<char>& out) {
  impl_->encode("error reply", out, [&](Envelope::Builder envelope, capnp::Orphanage) {
    auto reply = envelope.initErrorReply();
    reply.setRequestId(request_id);
    reply.setCode(static_cast<wire::ErrorCode>(code));
    reply.setMessage(capnp::Text::Reader(message.data(), message.size()));
  });
}

void Encoder::channel_offer(const std::string& host, uint16_t port, uint64_t token, uint32_t client,
                            std::vector<char>& out) {
  impl_->encode("channel offer", out, [&](Envelope::Builder envelope, capnp::Orphanage) {
    auto offer = envelope.initChannelOffer();
    offer.setHost(capnp::Text::Reader(host.data(), host.size()));
    offer.setPort(port);
    offer.setToken(token);
    offer.setClient(client);
  });
}

void Encoder::mini_batch(const SampleKey& key, const MiniBatch& batch, std::vector<char>& out) {
  const char* what = "mini-batch";
  const auto nodes = static_cast<int64_t>(batch.node_ids.size());
  if (batch.feature_dim < 0 || batch.x.size() != static_cast<size_t>(nodes * batch.feature_dim))
    fail(what, "x has " + std::to_string(batch.x.size()) + " values for " +
                   std::to_string(nodes) + " nodes of " + std::to_string(batch.feature_dim));
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
    auto m = envelope.initMiniBatch();
    auto k = m.initKey();
    k.setSeed(key.seed);
    k.setEpoch(key.epoch);
    k.setBatch(key.batch);
    m.setBatchSize(batch.batch_size);
    auto vec = [&](const char* field, const auto& values, auto init) {
      impl_->write_tensor(what, field, TensorView::of(values), init(), orphanage);
    };
    vec("node_ids", batch.node_ids, [&] { return m.initNodeIds(); });
    vec("row", batch.row, [&] { return m.initRow(); });
    vec("col", batch.col, [&] { return m.initCol(); });
    vec("edge_ids", batch.edge_ids, [&] { return m.initEdgeIds(); });
    if (!batch.edge_types.empty()) vec("edge_types", batch.edge_types, [&] { return m.initEdgeTypes(); });
    vec("num_sampled_nodes", batch.num_sampled_nodes, [&] { return m.initNumSampledNodes(); });
    vec("num_sampled_edges", batch.num_sampled_edges, [&] { return m.initNumSampledEdges(); });
    if (!batch.batch.empty()) vec("batch", batch.batch, [&] { return m.initBatch(); });
    vec("input_ids", batch.input_ids, [&] { return m.initInputIds(); });
    vec("input_local", batch.input_local, [&] { return m.initInputLocal(); });
    if (batch.feature_dim > 0) {
      impl_->write_tensor(what, "x", TensorView(DType::kFloat32, {nodes, batch.feature_dim}, batch.x.data(),
                                                batch.x.size() * sizeof(float)),
                          m.initX(), orphanage);
    }
    if (!batch.y.empty()) vec("y", batch.y, [&] { return m.initY(); });
  });
}

void Encoder::sampler_ack(int64_t num_batches, std::vector<char>& out) {
  impl_->encode("sampler ack", out, [&](Envelope::Builder envelope, capnp::Orphanage) {
    envelope.initSamplerAck().setNumBatches(num_batches);
  });
}

void Encoder::link_plan(const EpochPlan& plan, std::vector<char>& out) {
  const char* what = "link plan";
  if (plan.offsets.empty()) fail(what, "no batch offsets");
  if (plan.excluded_src.size() != plan.excluded_dst.size()) {
    fail(what, std::to_string(plan.excluded_src.size()) + " excluded sources for " +
                   std::to_string(plan.excluded_dst.size()) + " destinations");
  }
  if (!plan.times.empty() && plan.times.size() != plan.order.size()) {
    fail(what, std::to_string(plan.times.size()) + " times for " + std::to_string(plan.order.size()) + " seeds");
  }
  if (plan.excludes_edges() && plan.excluded_offsets.size() != plan.offsets.size()) {
    fail(what, "excluded edges given for " + std::to_string(plan.excluded_offsets.size() - 1) + " batches of " +
                   std::to_string(plan.num_batches()));
  }
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage orphanage) {
    auto p = envelope.initLinkPlan();
    p.setSeed(plan.job_seed);
    p.setEpoch(plan.epoch);
    impl_->write_tensor(what, "seeds", TensorView::of(Span<const int64_t>(plan.order)), p.initSeeds(), orphanage);
    impl_->write_tensor(what, "offsets", TensorView::of(Span<const int64_t>(plan.offsets)), p.initOffsets(),
                        orphanage);
    impl_->write_tensor(what, "excluded_src", TensorView::of(Span<const int64_t>(plan.excluded_src)),
                        p.initExcludedSrc(), orphanage);
    impl_->write_tensor(what, "excluded_dst", TensorView::of(Span<const int64_t>(plan.excluded_dst)),
                        p.initExcludedDst(), orphanage);
    impl_->write_tensor(what, "excluded_offsets", TensorView::of(Span<const int64_t>(plan.excluded_offsets)),
                        p.initExcludedOffsets(), orphanage);
    if (!plan.times.empty()) {
      impl_->write_tensor(what, "times", TensorView::of(Span<const int64_t>(plan.times)), p.initTimes(), orphanage);
    }
  });
}

void Encoder::feature_rows_header(uint64_t request_id, DType dtype, const std::vector<int64_t>& shape,
                                  std::vector<char>& out) {
  const char* what = "feature rows header";
  if (shape.empty() || shape.size() > kMaxDims) fail(what, "rows need 1 to 16 dimensions");
  for (int64_t d : shape) {
    if (d < 0) fail(what, "negative dimension");
  }
  impl_->encode(what, out, [&](Envelope::Builder envelope, capnp::Orphanage) {
    auto header = envelope.initFeatureRowsHeader();
    header.setRequestId(request_id);
    header.setDtype(static_cast<uint32_t>(dtype));
    auto dims = header.initShape(static_cast<unsigned>(shape.size()));
    for (size_t i = 0; i < shape.size(); ++i) dims.set(static_cast<unsigned>(i), shape[i]);
  });
}

// ---------------------------------------------------------------------------------------
// Decoding

namespace {

// A Cap'n Proto reader over a received buffer, with limits derived from its size.
class WireReader {
 public:
  WireReader(Span<const char> bytes, const char* what, OwnedBuffers& owned) {
    if (bytes.empty()) fail(what, "empty message");
    if (bytes.size() % 8 != 0)
      fail(what, "message size " + std::to_string(bytes.size()) +
                     " is not a multiple of 8 bytes (truncated?)");
    size_t words = bytes.size() / 8;
    const char* data = bytes.data();
    if (reinterpret_cast<uintptr_t>(data) % alignof(capnp::word) != 0) {
      // Cap'n Proto reads words in place. Buffers from CAF (std::vector<char>, allocated by
      // operator new) are 16-aligned; only a slice at an odd offset lands here, and pays
      // one copy.
      std::shared_ptr<capnp::word[]> copy(new capnp::word[words]);
      std::memcpy(copy.get(), data, bytes.size());
      data = reinterpret_cast<const char*>(copy.get());
      owned.push_back(std::move(copy));
    }
    capnp::ReaderOptions options;
    // The default (64 MiB) would reject large feature replies. Each field is read once, so
    // a valid message never traverses more words than it has; twice that bounds the work a
    // forged message (many pointers to one large blob) can cause.
    options.traversalLimitInWords = 2 * words + 1024;
    options.nestingLimit = kNestingLimit;
    reader_.emplace(
        kj::arrayPtr(reinterpret_cast<const capnp::word*>(data), words), options);
  }

  Envelope::Reader root() { return reader_->getRoot<Envelope>(); }

 private:
  std::optional<capnp::FlatArrayMessageReader> reader_;
};

WireErrorCode error_code_from_wire(wire::ErrorCode code) {
  switch (code) {
    case wire::ErrorCode::UNKNOWN: return WireErrorCode::kUnknown;
    case wire::ErrorCode::BAD_REQUEST: return WireErrorCode::kBadRequest;
    case wire::ErrorCode::OUT_OF_RANGE: return WireErrorCode::kOutOfRange;
    case wire::ErrorCode::NOT_FOUND: return WireErrorCode::kNotFound;
    case wire::ErrorCode::INTERNAL: return WireErrorCode::kInternal;
  }
  return WireErrorCode::kUnknown;  // a code from a newer peer
}

DecodedErrorReply read_error_reply(wire::ErrorReply::Reader reply) {
  DecodedErrorReply out;
  out.request_id = reply.getRequestId();
  out.code = error_code_from_wire(reply.getCode());
  auto message = reply.getMessage();
  out.message.assign(message.begin(), message.size());
  return out;
}

MessageKind kind_of(Envelope::Reader envelope, const char* what) {
  switch (envelope.which()) {
    case Envelope::HOP_REQUEST: return MessageKind::kHopRequest;
    case Envelope::HOP_REPLY: return MessageKind::kHopReply;
    case Envelope::FEATURE_REQUEST: return MessageKind::kFeatureRequest;
    case Envelope::FEATURE_REPLY: return MessageKind::kFeatureReply;
    case Envelope::ERROR_REPLY: return MessageKind::kErrorReply;
    case Envelope::CHANNEL_OFFER: return MessageKind::kChannelOffer;
    case Envelope::MINI_BATCH: return MessageKind::kMiniBatch;
    case Envelope::SAMPLER_ACK: return MessageKind::kSamplerAck;
    case Envelope::FEATURE_ROWS_HEADER: return MessageKind::kFeatureRowsHeader;
    case Envelope::LINK_PLAN: return MessageKind::kLinkPlan;
    case Envelope::RETIRED9:  // was a benchmark-only run report: refused like an unset one
    case Envelope::UNSET: break;
  }
  fail(what, "not a protocol message (envelope tag " +
                 std::to_string(static_cast<int>(envelope.which())) + ")");
}

// Checks that `envelope` holds `expected`; an error reply becomes a RemoteError.
void expect_kind(Envelope::Reader envelope, MessageKind expected) {
  const char* what = message_kind_name(expected);
  MessageKind kind = kind_of(envelope, what);
  if (kind == expected) return;
  if (kind == MessageKind::kErrorReply) {
    DecodedErrorReply e = read_error_reply(envelope.getErrorReply());
    throw RemoteError(std::string(what) + " expected, peer answered with error (" +
                          wire_error_code_name(e.code) + "): " + e.message,
                      e.request_id, e.code);
  }
  fail(what, std::string("expected, got a ") + message_kind_name(kind));
}

// Validates a tensor and returns a view of its data: into the message for zero or one
// chunk, into a joined copy (kept in `owned`) for more. `required` tensors must be present;
// absent optional ones read as empty 1-D tensors of `dtype`.
TensorView read_tensor(const char* what, const char* field, bool present,
                       wire::Tensor::Reader tensor, OwnedBuffers& owned) {
  auto problem = [&](const std::string& p) { fail(what, std::string(field) + ": " + p); };
  if (!present) problem("missing");
  uint32_t code = tensor.getDtype();
  if (!dtype_is_valid(code)) problem("unknown dtype code " + std::to_string(code));
  TensorView view;
  view.dtype = static_cast<DType>(code);

  // Each blob is fetched once: every fetch counts against the traversal limit.
  std::vector<kj::ArrayPtr<const capnp::byte>> chunks;
  uint64_t total = 0;
  for (capnp::Data::Reader chunk : tensor.getChunks()) {
    chunks.push_back(chunk);
    total += chunk.size();
  }
  view.bytes = static_cast<size_t>(total);

  auto shape = tensor.getShape();
  if (shape.size() > kMaxDims) problem(std::to_string(shape.size()) + " dimensions");
  view.shape.reserve(shape.size());
  // Every dimension is bounded by the byte count, so the running product cannot overflow
  // before the mismatch is caught.
  uint64_t numel = 1;
  uint64_t max_numel = total / dtype_size(view.dtype);
  for (int64_t d : shape) {
    if (d < 0) problem("negative dimension " + std::to_string(d));
    if (d != 0 && numel > max_numel / static_cast<uint64_t>(d)) numel = max_numel + 1;
    else numel *= static_cast<uint64_t>(d);
    view.shape.push_back(d);
  }
  if (numel != max_numel || numel * dtype_size(view.dtype) != total) {
    std::string dims;
    for (int64_t d : view.shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    problem("shape [" + dims + "] of " + std::string(dtype_name(view.dtype)) +
            " does not match " + std::to_string(total) + " data bytes");
  }

  if (chunks.size() == 1) {
    // Blobs start on a word boundary of the (aligned) message: a valid view for any dtype.
    view.data = chunks[0].begin();
  } else if (chunks.size() > 1) {
    std::shared_ptr<capnp::word[]> joined(new capnp::word[(total + 7) / 8]);
    auto* dst = reinterpret_cast<capnp::byte*>(joined.get());
    for (auto chunk : chunks) {
      // An empty chunk's begin() may be null, which memcpy must not get even for 0 bytes
      // (found by fuzz/fuzz_codec.cpp under UBSan).
      if (chunk.size() == 0) continue;
      std::memcpy(dst, chunk.begin(), chunk.size());
      dst += chunk.size();
    }
    view.data = joined.get();
    owned.push_back(std::move(joined));
  }
  return view;
}

template <typename T>
Span<const T> read_vector(const char* what, const char* field, bool present,
                          wire::Tensor::Reader tensor, OwnedBuffers& owned) {
  TensorView view = read_tensor(what, field, present, tensor, owned);
  if (view.dtype != dtype_of<T>())
    fail(what, std::string(field) + ": dtype is " + std::string(dtype_name(view.dtype)) +
                   ", expected " + std::string(dtype_name(dtype_of<T>())));
  if (view.shape.size() != 1)
    fail(what, std::string(field) + ": expected 1 dimension, got " +
                   std::to_string(view.shape.size()));
  return view.as<T>();
}

// An optional per-element companion of `n` entries: absent or empty, or exactly n.
template <typename T>
Span<const T> read_optional(const char* what, const char* field, bool present,
                            wire::Tensor::Reader tensor, size_t n, OwnedBuffers& owned) {
  if (!present) return {};
  Span<const T> values = read_vector<T>(what, field, true, tensor, owned);
  if (!values.empty() && values.size() != n)
    fail(what, std::string(field) + " has " + std::to_string(values.size()) +
                   " entries, expected " + std::to_string(n));
  return values;
}

std::string read_text(capnp::Text::Reader text) { return std::string(text.begin(), text.size()); }

}  // namespace

MessageHeader peek_message(Span<const char> bytes) {
  const char* what = "message";
  return guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    MessageHeader header{kind_of(envelope, what), 0};
    switch (header.kind) {
      case MessageKind::kHopRequest:
        header.request_id = envelope.getHopRequest().getRequestId(); break;
      case MessageKind::kHopReply:
        header.request_id = envelope.getHopReply().getRequestId(); break;
      case MessageKind::kFeatureRequest:
        header.request_id = envelope.getFeatureRequest().getRequestId(); break;
      case MessageKind::kFeatureReply:
        header.request_id = envelope.getFeatureReply().getRequestId(); break;
      case MessageKind::kErrorReply:
        header.request_id = envelope.getErrorReply().getRequestId(); break;
      case MessageKind::kFeatureRowsHeader:
        header.request_id = envelope.getFeatureRowsHeader().getRequestId(); break;
      case MessageKind::kChannelOffer:
      case MessageKind::kMiniBatch:
      case MessageKind::kSamplerAck:
      case MessageKind::kLinkPlan:
        break;
    }
    return header;
  });
}

DecodedHopRequest decode_hop_request(Span<const char> bytes) {
  const char* what = "hop request";
  return guarded(what, [&] {
    DecodedHopRequest out;
    WireReader reader(bytes, what, out.owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kHopRequest);
    auto request = envelope.getHopRequest();
    out.request_id = request.getRequestId();
    out.config_fingerprint = request.getConfigFingerprint();
    auto key = request.getKey();
    out.key = SampleKey{key.getSeed(), key.getEpoch(), key.getBatch()};
    out.hop = request.getHop();
    if (out.hop < 0) fail(what, "negative hop " + std::to_string(out.hop));
    out.input.nodes =
        read_vector<int64_t>(what, "nodes", request.hasNodes(), request.getNodes(), out.owned);
    size_t n = out.input.nodes.size();
    out.input.trees = read_optional<int64_t>(what, "trees", request.hasTrees(),
                                             request.getTrees(), n, out.owned);
    out.input.times = read_optional<int64_t>(what, "times", request.hasTimes(),
                                             request.getTimes(), n, out.owned);
    return out;
  });
}

DecodedHopReply decode_hop_reply(Span<const char> bytes, int64_t expected_nodes) {
  const char* what = "hop reply";
  return guarded(what, [&] {
    DecodedHopReply out;
    WireReader reader(bytes, what, out.owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kHopReply);
    auto reply = envelope.getHopReply();
    out.request_id = reply.getRequestId();
    out.offsets = read_vector<int64_t>(what, "offsets", reply.hasOffsets(),
                                       reply.getOffsets(), out.owned);
    out.neighbors = read_vector<int64_t>(what, "neighbors", reply.hasNeighbors(),
                                         reply.getNeighbors(), out.owned);
    size_t edges = out.neighbors.size();
    out.edge_ids = read_vector<int64_t>(what, "edge_ids", reply.hasEdgeIds(),
                                        reply.getEdgeIds(), out.owned);
    if (out.edge_ids.size() != edges)
      fail(what, "edge_ids has " + std::to_string(out.edge_ids.size()) + " entries for " +
                     std::to_string(edges) + " neighbours");
    out.edge_types = read_optional<int32_t>(what, "edge_types", reply.hasEdgeTypes(),
                                            reply.getEdgeTypes(), edges, out.owned);

    const Span<const int64_t>& offsets = out.offsets;
    if (offsets.empty()) fail(what, "offsets is empty (needs one entry per node plus one)");
    if (expected_nodes >= 0 && offsets.size() != static_cast<size_t>(expected_nodes) + 1)
      fail(what, "offsets covers " + std::to_string(offsets.size() - 1) + " nodes, expected " +
                     std::to_string(expected_nodes));
    if (offsets[0] != 0) fail(what, "offsets[0] is " + std::to_string(offsets[0]) + ", not 0");
    for (size_t i = 1; i < offsets.size(); ++i) {
      if (offsets[i] < offsets[i - 1])
        fail(what, "offsets decrease at " + std::to_string(i) + " (" +
                       std::to_string(offsets[i - 1]) + " then " + std::to_string(offsets[i]) +
                       ")");
    }
    if (offsets[offsets.size() - 1] != static_cast<int64_t>(edges))
      fail(what, "offsets end at " + std::to_string(offsets[offsets.size() - 1]) + " but " +
                     std::to_string(edges) + " neighbours were sent");
    return out;
  });
}

DecodedFeatureRequest decode_feature_request(Span<const char> bytes) {
  const char* what = "feature request";
  return guarded(what, [&] {
    DecodedFeatureRequest out;
    WireReader reader(bytes, what, out.owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kFeatureRequest);
    auto request = envelope.getFeatureRequest();
    out.request_id = request.getRequestId();
    out.group = read_text(request.getGroup());
    out.name = read_text(request.getName());
    if (out.group.empty() || out.name.empty()) fail(what, "group and name must not be empty");
    out.ids = read_vector<int64_t>(what, "ids", request.hasIds(), request.getIds(), out.owned);
    return out;
  });
}

DecodedFeatureReply decode_feature_reply(Span<const char> bytes, int64_t expected_rows) {
  const char* what = "feature reply";
  return guarded(what, [&] {
    DecodedFeatureReply out;
    WireReader reader(bytes, what, out.owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kFeatureReply);
    auto reply = envelope.getFeatureReply();
    out.request_id = reply.getRequestId();
    out.values = read_tensor(what, "values", reply.hasValues(), reply.getValues(), out.owned);
    if (out.values.shape.empty()) fail(what, "values: expected at least 1 dimension (rows)");
    if (expected_rows >= 0 && out.values.rows() != expected_rows)
      fail(what, "values has " + std::to_string(out.values.rows()) + " rows, expected " +
                     std::to_string(expected_rows));
    return out;
  });
}

DecodedChannelOffer decode_channel_offer(Span<const char> bytes) {
  const char* what = "channel offer";
  return guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kChannelOffer);
    auto offer = envelope.getChannelOffer();
    DecodedChannelOffer out;
    out.host = read_text(offer.getHost());
    out.port = offer.getPort();
    out.token = offer.getToken();
    out.client = offer.getClient();
    if (out.host.empty()) fail(what, "no host");
    if (out.port == 0) fail(what, "port 0");
    return out;
  });
}

namespace {

// Checks that every entry of `indices` is a valid index into `n` nodes.
void check_local(const char* what, const char* field, Span<const int64_t> indices, int64_t n) {
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= n)
      fail(what, std::string(field) + "[" + std::to_string(i) + "] = " + std::to_string(indices[i]) +
                     " is not a node of the batch (" + std::to_string(n) + " nodes)");
  }
}

// The sum of per-hop counts, which must all be non-negative.
int64_t checked_sum(const char* what, const char* field, Span<const int64_t> counts) {
  int64_t sum = 0;
  for (int64_t c : counts) {
    if (c < 0 || c > (int64_t{1} << 48)) fail(what, std::string(field) + ": count " + std::to_string(c));
    sum += c;
  }
  return sum;
}

}  // namespace

void decode_mini_batch(Span<const char> bytes, MiniBatch& batch, SampleKey* key) {
  const char* what = "mini-batch";
  guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kMiniBatch);
    auto m = envelope.getMiniBatch();
    auto vec = [&](const char* field, bool present, wire::Tensor::Reader tensor) {
      return read_vector<int64_t>(what, field, present, tensor, owned);
    };
    Span<const int64_t> nodes = vec("node_ids", m.hasNodeIds(), m.getNodeIds());
    Span<const int64_t> row = vec("row", m.hasRow(), m.getRow());
    Span<const int64_t> col = vec("col", m.hasCol(), m.getCol());
    Span<const int64_t> edge_ids = vec("edge_ids", m.hasEdgeIds(), m.getEdgeIds());
    const size_t edges = row.size();
    if (col.size() != edges || edge_ids.size() != edges)
      fail(what, "row, col and edge_ids have " + std::to_string(edges) + ", " + std::to_string(col.size()) +
                     " and " + std::to_string(edge_ids.size()) + " entries");
    Span<const int32_t> edge_types =
        read_optional<int32_t>(what, "edge_types", m.hasEdgeTypes(), m.getEdgeTypes(), edges, owned);
    Span<const int64_t> per_hop_nodes = vec("num_sampled_nodes", m.hasNumSampledNodes(), m.getNumSampledNodes());
    Span<const int64_t> per_hop_edges = vec("num_sampled_edges", m.hasNumSampledEdges(), m.getNumSampledEdges());
    if (per_hop_nodes.size() != per_hop_edges.size())
      fail(what, "num_sampled_nodes and num_sampled_edges cover different hop counts");
    const auto n = static_cast<int64_t>(nodes.size());
    if (checked_sum(what, "num_sampled_nodes", per_hop_nodes) != n)
      fail(what, "num_sampled_nodes does not add up to the " + std::to_string(n) + " nodes");
    if (checked_sum(what, "num_sampled_edges", per_hop_edges) != static_cast<int64_t>(edges))
      fail(what, "num_sampled_edges does not add up to the " + std::to_string(edges) + " edges");
    check_local(what, "row", row, n);
    check_local(what, "col", col, n);
    Span<const int64_t> trees = read_optional<int64_t>(what, "batch", m.hasBatch(), m.getBatch(), nodes.size(), owned);
    Span<const int64_t> input_ids = vec("input_ids", m.hasInputIds(), m.getInputIds());
    Span<const int64_t> input_local = vec("input_local", m.hasInputLocal(), m.getInputLocal());
    if (input_local.size() != input_ids.size())
      fail(what, "input_local has " + std::to_string(input_local.size()) + " entries for " +
                     std::to_string(input_ids.size()) + " seeds");
    check_local(what, "input_local", input_local, n);
    const int64_t batch_size = m.getBatchSize();
    if (batch_size < 0 || batch_size > n)
      fail(what, "batch size " + std::to_string(batch_size) + " for " + std::to_string(n) + " nodes");
    int64_t feature_dim = 0;
    Span<const float> x;
    if (m.hasX()) {
      TensorView view = read_tensor(what, "x", true, m.getX(), owned);
      if (view.shape.size() != 2 || view.shape[0] != n)
        fail(what, "x must be [" + std::to_string(n) + ", feature_dim]");
      x = view.as<float>("mini-batch: x");
      feature_dim = view.shape[1];
    }
    Span<const int64_t> y = read_optional<int64_t>(what, "y", m.hasY(), m.getY(), nodes.size(), owned);

    batch.node_ids.assign(nodes.begin(), nodes.end());
    batch.row.assign(row.begin(), row.end());
    batch.col.assign(col.begin(), col.end());
    batch.edge_ids.assign(edge_ids.begin(), edge_ids.end());
    batch.edge_types.assign(edge_types.begin(), edge_types.end());
    batch.num_sampled_nodes.assign(per_hop_nodes.begin(), per_hop_nodes.end());
    batch.num_sampled_edges.assign(per_hop_edges.begin(), per_hop_edges.end());
    batch.batch.assign(trees.begin(), trees.end());
    batch.input_ids.assign(input_ids.begin(), input_ids.end());
    batch.input_local.assign(input_local.begin(), input_local.end());
    batch.batch_size = batch_size;
    batch.feature_dim = feature_dim;
    batch.x.assign(x.begin(), x.end());
    batch.y.assign(y.begin(), y.end());
    if (key != nullptr) {
      auto k = m.getKey();
      *key = SampleKey{k.getSeed(), k.getEpoch(), k.getBatch()};
    }
  });
}

namespace {

// Offsets of `batches` batches into an array of `size` entries: from 0 to size, never
// decreasing.
void check_offsets(const char* what, const char* field, Span<const int64_t> offsets, size_t batches, size_t size) {
  if (offsets.size() != batches + 1) {
    fail(what, std::string(field) + " has " + std::to_string(offsets.size()) + " entries for " +
                   std::to_string(batches) + " batches");
  }
  if (offsets[0] != 0 || offsets[batches] != static_cast<int64_t>(size)) {
    fail(what, std::string(field) + " must run from 0 to " + std::to_string(size));
  }
  for (size_t b = 0; b < batches; ++b) {
    if (offsets[b + 1] < offsets[b]) fail(what, std::string(field) + " decrease at batch " + std::to_string(b));
  }
}

}  // namespace

EpochPlan decode_link_plan(Span<const char> bytes) {
  const char* what = "link plan";
  return guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kLinkPlan);
    auto p = envelope.getLinkPlan();
    EpochPlan plan;
    plan.job_seed = p.getSeed();
    plan.epoch = p.getEpoch();
    const auto copy = [&](const char* field, bool present, wire::Tensor::Reader tensor, std::vector<int64_t>& to) {
      Span<const int64_t> values = read_vector<int64_t>(what, field, present, tensor, owned);
      to.assign(values.begin(), values.end());
    };
    copy("seeds", p.hasSeeds(), p.getSeeds(), plan.order);
    copy("offsets", p.hasOffsets(), p.getOffsets(), plan.offsets);
    copy("excluded_src", p.hasExcludedSrc(), p.getExcludedSrc(), plan.excluded_src);
    copy("excluded_dst", p.hasExcludedDst(), p.getExcludedDst(), plan.excluded_dst);
    copy("excluded_offsets", p.hasExcludedOffsets(), p.getExcludedOffsets(), plan.excluded_offsets);
    Span<const int64_t> times =
        read_optional<int64_t>(what, "times", p.hasTimes(), p.getTimes(), plan.order.size(), owned);
    plan.times.assign(times.begin(), times.end());
    if (plan.offsets.empty()) fail(what, "no batch offsets");
    const size_t batches = plan.offsets.size() - 1;
    check_offsets(what, "offsets", Span<const int64_t>(plan.offsets), batches, plan.order.size());
    if (plan.excluded_src.size() != plan.excluded_dst.size()) {
      fail(what, std::to_string(plan.excluded_src.size()) + " excluded sources for " +
                     std::to_string(plan.excluded_dst.size()) + " destinations");
    }
    if (plan.excludes_edges()) {
      check_offsets(what, "excluded_offsets", Span<const int64_t>(plan.excluded_offsets), batches,
                    plan.excluded_src.size());
    } else if (!plan.excluded_src.empty()) {
      fail(what, "excluded edges without their offsets");
    }
    return plan;
  });
}

int64_t decode_sampler_ack(Span<const char> bytes) {
  const char* what = "sampler ack";
  return guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kSamplerAck);
    int64_t n = envelope.getSamplerAck().getNumBatches();
    if (n < 0) fail(what, "negative batch count " + std::to_string(n));
    return n;
  });
}

DecodedFeatureRowsHeader decode_feature_rows_header(Span<const char> bytes, int64_t expected_rows) {
  const char* what = "feature rows header";
  return guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    expect_kind(envelope, MessageKind::kFeatureRowsHeader);
    auto header = envelope.getFeatureRowsHeader();
    DecodedFeatureRowsHeader out;
    out.request_id = header.getRequestId();
    const uint32_t code = header.getDtype();
    if (!dtype_is_valid(code)) fail(what, "unknown dtype code " + std::to_string(code));
    out.dtype = static_cast<DType>(code);
    auto shape = header.getShape();
    if (shape.size() == 0 || shape.size() > kMaxDims) fail(what, "rows need 1 to 16 dimensions");
    // Bounded before multiplying, so a forged shape cannot overflow the byte count.
    constexpr uint64_t kMaxBytes = uint64_t{1} << 30;
    uint64_t bytes = dtype_size(out.dtype);
    for (int64_t d : shape) {
      if (d < 0) fail(what, "negative dimension " + std::to_string(d));
      if (d != 0 && bytes > kMaxBytes / static_cast<uint64_t>(d)) fail(what, "rows over 1 GiB");
      bytes *= static_cast<uint64_t>(d);
      out.shape.push_back(d);
    }
    out.bytes = bytes;
    if (expected_rows >= 0 && out.rows() != expected_rows)
      fail(what, std::to_string(out.rows()) + " rows, expected " + std::to_string(expected_rows));
    return out;
  });
}

DecodedErrorReply decode_error_reply(Span<const char> bytes) {
  const char* what = "error reply";
  return guarded(what, [&] {
    OwnedBuffers owned;
    WireReader reader(bytes, what, owned);
    Envelope::Reader envelope = reader.root();
    if (kind_of(envelope, what) != MessageKind::kErrorReply)
      fail(what, std::string("expected, got a ") + message_kind_name(kind_of(envelope, what)));
    return read_error_reply(envelope.getErrorReply());
  });
}

}  // namespace partita
