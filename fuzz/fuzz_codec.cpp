// The codec's decoders (messages/codec.h): every message a partition, sampler or trainer
// reads from a peer. The input's first byte picks the decoder, the rest is the message.
// A decoded message must keep the decoder's promises (offsets ascending and ending at the
// neighbour count, local indices within the batch, byte counts matching shapes), and every
// element is read, so a view past the input shows up under ASan.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "messages/codec.h"

namespace {

using namespace partita;

// A broken promise is a finding like a crash.
void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_codec: decoded message breaks its contract: %s\n", what);
    std::abort();
  }
}

// Sums wrap (unsigned): the values are peer data, any of them.
template <class T>
uint64_t sum(Span<const T> values) {
  uint64_t s = 0;
  for (T v : values) s += static_cast<uint64_t>(v);
  return s;
}
template <class T>
uint64_t sum(const std::vector<T>& values) {
  return sum(Span<const T>(values.data(), values.size()));
}

uint64_t decode(MessageKind kind, Span<const char> bytes) {
  switch (kind) {
    case MessageKind::kHopRequest: {
      auto r = decode_hop_request(bytes);
      expect(r.input.trees.empty() || r.input.trees.size() == r.input.nodes.size(), "hop request trees");
      expect(r.input.times.empty() || r.input.times.size() == r.input.nodes.size(), "hop request times");
      return sum(r.input.nodes) + sum(r.input.trees) + sum(r.input.times);
    }
    case MessageKind::kHopReply: {
      auto r = decode_hop_reply(bytes);
      expect(!r.offsets.empty() && r.offsets[0] == 0, "hop reply offsets start at 0");
      for (size_t i = 1; i < r.offsets.size(); ++i) expect(r.offsets[i - 1] <= r.offsets[i], "offsets ascend");
      expect(r.offsets[r.offsets.size() - 1] == static_cast<int64_t>(r.neighbors.size()), "offsets end");
      expect(r.edge_ids.size() == r.neighbors.size(), "edge ids");
      expect(r.edge_types.empty() || r.edge_types.size() == r.neighbors.size(), "edge types");
      return sum(r.neighbors) + sum(r.edge_ids) + sum(r.edge_types);
    }
    case MessageKind::kFeatureRequest: {
      auto r = decode_feature_request(bytes);
      return sum(r.ids) + r.group.size() + r.name.size();
    }
    case MessageKind::kFeatureReply: {
      auto r = decode_feature_reply(bytes);
      size_t numel = 1;
      for (int64_t d : r.values.shape) numel *= static_cast<size_t>(d);
      expect(numel * dtype_size(r.values.dtype) == r.values.bytes, "feature reply bytes match the shape");
      const auto* p = static_cast<const unsigned char*>(r.values.data);
      uint64_t s = 0;
      for (size_t i = 0; i < r.values.bytes; ++i) s += p[i];
      return s;
    }
    case MessageKind::kErrorReply:
      return decode_error_reply(bytes).message.size();
    case MessageKind::kChannelOffer: {
      auto r = decode_channel_offer(bytes);
      expect(!r.host.empty() && r.port != 0, "channel offer host and port");
      return r.token;
    }
    case MessageKind::kMiniBatch: {
      MiniBatch b;
      decode_mini_batch(bytes, b);
      const auto n = static_cast<int64_t>(b.node_ids.size());
      expect(b.row.size() == b.col.size(), "mini-batch row/col");
      expect(b.x.size() == static_cast<size_t>(n * b.feature_dim), "mini-batch x");
      for (size_t i = 0; i < b.row.size(); ++i) {
        expect(b.row[i] >= 0 && b.row[i] < n && b.col[i] >= 0 && b.col[i] < n, "mini-batch edge within nodes");
      }
      for (int64_t v : b.input_local) expect(v >= 0 && v < n, "mini-batch input within nodes");
      uint64_t s = 0;
      for (float v : b.x) s += v != 0;
      return s + sum(b.y);
    }
    case MessageKind::kSamplerAck:
      return static_cast<uint64_t>(decode_sampler_ack(bytes));
    case MessageKind::kFeatureRowsHeader: {
      DecodedFeatureRowsHeader h = decode_feature_rows_header(bytes);
      uint64_t numel = 1;
      for (int64_t d : h.shape) numel *= static_cast<uint64_t>(d);
      expect(numel * dtype_size(h.dtype) == h.bytes, "rows header bytes match the shape");
      expect(h.bytes <= uint64_t{1} << 30, "rows header at most 1 GiB");
      return h.bytes;
    }
    case MessageKind::kLinkPlan: {
      EpochPlan plan = decode_link_plan(bytes);
      expect(plan.num_batches() >= 0 && plan.offsets[0] == 0, "link plan offsets start at 0");
      expect(plan.times.empty() || plan.times.size() == plan.order.size(), "link plan times");
      expect(plan.excluded_src.size() == plan.excluded_dst.size(), "link plan excluded pairs");
      expect(!plan.excludes_edges() || plan.excluded_offsets.size() == plan.offsets.size(),
             "link plan excluded offsets per batch");
      // Every batch's views, as the sampler actor takes them: a view past the vectors is
      // an overrun ASan sees.
      uint64_t s = plan.job_seed + plan.epoch;
      for (int64_t b = 0; b < plan.num_batches(); ++b) {
        s += sum(plan.batch(b)) + sum(plan.times_of(b));
        if (plan.excludes_edges()) s += sum(plan.excluded_src_of(b)) + sum(plan.excluded_dst_of(b));
      }
      return s;
    }
  }
  return 0;
}

constexpr MessageKind kKinds[] = {
    MessageKind::kHopRequest,  MessageKind::kHopReply,   MessageKind::kFeatureRequest,
    MessageKind::kFeatureReply, MessageKind::kErrorReply, MessageKind::kChannelOffer,
    MessageKind::kMiniBatch,   MessageKind::kSamplerAck, MessageKind::kFeatureRowsHeader,
    MessageKind::kLinkPlan};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const MessageKind kind = kKinds[data[0] % (sizeof(kKinds) / sizeof(kKinds[0]))];
  // A copy of exactly the message, so that reading past it is an overrun ASan sees.
  std::vector<char> bytes(reinterpret_cast<const char*>(data) + 1, reinterpret_cast<const char*>(data) + size);
  try {
    volatile uint64_t sink = decode(kind, Span<const char>(bytes.data(), bytes.size()));
    (void)sink;
  } catch (const Error&) {
  }
  try {
    volatile uint64_t id = peek_message(Span<const char>(bytes.data(), bytes.size())).request_id;
    (void)id;
  } catch (const Error&) {
  }
  return 0;
}
