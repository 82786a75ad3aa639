#include "messages/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "messages/sampling.capnp.h"

namespace partita {
namespace {

template <typename T>
std::vector<T> to_vector(Span<const T> s) {
  return std::vector<T>(s.begin(), s.end());
}

template <typename T>
std::vector<T> iota_vector(size_t n, T start) {
  std::vector<T> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

bool points_into(const void* p, const std::vector<char>& buffer) {
  auto* c = static_cast<const char*>(p);
  return c >= buffer.data() && c < buffer.data() + buffer.size();
}

// Runs `body` and returns the Error message it throws ("" if none).
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

HopOutput sample_output() {
  HopOutput out;
  out.offsets = {0, 2, 2, 5};
  out.neighbors = {10, 11, 20, 21, 22};
  out.edge_ids = {100, 101, 200, 201, 202};
  return out;
}

TEST(Codec, LinkPlanRoundTripAndBrokenOffsetsAreNamed) {
  EpochPlan plan;
  plan.job_seed = 7;
  plan.epoch = 3;
  plan.order = {4, 5, 6, 1, 2};
  plan.offsets = {0, 3, 3, 5};  // an empty batch in the middle
  plan.excluded_src = {4, 1};
  plan.excluded_dst = {5, 2};
  plan.excluded_offsets = {0, 1, 1, 2};
  Encoder encoder;
  std::vector<char> bytes;
  encoder.link_plan(plan, bytes);
  EXPECT_EQ(peek_message(Span<const char>(bytes)).kind, MessageKind::kLinkPlan);
  const EpochPlan back = decode_link_plan(Span<const char>(bytes));
  EXPECT_EQ(back.job_seed, 7u);
  EXPECT_EQ(back.epoch, 3u);
  EXPECT_EQ(back.order, plan.order);
  EXPECT_EQ(back.offsets, plan.offsets);
  EXPECT_EQ(back.excluded_src, plan.excluded_src);
  EXPECT_EQ(back.excluded_dst, plan.excluded_dst);
  EXPECT_EQ(back.excluded_offsets, plan.excluded_offsets);
  // Without exclusions.
  EpochPlan plain = plan;
  plain.excluded_src.clear();
  plain.excluded_dst.clear();
  plain.excluded_offsets.clear();
  encoder.link_plan(plain, bytes);
  EXPECT_FALSE(decode_link_plan(Span<const char>(bytes)).excludes_edges());

  // Refused by the encoder, or else by the decoder (the offsets, which only it checks).
  const auto refused = [&](const EpochPlan& p, const std::string& why) {
    std::vector<char> raw;
    try {
      encoder.link_plan(p, raw);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      return;
    }
    try {
      decode_link_plan(Span<const char>(raw));
      ADD_FAILURE() << "accepted: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  EpochPlan p = plan;
  p.offsets = {0, 4, 3, 5};
  refused(p, "offsets decrease at batch 1");
  p = plan;
  p.offsets = {0, 3, 3, 6};
  refused(p, "offsets must run from 0 to 5");
  p = plan;
  p.excluded_dst.pop_back();
  refused(p, "2 excluded sources for 1 destinations");
  p = plan;
  p.excluded_offsets = {0, 2};
  refused(p, "excluded edges given for 1 batches of 3");
}

TEST(Codec, HopRequestRoundTrip) {
  std::vector<int64_t> nodes{5, 3, 9};
  std::vector<int64_t> trees{0, 0, 1};
  std::vector<int64_t> times{100, 200, 300};
  HopInput input{nodes, trees, times};
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_request(42, SampleKey{7, 2, 11}, 1, input, 99, bytes);

  DecodedHopRequest r = decode_hop_request(bytes);
  EXPECT_EQ(r.request_id, 42u);
  EXPECT_EQ(r.key.seed, 7u);
  EXPECT_EQ(r.key.epoch, 2u);
  EXPECT_EQ(r.key.batch, 11u);
  EXPECT_EQ(r.hop, 1);
  EXPECT_EQ(to_vector(r.input.nodes), nodes);
  EXPECT_EQ(to_vector(r.input.trees), trees);
  EXPECT_EQ(to_vector(r.input.times), times);
  EXPECT_EQ(peek_message(bytes).kind, MessageKind::kHopRequest);
  EXPECT_EQ(peek_message(bytes).request_id, 42u);
}

TEST(Codec, EmptyHopRequestRoundTrip) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_request(1, SampleKey{}, 0, HopInput{}, 0, bytes);
  DecodedHopRequest r = decode_hop_request(bytes);
  EXPECT_TRUE(r.input.nodes.empty());
  EXPECT_TRUE(r.input.trees.empty());
  EXPECT_TRUE(r.input.times.empty());
}

TEST(Codec, HopReplyRoundTrip) {
  HopOutput out = sample_output();
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_reply(9, out, bytes);
  DecodedHopReply r = decode_hop_reply(bytes, 3);
  EXPECT_EQ(r.request_id, 9u);
  EXPECT_EQ(r.num_nodes(), 3u);
  EXPECT_EQ(to_vector(r.offsets), out.offsets);
  EXPECT_EQ(to_vector(r.neighbors), out.neighbors);
  EXPECT_EQ(to_vector(r.edge_ids), out.edge_ids);
  EXPECT_TRUE(r.edge_types.empty());
}

TEST(Codec, HeteroHopReplyCarriesEdgeTypes) {
  HopOutput out = sample_output();
  out.edge_types = {0, 1, 1, 2, 0};
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_reply(9, out, bytes);
  EXPECT_EQ(to_vector(decode_hop_reply(bytes).edge_types), out.edge_types);
}

TEST(Codec, EmptyHopReplyRoundTrip) {
  HopOutput out;
  out.clear();  // offsets {0}: no input nodes
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_reply(3, out, bytes);
  DecodedHopReply r = decode_hop_reply(bytes, 0);
  EXPECT_EQ(r.num_nodes(), 0u);
  EXPECT_TRUE(r.neighbors.empty());
}

TEST(Codec, FeatureRequestAndReplyRoundTrip) {
  Encoder encoder;
  std::vector<char> bytes;
  std::vector<int64_t> ids{4, 1, 4};
  encoder.feature_request(5, "paper", "x", ids, bytes);
  DecodedFeatureRequest q = decode_feature_request(bytes);
  EXPECT_EQ(q.request_id, 5u);
  EXPECT_EQ(q.group, "paper");
  EXPECT_EQ(q.name, "x");
  EXPECT_EQ(to_vector(q.ids), ids);

  std::vector<float> values = iota_vector<float>(3 * 4, 0.5f);
  encoder.feature_reply(5, TensorView(DType::kFloat32, {3, 4}, values.data(), 48), bytes);
  DecodedFeatureReply r = decode_feature_reply(bytes, 3);
  EXPECT_EQ(r.request_id, 5u);
  EXPECT_EQ(r.values.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(to_vector(r.values.as<float>()), values);
}

TEST(Codec, EmptyFeatureReplyKeepsRowWidth) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.feature_reply(1, TensorView(DType::kInt64, {0, 16}, nullptr, 0), bytes);
  DecodedFeatureReply r = decode_feature_reply(bytes, 0);
  EXPECT_EQ(r.values.shape, (std::vector<int64_t>{0, 16}));
  EXPECT_EQ(r.values.bytes, 0u);
}

TEST(Codec, ErrorReplyRoundTripAndRemoteError) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.error_reply(77, WireErrorCode::kOutOfRange, "node 12 is not in partition 1", bytes);
  DecodedErrorReply e = decode_error_reply(bytes);
  EXPECT_EQ(e.request_id, 77u);
  EXPECT_EQ(e.code, WireErrorCode::kOutOfRange);
  EXPECT_EQ(e.message, "node 12 is not in partition 1");

  // A typed decoder that gets an error reply throws it, with its code and id.
  try {
    decode_hop_reply(bytes);
    FAIL() << "expected RemoteError";
  } catch (const RemoteError& r) {
    EXPECT_EQ(r.request_id(), 77u);
    EXPECT_EQ(r.code(), WireErrorCode::kOutOfRange);
    EXPECT_NE(std::string(r.what()).find("node 12 is not in partition 1"), std::string::npos);
  }
}

TEST(Codec, WrongKindIsNamed) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_reply(1, sample_output(), bytes);
  std::string message = error_of([&] { decode_feature_reply(bytes); });
  EXPECT_NE(message.find("feature reply"), std::string::npos) << message;
  EXPECT_NE(message.find("hop reply"), std::string::npos) << message;
}

TEST(Codec, DecodedTensorsAreViewsIntoTheBuffer) {
  Encoder encoder;
  std::vector<char> bytes;
  std::vector<float> values = iota_vector<float>(64 * 128, 0.f);  // 32 KiB: external segment
  encoder.feature_reply(1, TensorView(DType::kFloat32, {64, 128}, values.data(),
                                      values.size() * 4), bytes);
  DecodedFeatureReply r = decode_feature_reply(bytes);
  EXPECT_TRUE(r.owned.empty());
  EXPECT_TRUE(points_into(r.values.data, bytes));
  EXPECT_EQ(to_vector(r.values.as<float>()), values);

  encoder.hop_reply(1, sample_output(), bytes);
  DecodedHopReply h = decode_hop_reply(bytes);
  EXPECT_TRUE(points_into(h.neighbors.data(), bytes));
  EXPECT_TRUE(points_into(h.offsets.data(), bytes));
}

TEST(Codec, UnalignedInputIsCopiedOnce) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_reply(1, sample_output(), bytes);
  std::vector<char> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  DecodedHopReply r = decode_hop_reply(Span<const char>(shifted.data() + 1, bytes.size()));
  EXPECT_EQ(r.owned.size(), 1u);
  EXPECT_FALSE(points_into(r.neighbors.data(), shifted));
  EXPECT_EQ(to_vector(r.neighbors), sample_output().neighbors);
}

TEST(Codec, UnalignedAndOddSizedSourcesRoundTrip) {
  // A source off word alignment is copied into the builder; an odd byte count leaves
  // padding that must not leak the bytes after it.
  std::vector<uint8_t> raw(20000 + 3);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i * 7);
  Encoder encoder;
  std::vector<char> bytes;
  for (size_t offset : {0, 1}) {
    size_t n = raw.size() - offset;  // 20003 or 20002 bytes: never a whole number of words
    encoder.feature_reply(1, TensorView(DType::kUInt8, {static_cast<int64_t>(n)},
                                        raw.data() + offset, n), bytes);
    DecodedFeatureReply r = decode_feature_reply(bytes);
    ASSERT_EQ(r.values.bytes, n);
    EXPECT_EQ(std::memcmp(r.values.data, raw.data() + offset, n), 0);
    // The padding after the data (up to the next word) is zero.
    const char* end = static_cast<const char*>(r.values.data) + n;
    for (size_t i = 0; i < (8 - n % 8) % 8; ++i) EXPECT_EQ(end[i], 0);
  }
}

