// The partition actor: answers valid requests, answers every bad one with an error reply
// naming the problem, and keeps serving afterwards.
#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <string>
#include <vector>

#include "cluster.h"
#include "messages/codec.h"
#include "partitioner/partition.h"
#include "partitioned_graph.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;
using testing::Cluster;
using testing::TempDir;

class PartitionActorTest : public ::testing::Test {
 protected:
  PartitionActorTest() {
    config_.fanouts = {{5, 5}};
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(), options, tmp_ / "parts");
    cluster_ = std::make_unique<Cluster>(tmp_ / "parts", config_);
  }

  template <typename Atom>
  Encoded ask(Atom atom, Encoded request) {
    caf::scoped_actor self{cluster_->system()};
    Encoded reply;
    std::string failure;
    self->request(cluster_->actor(0), 10s, atom, std::move(request))
        .receive([&](Encoded& r) { reply = std::move(r); },
                 [&](caf::error& err) { failure = cluster_->system().render(err); });
    EXPECT_EQ(failure, "") << "the partition actor did not answer";
    return reply;
  }

  Encoded hop_request(uint64_t id, std::vector<int64_t> nodes, int hop = 0,
                      const SamplerConfig* config = nullptr) {
    nodes_ = std::move(nodes);
    HopInput input;
    input.nodes = Span<const int64_t>(nodes_);
    Encoded e;
    encoder_.hop_request(id, {1, 2, 3}, hop, input, (config ? *config : config_).fingerprint(), e.bytes);
    return e;
  }

  Encoded feature_request(uint64_t id, const std::string& name, std::vector<int64_t> ids) {
    nodes_ = std::move(ids);
    Encoded e;
    encoder_.feature_request(id, "node", name, nodes_, e.bytes);
    return e;
  }

  // The reply must be an error reply to `id` with `code` whose message contains `needle`.
  void expect_error(const Encoded& reply, uint64_t id, WireErrorCode code, const std::string& needle) {
    Span<const char> bytes(reply.bytes.data(), reply.bytes.size());
    ASSERT_EQ(peek_message(bytes).kind, MessageKind::kErrorReply);
    DecodedErrorReply e = decode_error_reply(bytes);
    EXPECT_EQ(e.request_id, id);
    EXPECT_EQ(e.code, code) << wire_error_code_name(e.code) << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
    EXPECT_NE(e.message.find(needle), std::string::npos) << e.message;
  }

  // A valid hop request and a valid feature request are still answered.
  void expect_still_serving() {
    const Topology& t = cluster_->topology(0);
    std::vector<int64_t> nodes = {t.node_begin(), t.node_begin() + 1, t.node_end() - 1};
    Encoded hop = ask(hop_atom::value, hop_request(100, nodes));
    DecodedHopReply h = decode_hop_reply(Span<const char>(hop.bytes.data(), hop.bytes.size()), 3);
    EXPECT_EQ(h.request_id, 100u);
    HopOutput local;
    HopInput input;
    input.nodes = Span<const int64_t>(nodes);
    sample_hop(t, config_, {1, 2, 3}, 0, input, local);
    EXPECT_EQ(std::vector<int64_t>(h.neighbors.begin(), h.neighbors.end()), local.neighbors);

    Encoded features = ask(feature_atom::value, feature_request(101, "y", nodes));
    DecodedFeatureReply f = decode_feature_reply(Span<const char>(features.bytes.data(), features.bytes.size()), 3);
    EXPECT_EQ(f.request_id, 101u);
    EXPECT_EQ(f.values.as<int64_t>().size(), 3u);
  }

  TempDir tmp_;
  SamplerConfig config_;
  std::unique_ptr<Cluster> cluster_;
  Encoder encoder_;
  std::vector<int64_t> nodes_;
};

TEST_F(PartitionActorTest, AnswersValidRequests) { expect_still_serving(); }

