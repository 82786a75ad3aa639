// Messages that are valid Cap'n Proto but break the protocol's rules, built by hand the
// way a buggy or hostile peer could: each must be rejected with an error naming the problem.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "messages/codec.h"
#include "messages/sampling.capnp.h"

namespace partita {
namespace {

using wire::Envelope;

void set_tensor(wire::Tensor::Builder t, uint32_t dtype, std::vector<int64_t> shape,
                const std::vector<char>& data) {
  t.setDtype(dtype);
  auto s = t.initShape(static_cast<unsigned>(shape.size()));
  for (size_t i = 0; i < shape.size(); ++i) s.set(i, shape[i]);
  if (data.empty()) return;
  auto chunks = t.initChunks(1);
  auto d = chunks.init(0, static_cast<unsigned>(data.size()));
  std::copy(data.begin(), data.end(), reinterpret_cast<char*>(d.begin()));
}

template <typename T>
std::vector<char> bytes_of(const std::vector<T>& v) {
  const char* p = reinterpret_cast<const char*>(v.data());
  return std::vector<char>(p, p + v.size() * sizeof(T));
}

std::vector<char> build(const std::function<void(Envelope::Builder)>& fill) {
  capnp::MallocMessageBuilder message;
  fill(message.initRoot<Envelope>());
  auto words = capnp::messageToFlatArray(message);
  auto chars = words.asChars();
  return std::vector<char>(chars.begin(), chars.end());
}

// A hop reply with the given offsets and `edges` neighbours and edge ids.
std::vector<char> hop_reply(const std::vector<int64_t>& offsets, size_t edges,
                            size_t edge_ids) {
  return build([&](Envelope::Builder e) {
    auto r = e.initHopReply();
    set_tensor(r.initOffsets(), 3, {static_cast<int64_t>(offsets.size())}, bytes_of(offsets));
    std::vector<int64_t> n(edges, 1), ids(edge_ids, 2);
    set_tensor(r.initNeighbors(), 3, {static_cast<int64_t>(edges)}, bytes_of(n));
    set_tensor(r.initEdgeIds(), 3, {static_cast<int64_t>(edge_ids)}, bytes_of(ids));
  });
}

// Asserts that decoding `bytes` throws an Error whose message contains every fragment.
void expect_error(const std::function<void()>& decode,
                  const std::vector<std::string>& fragments) {
  try {
    decode();
  } catch (const Error& e) {
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "'" << e.what() << "' lacks '" << f << "'";
    return;
  }
  ADD_FAILURE() << "no error";
}

TEST(Validation, HandBuiltValidReplyDecodes) {
  auto bytes = hop_reply({0, 1, 3}, 3, 3);
  EXPECT_EQ(decode_hop_reply(bytes, 2).neighbors.size(), 3u);
}

TEST(Validation, TheRetiredEnvelopeTagIsRefusedByEveryDecoder) {
  // Tag 9 was a benchmark-only run report; a peer that sends it gets no decoder to read it.
  const std::vector<char> retired = build([](Envelope::Builder e) { e.setRetired9(); });
  expect_error([&] { peek_message(retired); }, {"not a protocol message"});
  expect_error([&] { decode_feature_rows_header(retired); }, {"not a protocol message"});
  expect_error([&] { decode_sampler_ack(retired); }, {"not a protocol message"});
  MiniBatch batch;
  expect_error([&] { decode_mini_batch(retired, batch); }, {"not a protocol message"});
}

TEST(Validation, OffsetsMustBeMonotone) {
  auto bytes = hop_reply({0, 3, 1, 3}, 3, 3);
  expect_error([&] { decode_hop_reply(bytes); }, {"hop reply", "offsets decrease at 2"});
}

TEST(Validation, OffsetsMustEndAtNeighbourCount) {
  auto bytes = hop_reply({0, 1, 2}, 3, 3);
  expect_error([&] { decode_hop_reply(bytes); }, {"hop reply", "offsets end at 2", "3 neighbours"});
}

TEST(Validation, OffsetsMustStartAtZero) {
  auto bytes = hop_reply({1, 3}, 3, 3);
  expect_error([&] { decode_hop_reply(bytes); }, {"offsets[0] is 1"});
}

TEST(Validation, OffsetsMustMatchExpectedNodes) {
  auto bytes = hop_reply({0, 1, 3}, 3, 3);
  expect_error([&] { decode_hop_reply(bytes, 5); }, {"covers 2 nodes, expected 5"});
}

TEST(Validation, EdgeIdsMustMatchNeighbours) {
  auto bytes = hop_reply({0, 3}, 3, 2);
  expect_error([&] { decode_hop_reply(bytes); }, {"edge_ids has 2 entries for 3 neighbours"});
}

TEST(Validation, ShapeMustMatchDataBytes) {
  auto bytes = build([](Envelope::Builder e) {
    auto r = e.initFeatureReply();
    set_tensor(r.initValues(), 4, {3, 4}, std::vector<char>(40));
  });
  expect_error([&] { decode_feature_reply(bytes); },
               {"feature reply", "values", "shape [3x4] of float32 does not match 40"});
}

TEST(Validation, HugeShapeDoesNotOverflow) {
  auto bytes = build([](Envelope::Builder e) {
    auto r = e.initFeatureReply();
    set_tensor(r.initValues(), 4, {int64_t{1} << 62, int64_t{1} << 62, 4}, std::vector<char>(64));
  });
  expect_error([&] { decode_feature_reply(bytes); }, {"does not match 64 data bytes"});
}

TEST(Validation, UnknownDtypeIsRejected) {
  auto bytes = build([](Envelope::Builder e) {
    auto r = e.initFeatureReply();
    set_tensor(r.initValues(), 99, {2}, std::vector<char>(8));
  });
  expect_error([&] { decode_feature_reply(bytes); }, {"values", "unknown dtype code 99"});
}

TEST(Validation, WrongDtypeForIdsIsRejected) {
  auto bytes = build([](Envelope::Builder e) {
    auto r = e.initFeatureRequest();
    r.setGroup("node");
    r.setName("x");
    set_tensor(r.initIds(), 2, {2}, std::vector<char>(8));
  });
  expect_error([&] { decode_feature_request(bytes); },
               {"feature request", "ids: dtype is int32, expected int64"});
}

TEST(Validation, MissingTensorIsNamed) {
  auto bytes = build([](Envelope::Builder e) { e.initHopRequest().setHop(1); });
  expect_error([&] { decode_hop_request(bytes); }, {"hop request", "nodes: missing"});
}

TEST(Validation, TreesMustMatchNodes) {
  auto bytes = build([](Envelope::Builder e) {
    auto r = e.initHopRequest();
    std::vector<int64_t> nodes{1, 2, 3}, trees{0, 1};
    set_tensor(r.initNodes(), 3, {3}, bytes_of(nodes));
    set_tensor(r.initTrees(), 3, {2}, bytes_of(trees));
  });
  expect_error([&] { decode_hop_request(bytes); }, {"trees has 2 entries, expected 3"});
}

TEST(Validation, UnsetEnvelopeIsRejected) {
  auto bytes = build([](Envelope::Builder) {});
  expect_error([&] { peek_message(bytes); }, {"not a protocol message"});
  expect_error([&] { decode_hop_reply(bytes); }, {"hop reply", "not a protocol message"});
}

TEST(Validation, GarbageAndTruncatedSizesAreNamed) {
  expect_error([&] { decode_hop_reply(Span<const char>()); }, {"hop reply", "empty message"});
  std::vector<char> odd(13, 0);
  expect_error([&] { decode_hop_reply(odd); }, {"not a multiple of 8"});
  std::vector<char> garbage(64, '\x7f');
  expect_error([&] { decode_hop_reply(garbage); }, {"hop reply", "malformed message"});
}

}  // namespace
}  // namespace partita
