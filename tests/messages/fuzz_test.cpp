// Truncated and corrupted messages: decoding either succeeds with consistent contents or
// throws partita::Error, and never crashes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "messages/codec.h"

namespace partita {
namespace {

// Decodes `bytes` as `kind`; on success checks the invariants the decoder promises and
// reads every element (so a view past the buffer would show up, under ASan at least).
// Returns whether it decoded.
bool decode_and_check(MessageKind kind, Span<const char> bytes) {
  try {
    uint64_t sum = 0;  // wraps: the values are arbitrary
    switch (kind) {
      case MessageKind::kHopRequest: {
        auto r = decode_hop_request(bytes);
        EXPECT_TRUE(r.input.trees.empty() || r.input.trees.size() == r.input.nodes.size());
        EXPECT_TRUE(r.input.times.empty() || r.input.times.size() == r.input.nodes.size());
        for (int64_t v : r.input.nodes) sum += v;
        for (int64_t v : r.input.trees) sum += v;
        for (int64_t v : r.input.times) sum += v;
        break;
      }
      case MessageKind::kHopReply: {
        auto r = decode_hop_reply(bytes);
        EXPECT_FALSE(r.offsets.empty());
        EXPECT_EQ(r.offsets[0], 0);
        for (size_t i = 1; i < r.offsets.size(); ++i) EXPECT_LE(r.offsets[i - 1], r.offsets[i]);
        EXPECT_EQ(r.offsets[r.offsets.size() - 1], static_cast<int64_t>(r.neighbors.size()));
        EXPECT_EQ(r.edge_ids.size(), r.neighbors.size());
        EXPECT_TRUE(r.edge_types.empty() || r.edge_types.size() == r.neighbors.size());
        for (int64_t v : r.neighbors) sum += v;
        for (int64_t v : r.edge_ids) sum += v;
        for (int32_t v : r.edge_types) sum += v;
        break;
      }
      case MessageKind::kFeatureRequest: {
        auto r = decode_feature_request(bytes);
        for (int64_t v : r.ids) sum += v;
        sum += static_cast<int64_t>(r.group.size() + r.name.size());
        break;
      }
      case MessageKind::kFeatureReply: {
        auto r = decode_feature_reply(bytes);
        size_t numel = 1;
        for (int64_t d : r.values.shape) numel *= static_cast<size_t>(d);
        EXPECT_EQ(numel * dtype_size(r.values.dtype), r.values.bytes);
        auto* p = static_cast<const unsigned char*>(r.values.data);
        for (size_t i = 0; i < r.values.bytes; ++i) sum += p[i];
        break;
      }
      case MessageKind::kErrorReply: {
        auto r = decode_error_reply(bytes);
        sum += static_cast<int64_t>(r.message.size());
        break;
      }
      case MessageKind::kChannelOffer: {
        auto r = decode_channel_offer(bytes);
        EXPECT_FALSE(r.host.empty());
        EXPECT_NE(r.port, 0);
        sum += static_cast<int64_t>(r.token);
        break;
      }
      case MessageKind::kMiniBatch: {
        MiniBatch b;
        decode_mini_batch(bytes, b);
        const auto n = static_cast<int64_t>(b.node_ids.size());
        EXPECT_EQ(b.row.size(), b.col.size());
        EXPECT_EQ(b.x.size(), static_cast<size_t>(n * b.feature_dim));
        for (size_t i = 0; i < b.row.size(); ++i) {
          EXPECT_TRUE(b.row[i] >= 0 && b.row[i] < n && b.col[i] >= 0 && b.col[i] < n);
        }
        for (int64_t v : b.input_local) EXPECT_TRUE(v >= 0 && v < n);
        // Their bits: a flipped float may be NaN or beyond int64_t, whose conversion is
        // undefined (clang's UBSan reports it, float-cast-overflow).
        for (float v : b.x) {
          uint32_t bits;
          std::memcpy(&bits, &v, sizeof bits);
          sum += bits;
        }
        break;
      }
      case MessageKind::kSamplerAck:
        sum += decode_sampler_ack(bytes);
        break;
      case MessageKind::kFeatureRowsHeader: {
        DecodedFeatureRowsHeader h = decode_feature_rows_header(bytes);
        uint64_t numel = 1;
        for (int64_t d : h.shape) numel *= static_cast<uint64_t>(d);
        EXPECT_EQ(numel * dtype_size(h.dtype), h.bytes);
        EXPECT_LE(h.bytes, uint64_t{1} << 30);
        sum += static_cast<int64_t>(h.bytes);
        break;
      }
      case MessageKind::kLinkPlan: {
        const EpochPlan plan = decode_link_plan(bytes);
        EXPECT_EQ(plan.offsets.back(), static_cast<int64_t>(plan.order.size()));
        EXPECT_EQ(plan.excluded_src.size(), plan.excluded_dst.size());
        for (int64_t b = 0; b < plan.num_batches(); ++b) {
          for (int64_t v : plan.batch(b)) sum += v;
          if (plan.excludes_edges()) {
            for (int64_t v : plan.excluded_src_of(b)) sum += v;
            for (int64_t v : plan.excluded_dst_of(b)) sum += v;
          }
        }
        break;
      }
    }
    volatile uint64_t sink = sum;  // the reads are the point: keep them
    (void)sink;
    return true;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()), "");
    return false;
  }
}

struct Sample {
  MessageKind kind;
  std::vector<char> bytes;
};