TEST_F(PartitionActorTest, GarbageBytesGetAnErrorReply) {
  Encoded garbage;
  garbage.bytes = std::vector<char>(64, '\x7f');
  expect_error(ask(hop_atom::value, garbage), 0, WireErrorCode::kBadRequest, "");
  expect_error(ask(feature_atom::value, garbage), 0, WireErrorCode::kBadRequest, "");
  expect_error(ask(hop_atom::value, Encoded{}), 0, WireErrorCode::kBadRequest, "");
  expect_still_serving();
}

TEST_F(PartitionActorTest, TruncatedRequestsGetAnErrorReply) {
  const Topology& t = cluster_->topology(0);
  Encoded valid = hop_request(7, {t.node_begin(), t.node_begin() + 1});
  for (size_t keep : {valid.bytes.size() / 2, valid.bytes.size() - 8, size_t{8}}) {
    Encoded truncated;
    truncated.bytes.assign(valid.bytes.begin(), valid.bytes.begin() + keep);
    Encoded reply = ask(hop_atom::value, truncated);
    Span<const char> bytes(reply.bytes.data(), reply.bytes.size());
    ASSERT_EQ(peek_message(bytes).kind, MessageKind::kErrorReply) << keep << " bytes";
    DecodedErrorReply e = decode_error_reply(bytes);
    EXPECT_EQ(e.code, WireErrorCode::kBadRequest) << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  expect_still_serving();
}

TEST_F(PartitionActorTest, RequestOfTheWrongKindGetsAnErrorReply) {
  const Topology& t = cluster_->topology(0);
  expect_error(ask(feature_atom::value, hop_request(8, {t.node_begin()})), 8, WireErrorCode::kBadRequest,
               "hop request");
  expect_still_serving();
}

TEST_F(PartitionActorTest, NodesOfAnotherPartitionAreOutOfRange) {
  const Topology& t = cluster_->topology(0);
  const int64_t foreign = cluster_->book().begin(1) + 3;
  expect_error(ask(hop_atom::value, hop_request(9, {t.node_begin(), foreign})), 9, WireErrorCode::kOutOfRange,
               "node " + std::to_string(foreign) + " is not in partition 0");
  expect_error(ask(feature_atom::value, feature_request(10, "x", {foreign})), 10, WireErrorCode::kOutOfRange,
               std::to_string(foreign));
  expect_error(ask(hop_atom::value, hop_request(11, {-1})), 11, WireErrorCode::kOutOfRange, "node -1");
  expect_still_serving();
}

TEST_F(PartitionActorTest, UnknownAttributeIsNotFound) {
  const Topology& t = cluster_->topology(0);
  expect_error(ask(feature_atom::value, feature_request(12, "no_such_attribute", {t.node_begin()})), 12,
               WireErrorCode::kNotFound, "no_such_attribute");
  expect_still_serving();
}

TEST_F(PartitionActorTest, HopBeyondTheConfigIsABadRequest) {
  const Topology& t = cluster_->topology(0);
  expect_error(ask(hop_atom::value, hop_request(13, {t.node_begin()}, 2)), 13, WireErrorCode::kBadRequest,
               "hop 2 of 2");
  expect_still_serving();
}

TEST_F(PartitionActorTest, ASamplerWithAnotherConfigIsRefused) {
  // Fanouts are not sent per request: a sampler configured differently from the partition
  // would get silently different batches, so the config fingerprints must match.
  const Topology& t = cluster_->topology(0);
  SamplerConfig other = config_;
  other.fanouts = {{10, 5}};
  Encoded reply = ask(hop_atom::value, hop_request(21, {t.node_begin()}, 0, &other));
  expect_error(reply, 21, WireErrorCode::kBadRequest, "config (fanouts, modes) differs");
  Encoded valid = ask(hop_atom::value, hop_request(22, {t.node_begin()}));
  Span<const char> bytes(valid.bytes.data(), valid.bytes.size());
  EXPECT_EQ(peek_message(bytes).kind, MessageKind::kHopReply);
}

}  // namespace
}  // namespace partita