TEST(Codec, TensorLargerThanOneChunkIsSplitAndJoined) {
  Encoder encoder(/*max_chunk_bytes=*/4096 + 5);  // rounded down to 4096
  std::vector<int64_t> neighbors = iota_vector<int64_t>(5000, 1);  // 40000 bytes: 10 chunks
  HopOutput out;
  out.offsets = {0, 5000};
  out.neighbors = neighbors;
  out.edge_ids = iota_vector<int64_t>(5000, 100);
  std::vector<char> bytes;
  encoder.hop_reply(1, out, bytes);
  DecodedHopReply r = decode_hop_reply(bytes, 1);
  EXPECT_EQ(to_vector(r.neighbors), out.neighbors);
  EXPECT_EQ(to_vector(r.edge_ids), out.edge_ids);
  EXPECT_EQ(r.owned.size(), 2u);  // both split tensors were joined
  EXPECT_FALSE(points_into(r.neighbors.data(), bytes));
}

// Found by fuzz/fuzz_codec.cpp: a split tensor with an empty chunk passed a null pointer to
// memcpy when its chunks were joined (undefined behaviour, reported by UBSan). Empty chunks
// add nothing; the tensor decodes from the others.
TEST(Codec, EmptyChunksOfASplitTensorAreSkippedWhenJoining) {
  capnp::MallocMessageBuilder message;
  auto reply = message.initRoot<wire::Envelope>().initHopReply();
  reply.setRequestId(7);
  // Each tensor as int64 chunks: an empty one, then the values, then another empty one.
  auto tensor = [](wire::Tensor::Builder t, const std::vector<int64_t>& values) {
    t.setDtype(static_cast<uint32_t>(DType::kInt64));
    t.initShape(1).set(0, static_cast<int64_t>(values.size()));
    auto chunks = t.initChunks(3);
    chunks.init(0, 0);
    auto data = chunks.init(1, values.size() * sizeof(int64_t));
    std::memcpy(data.begin(), values.data(), data.size());
    chunks.init(2, 0);
  };
  tensor(reply.initOffsets(), {0, 2});
  tensor(reply.initNeighbors(), {5, 6});
  tensor(reply.initEdgeIds(), {50, 60});
  auto words = capnp::messageToFlatArray(message);
  std::vector<char> bytes(reinterpret_cast<const char*>(words.begin()),
                          reinterpret_cast<const char*>(words.end()));
  DecodedHopReply r = decode_hop_reply(bytes, 1);
  EXPECT_EQ(r.request_id, 7u);
  EXPECT_EQ(to_vector(r.offsets), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(to_vector(r.neighbors), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(to_vector(r.edge_ids), (std::vector<int64_t>{50, 60}));
}

TEST(Codec, EncoderReusesItsOutputBuffer) {
  Encoder encoder;
  std::vector<char> bytes;
  std::vector<float> values(1 << 16, 1.f);
  TensorView view(DType::kFloat32, {1 << 10, 1 << 6}, values.data(), values.size() * 4);
  encoder.feature_reply(1, view, bytes);
  const char* first = bytes.data();
  encoder.hop_reply(2, sample_output(), bytes);  // smaller: shrinks in place
  encoder.feature_reply(3, view, bytes);
  EXPECT_EQ(bytes.data(), first);
  EXPECT_EQ(decode_feature_reply(bytes).request_id, 3u);
}

TEST(Codec, MessageOverDefaultTraversalLimitDecodes) {
  // 72 MiB: more than Cap'n Proto's default 64 MiB traversal limit.
  std::vector<float> values(size_t{72} << 18);
  for (size_t i = 0; i < values.size(); i += 4096) values[i] = static_cast<float>(i);
  Encoder encoder;
  std::vector<char> bytes;
  encoder.feature_reply(1, TensorView(DType::kFloat32, {static_cast<int64_t>(values.size())},
                                      values.data(), values.size() * 4), bytes);
  DecodedFeatureReply r = decode_feature_reply(bytes);
  ASSERT_EQ(r.values.bytes, values.size() * 4);
  EXPECT_EQ(std::memcmp(r.values.data, values.data(), r.values.bytes), 0);
}

TEST(Codec, EncoderRejectsInconsistentInput) {
  Encoder encoder;
  std::vector<char> bytes;
  HopOutput out = sample_output();
  out.offsets.back() = 4;
  EXPECT_NE(error_of([&] { encoder.hop_reply(1, out, bytes); }).find("offsets"),
            std::string::npos);
  std::vector<float> values(10);
  EXPECT_NE(error_of([&] {
              encoder.feature_reply(1, TensorView(DType::kFloat32, {3, 4}, values.data(), 40),
                                    bytes);
            }).find("shape needs 48 bytes, data has 40"),
            std::string::npos);
  std::vector<int64_t> nodes{1, 2};
  std::vector<int64_t> trees{0};
  EXPECT_NE(error_of([&] { encoder.hop_request(1, {}, 0, HopInput{nodes, trees, {}}, 0, bytes); })
                .find("trees"),
            std::string::npos);
}

TEST(Codec, FeatureReplyHeadPlusValuesDecodesLikeFeatureReply) {
  Encoder encoder;
  // Rows that fill whole words, rows that do not, a small reply (which feature_reply copies
  // into the builder) and a large one (which it references).
  for (int64_t rows : {1, 3, 7, 600}) {
    for (int64_t width : {1, 3, 128}) {
      std::vector<float> values = iota_vector<float>(static_cast<size_t>(rows * width), 1.5f);
      std::vector<char> head;
      size_t padding = encoder.feature_reply_head(9, DType::kFloat32, {rows, width}, head);
      EXPECT_EQ(head.size() % 8, 0u);
      std::vector<char> message(head);
      const char* v = reinterpret_cast<const char*>(values.data());
      message.insert(message.end(), v, v + values.size() * 4);
      message.insert(message.end(), padding, 0);
      DecodedFeatureReply r = decode_feature_reply(message, rows);
      EXPECT_EQ(r.request_id, 9u);
      EXPECT_EQ(r.values.shape, (std::vector<int64_t>{rows, width}));
      EXPECT_EQ(to_vector(r.values.as<float>()), values) << rows << " x " << width;
    }
  }
  std::vector<char> head;
  EXPECT_EQ(encoder.feature_reply_head(2, DType::kInt64, {0, 4}, head), 0u);
  DecodedFeatureReply empty = decode_feature_reply(head, 0);
  EXPECT_EQ(empty.values.shape, (std::vector<int64_t>{0, 4}));
  EXPECT_NE(error_of([&] { encoder.feature_reply_head(1, DType::kFloat32, {}, head); }), "");
}

MiniBatch sample_batch() {
  MiniBatch b;
  b.node_ids = {10, 20, 30, 40};
  b.row = {2, 3, 3};
  b.col = {0, 0, 1};
  b.edge_ids = {7, 8, 9};
  b.num_sampled_nodes = {2, 2};
  b.num_sampled_edges = {0, 3};
  b.input_ids = {10, 20};
  b.input_local = {0, 1};
  b.batch_size = 2;
  b.feature_dim = 3;
  b.x = iota_vector<float>(12, 0.25f);
  b.y = {1, 0, 1, 2};
  return b;
}

TEST(Codec, MiniBatchRoundTrip) {
  Encoder encoder;
  std::vector<char> bytes;
  MiniBatch want = sample_batch();
  encoder.mini_batch({4, 5, 6}, want, bytes);
  MiniBatch got;
  got.x.assign(100, 9.f);  // stale contents must go
  SampleKey key;
  decode_mini_batch(bytes, got, &key);
  EXPECT_EQ(key.seed, 4u);
  EXPECT_EQ(key.epoch, 5u);
  EXPECT_EQ(key.batch, 6u);
  EXPECT_EQ(got.node_ids, want.node_ids);
  EXPECT_EQ(got.row, want.row);
  EXPECT_EQ(got.col, want.col);
  EXPECT_EQ(got.edge_ids, want.edge_ids);
  EXPECT_TRUE(got.edge_types.empty());
  EXPECT_EQ(got.num_sampled_nodes, want.num_sampled_nodes);
  EXPECT_EQ(got.num_sampled_edges, want.num_sampled_edges);
  EXPECT_EQ(got.input_ids, want.input_ids);
  EXPECT_EQ(got.input_local, want.input_local);
  EXPECT_EQ(got.batch_size, 2);
  EXPECT_EQ(got.feature_dim, 3);
  EXPECT_EQ(got.x, want.x);
  EXPECT_EQ(got.y, want.y);

  MiniBatch bare = want;  // no features, no labels, disjoint trees and edge types
  bare.feature_dim = 0;
  bare.x.clear();
  bare.y.clear();
  bare.batch = {0, 1, 0, 1};
  bare.edge_types = {1, 1, 0};
  encoder.mini_batch({}, bare, bytes);
  decode_mini_batch(bytes, got);
  EXPECT_EQ(got.feature_dim, 0);
  EXPECT_TRUE(got.x.empty());
  EXPECT_TRUE(got.y.empty());
  EXPECT_EQ(got.batch, bare.batch);
  EXPECT_EQ(got.edge_types, bare.edge_types);
}

TEST(Codec, InconsistentMiniBatchesAreRejectedNamingTheProblem) {
  Encoder encoder;
  std::vector<char> bytes;
  MiniBatch got;
  auto problem = [&](const std::function<void(MiniBatch&)>& spoil) {
    MiniBatch b = sample_batch();
    spoil(b);
    std::string sent = error_of([&] { encoder.mini_batch({}, b, bytes); });
    if (!sent.empty()) return sent;  // caught at the sender
    return error_of([&] { decode_mini_batch(bytes, got); });
  };
  EXPECT_NE(problem([](MiniBatch& b) { b.row[1] = 4; }).find("row[1] = 4 is not a node"), std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.col.pop_back(); }).find("entries"), std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.num_sampled_nodes[1] = 3; }).find("num_sampled_nodes"),
            std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.num_sampled_edges = {3}; }).find("hop counts"), std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.input_local[0] = -1; }).find("input_local"), std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.batch_size = 5; }).find("batch size"), std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.y.pop_back(); }).find("y"), std::string::npos);
  EXPECT_NE(problem([](MiniBatch& b) { b.x.pop_back(); }).find("x has 11 values"), std::string::npos);
}