std::vector<Sample> samples() {
  Encoder encoder(/*max_chunk_bytes=*/64);  // small chunks: split tensors get fuzzed too
  std::vector<Sample> out;
  auto add = [&](MessageKind kind, const std::function<void(std::vector<char>&)>& encode) {
    out.push_back({kind, {}});
    encode(out.back().bytes);
  };
  std::vector<int64_t> nodes{3, 1, 4, 1, 5, 9, 2, 6}, trees{0, 0, 1, 1, 2, 2, 3, 3};
  add(MessageKind::kHopRequest, [&](auto& b) {
    encoder.hop_request(1, {1, 2, 3}, 2, HopInput{nodes, trees, nodes}, 5, b);
  });
  HopOutput hop;
  hop.offsets = {0, 3, 3, 5};
  hop.neighbors = {7, 8, 9, 10, 11};
  hop.edge_ids = {1, 2, 3, 4, 5};
  hop.edge_types = {0, 1, 0, 1, 0};
  add(MessageKind::kHopReply, [&](auto& b) { encoder.hop_reply(2, hop, b); });
  std::vector<int64_t> long_ids(40, 7);  // 320 bytes: 5 chunks
  add(MessageKind::kFeatureRequest,
      [&](auto& b) { encoder.feature_request(3, "node", "x", long_ids, b); });
  std::vector<float> values(6 * 8, 0.25f);
  add(MessageKind::kFeatureReply, [&](auto& b) {
    encoder.feature_reply(4, TensorView(DType::kFloat32, {6, 8}, values.data(), 192), b);
  });
  add(MessageKind::kErrorReply, [&](auto& b) {
    encoder.error_reply(5, WireErrorCode::kNotFound, "no attribute node/y", b);
  });
  add(MessageKind::kFeatureReply, [&](auto& b) {
    // Head, values and padding written separately, as a feature channel sends them.
    size_t padding = encoder.feature_reply_head(6, DType::kFloat32, {3, 5}, b);
    const char* v = reinterpret_cast<const char*>(values.data());
    b.insert(b.end(), v, v + 60);
    b.insert(b.end(), padding, 0);
  });
  add(MessageKind::kChannelOffer, [&](auto& b) { encoder.channel_offer("127.0.0.1", 5000, 77, 2, b); });
  MiniBatch batch;
  batch.node_ids = {5, 6, 7};
  batch.row = {1, 2, 2};
  batch.col = {0, 0, 1};
  batch.edge_ids = {3, 4, 5};
  batch.num_sampled_nodes = {1, 2};
  batch.num_sampled_edges = {0, 3};
  batch.input_ids = {5};
  batch.input_local = {0};
  batch.batch_size = 1;
  batch.feature_dim = 2;
  batch.x = {1, 2, 3, 4, 5, 6};
  batch.y = {0, 1, 1};
  add(MessageKind::kMiniBatch, [&](auto& b) { encoder.mini_batch({1, 2, 3}, batch, b); });
  add(MessageKind::kSamplerAck, [&](auto& b) { encoder.sampler_ack(3, b); });
  EpochPlan plan;
  plan.job_seed = 5;
  plan.epoch = 2;
  plan.order = {3, 1, 4, 1, 5};
  plan.offsets = {0, 2, 5};
  plan.excluded_src = {3, 4};
  plan.excluded_dst = {1, 1};
  plan.excluded_offsets = {0, 1, 2};
  add(MessageKind::kLinkPlan, [&](auto& b) { encoder.link_plan(plan, b); });
  add(MessageKind::kFeatureRowsHeader,
      [&](auto& b) { encoder.feature_rows_header(8, DType::kFloat32, {1000, 128}, b); });
  return out;
}

TEST(Fuzz, ValidSamplesDecode) {
  for (const auto& s : samples()) EXPECT_TRUE(decode_and_check(s.kind, s.bytes));
}

TEST(Fuzz, EveryTruncationFailsCleanly) {
  for (const auto& s : samples()) {
    for (size_t len = 0; len < s.bytes.size(); ++len) {
      // A copy of exactly `len` bytes, so reading past it is a real overrun.
      std::vector<char> cut(s.bytes.begin(), s.bytes.begin() + static_cast<long>(len));
      EXPECT_FALSE(decode_and_check(s.kind, cut))
          << message_kind_name(s.kind) << " truncated to " << len << " bytes decoded";
    }
  }
}

TEST(Fuzz, BitFlipsNeverCrash) {
  std::mt19937_64 rng(12345);
  size_t decoded = 0, rejected = 0;
  for (const auto& s : samples()) {
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<char> bad = s.bytes;
      int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f)
        bad[rng() % bad.size()] ^= static_cast<char>(1u << (rng() % 8));
      (decode_and_check(s.kind, bad) ? decoded : rejected)++;
      // Other decoders and peek must cope with the same bytes.
      try {
        peek_message(bad);
      } catch (const Error&) {
      }
    }
  }
  // Both outcomes occur: flips in data survive, flips in pointers and sizes do not.
  EXPECT_GT(decoded, 0u);
  EXPECT_GT(rejected, 0u);
}

TEST(Fuzz, RandomBytesFailCleanly) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<char> junk(8 * (1 + rng() % 32));
    for (auto& c : junk) c = static_cast<char>(rng());
    for (MessageKind kind : {MessageKind::kHopRequest, MessageKind::kHopReply,
                             MessageKind::kFeatureRequest, MessageKind::kFeatureReply,
                             MessageKind::kErrorReply, MessageKind::kChannelOffer,
                             MessageKind::kMiniBatch, MessageKind::kSamplerAck,
                             MessageKind::kFeatureRowsHeader})
      decode_and_check(kind, junk);
  }
}

}  // namespace
}  // namespace partita
