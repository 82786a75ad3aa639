// The feature channel (the request channel itself is tested in tests/runtime/): a partition
// actor's channel answers feature requests exactly as its messages do, bad requests with
// encoded error replies, and a request over the channel's limit with one naming the limit.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <chrono>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "actors/feature_channel.h"
#include "base/error.h"
#include "cluster.h"
#include "messages/codec.h"
#include "runtime/transport/wire_format.h"
#include "partitioned_graph.h"
#include "runtime/runtime_test_util.h"
#include "partitioner/partition.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;

using testing::next_reply;

TEST(FeatureChannel, APartitionActorsChannelAnswersLikeItsMessages) {
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(testing::sbm_graph(), options, tmp / "parts");
  SamplerConfig config;
  config.fanouts = {{5}};
  testing::Cluster cluster(tmp / "parts", config);
  caf::scoped_actor self{cluster.system()};
  auto ask = [&](auto... args) {
    Encoded reply;
    self->request(cluster.actor(1), 10s, args...)
        .receive([&](Encoded& r) { reply = std::move(r); },
                 [&](caf::error& e) { ADD_FAILURE() << cluster.system().render(e); });
    return reply;
  };
  DecodedChannelOffer offer = decode_channel_offer(Span<const char>(ask(channel_atom::value).bytes));
  ChannelClient client("partition 1");
  client.open(offer, 1, 10s);

  Encoder encoder;
  std::vector<int64_t> ids;
  for (int64_t g = cluster.book().end(1) - 1; g >= cluster.book().begin(1); g -= 3) ids.push_back(g);
  for (const char* name : {"x", "y"}) {
    Encoded request;
    encoder.feature_request(5, "node", name, ids, request.bytes);
    Encoded by_message = ask(feature_atom::value, request);
    client.send(Span<const char>(request.bytes), 10s);
    testing::ChannelReplyBytes by_channel = next_reply(client, 10s);
    DecodedFeatureReply a = decode_feature_reply(Span<const char>(by_message.bytes), static_cast<int64_t>(ids.size()));
    DecodedFeatureRowsHeader b = decode_feature_rows_header(Span<const char>(by_channel.head), static_cast<int64_t>(ids.size()));
    EXPECT_EQ(b.request_id, 5u);
    EXPECT_EQ(a.values.shape, b.shape);
    EXPECT_EQ(a.values.dtype, b.dtype);
    ASSERT_EQ(a.values.bytes, b.bytes);
    ASSERT_EQ(by_channel.body.size(), b.bytes);
    EXPECT_EQ(std::memcmp(a.values.data, by_channel.body.data(), a.values.bytes), 0) << name;
  }
  // A bad request over the channel gets an error reply naming the problem (with an empty
  // body), and the session keeps serving.
  std::vector<int64_t> foreign{cluster.book().begin(0)};
  Encoded bad;
  encoder.feature_request(6, "node", "x", foreign, bad.bytes);
  client.send(Span<const char>(bad.bytes), 10s);
  testing::ChannelReplyBytes reply = next_reply(client, 10s);
  EXPECT_TRUE(reply.body.empty());
  DecodedErrorReply e = decode_error_reply(Span<const char>(reply.head));
  EXPECT_EQ(e.request_id, 6u);
  EXPECT_EQ(e.code, WireErrorCode::kOutOfRange);
  EXPECT_NE(e.message.find(std::to_string(cluster.book().begin(0))), std::string::npos) << e.message;
  std::vector<char> junk{1, 2, 3};
  client.send(Span<const char>(junk), 10s);
  reply = next_reply(client, 10s);
  EXPECT_NE(decode_error_reply(Span<const char>(reply.head)).message.find("feature request"), std::string::npos);
  EXPECT_TRUE(reply.body.empty());
}

TEST(FeatureChannel, AnOversizedRequestGetsAnEncodedErrorReplyNamingTheLimit) {
  ChannelServer server(
      "127.0.0.1", 2, [] { return [](Span<const char>, ChannelReply&) { ADD_FAILURE() << "answered"; }; }, 10s,
      "partition 2");
  const DecodedChannelOffer offer = server.open();
  // The length frame alone, as a client with a broken encoder might send it.
  runtime::Connection raw = runtime::Connection::connect({offer.host, offer.port}, offer.token, offer.client, "server",
                                                         std::chrono::steady_clock::now() + 10s, nullptr);
  raw.confirm(offer.token, 2, std::chrono::steady_clock::now() + 10s, nullptr);
  unsigned char frame[runtime::wire::kFrameLengthBytes];
  runtime::wire::encode_frame_length(runtime::wire::kMaxRequestBytes + 1, frame);
  raw.send_all(frame, sizeof(frame), std::chrono::steady_clock::now() + 10s, nullptr, "sending");
  raw.recv_all(frame, sizeof(frame), std::chrono::steady_clock::now() + 10s, nullptr, "receiving");
  std::vector<char> head(runtime::wire::decode_frame_length(frame));
  raw.recv_all(head.data(), head.size(), std::chrono::steady_clock::now() + 10s, nullptr, "receiving");
  const DecodedErrorReply e = decode_error_reply(Span<const char>(head));
  EXPECT_EQ(e.code, WireErrorCode::kBadRequest);
  EXPECT_NE(e.message.find("partition 2: feature channel: a request of " +
                           std::to_string(runtime::wire::kMaxRequestBytes + 1) + " bytes exceeds the limit of " +
                           std::to_string(runtime::wire::kMaxRequestBytes) + " bytes"),
            std::string::npos)
      << e.message;
}

}  // namespace
}  // namespace partita