TEST(Codec, FeatureRowsHeaderRoundTripAndLimits) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.feature_rows_header(12, DType::kFloat32, {300, 128}, bytes);
  DecodedFeatureRowsHeader h = decode_feature_rows_header(bytes, 300);
  EXPECT_EQ(h.request_id, 12u);
  EXPECT_EQ(h.dtype, DType::kFloat32);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{300, 128}));
  EXPECT_EQ(h.bytes, 300u * 128 * 4);
  EXPECT_EQ(peek_message(bytes).request_id, 12u);
  EXPECT_NE(error_of([&] { decode_feature_rows_header(bytes, 299); }).find("300 rows, expected 299"),
            std::string::npos);
  encoder.feature_rows_header(1, DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}, bytes);
  EXPECT_NE(error_of([&] { decode_feature_rows_header(bytes); }).find("over 1 GiB"), std::string::npos);
  EXPECT_NE(error_of([&] { encoder.feature_rows_header(1, DType::kInt64, {}, bytes); }), "");
}

TEST(Codec, ChannelOfferAndAckRoundTrip) {
  Encoder encoder;
  std::vector<char> bytes;
  encoder.channel_offer("127.0.0.1", 4242, 0xfeedULL, 3, bytes);
  DecodedChannelOffer offer = decode_channel_offer(bytes);
  EXPECT_EQ(offer.host, "127.0.0.1");
  EXPECT_EQ(offer.port, 4242);
  EXPECT_EQ(offer.token, 0xfeedULL);
  EXPECT_EQ(offer.client, 3u);
  EXPECT_EQ(peek_message(bytes).kind, MessageKind::kChannelOffer);
  encoder.channel_offer("127.0.0.1", 0, 1, 1, bytes);
  EXPECT_NE(error_of([&] { decode_channel_offer(bytes); }).find("port 0"), std::string::npos);

  encoder.sampler_ack(12, bytes);
  EXPECT_EQ(decode_sampler_ack(bytes), 12);
  // A sampler's error reply reaches its caller as a RemoteError.
  encoder.error_reply(0, WireErrorCode::kInternal, "batch 3: partition 1 is gone", bytes);
  EXPECT_THROW(decode_sampler_ack(bytes), RemoteError);
  MiniBatch sink;
  EXPECT_THROW(decode_mini_batch(bytes, sink), RemoteError);
}

}  // namespace
}  // namespace partita
