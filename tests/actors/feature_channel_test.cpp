// The feature channel: frames in order, large replies intact, a client that does not
// belong is refused, every wait ends at its deadline or when shut down, and a partition
// actor's channel answers feature requests exactly as its messages do.
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
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;

// Answers each request with the request as the head and, as the body, request[0] * 100000
// copies of it (so that a small request can ask for a large body), after sleeping `delay`.
ChannelHandler repeat(std::chrono::milliseconds delay = 0ms) {
  return [delay](Span<const char> request, ChannelReply& reply) {
    std::this_thread::sleep_for(delay);
    if (reply.head.size() < request.size()) reply.head.resize(request.size());
    std::memcpy(reply.head.data(), request.data(), request.size());
    reply.head_length = request.size();
    const size_t copies = request.empty() ? 0 : static_cast<unsigned char>(request[0]) * size_t{100000};
    reply.storage.assign(request.begin(), request.end());
    reply.body_bytes = copies * request.size();
    reply.body_unit = request.size();
    const char* one = reply.storage.data();
    const size_t size = request.size();
    reply.fill = [one, size](char* piece, uint64_t offset, uint64_t bytes) {
      for (uint64_t done = 0; done < bytes; done += size) std::memcpy(piece + done, one, size);
      (void)offset;
    };
  };
}

struct Reply {
  std::vector<char> head, body;
};

// The next reply of `client`, head and body in vectors of exactly their bytes.
Reply next_reply(ChannelClient& client, std::chrono::milliseconds deadline) {
  Reply r;
  uint64_t body_bytes = 0;
  r.head.resize(client.receive_head(r.head, body_bytes, deadline));
  client.receive_body(r.body, deadline);
  r.body.resize(body_bytes);
  return r;
}

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FeatureChannel, RepliesComeInRequestOrderAndLargeOnesIntact) {
  ChannelServer server("127.0.0.1", 7, [] { return repeat(); }, 10s, "partition 7");
  ChannelClient client("partition 7");
  client.open(server.open(), 7, 10s);
  std::vector<char> small{0, 1, 2, 3}, large(100);
  std::iota(large.begin(), large.end(), 1);
  large[0] = 7;  // 7 * 100000 copies of 100 bytes: a 70 MB body
  client.send(small, 10s);
  client.send(large, 10s);
  client.send(small, 10s);
  Reply reply = next_reply(client, 10s);
  EXPECT_EQ(reply.head, small);
  EXPECT_TRUE(reply.body.empty());
  reply = next_reply(client, 30s);
  EXPECT_EQ(reply.head, large);
  ASSERT_EQ(reply.body.size(), 700u * 100000u);
  for (size_t c = 0; c < reply.body.size(); c += 100 * 99991) {
    EXPECT_EQ(std::memcmp(reply.body.data() + c, large.data(), 100), 0) << "copy at " << c;
  }
  EXPECT_EQ(next_reply(client, 10s).head, small);
}

TEST(FeatureChannel, ABodyMayBeReadInPiecesButNotBeyondItsEnd) {
  ChannelServer server("127.0.0.1", 7, [] { return repeat(); }, 10s, "partition 7");
  ChannelClient client("partition 7");
  client.open(server.open(), 7, 10s);
  std::vector<char> request{1, 5, 6, 7};  // a body of 100000 copies of it: 400000 bytes
  client.send(request, 10s);
  std::vector<char> head;
  uint64_t body_bytes = 0;
  client.receive_head(head, body_bytes, 10s);
  ASSERT_EQ(body_bytes, 400000u);
  // The first half of the body into the second half of a buffer, then the rest.
  std::vector<char> out(400000);
  client.receive_body(out.data() + 200000, 200000, 10s);
  EXPECT_EQ(client.body_left(), 200000u);
  client.receive_body(out.data(), 200000, 10s);
  EXPECT_EQ(client.body_left(), 0u);
  for (size_t i = 0; i < out.size(); i += 4) ASSERT_EQ(std::memcmp(out.data() + i, request.data(), 4), 0) << i;
  // The next reply: a head is due before any body, and no more than the body is read.
  EXPECT_NE(error_of([&] { client.receive_body(out.data(), 4, 10s); }).find("no reply head"), std::string::npos);
  ChannelClient other("partition 7");
  other.open(server.open(), 7, 10s);
  other.send(request, 10s);
  other.receive_head(head, body_bytes, 10s);
  EXPECT_NE(error_of([&] { other.receive_body(out.data(), 400001, 10s); }).find("asked for 400001 bytes"),
            std::string::npos);
}

TEST(FeatureChannel, ADiscardedBodyKeepsTheStreamInStep) {
  ChannelServer server("127.0.0.1", 7, [] { return repeat(); }, 10s, "partition 7");
  ChannelClient client("partition 7");
  client.open(server.open(), 7, 10s);
  std::vector<char> large{30, 1, 2, 3}, small{0, 9};
  client.send(large, 10s);
  client.send(small, 10s);
  std::vector<char> head;
  uint64_t body_bytes = 0;
  client.receive_head(head, body_bytes, 10s);
  EXPECT_EQ(body_bytes, 30u * 100000 * 4);
  client.discard_body(10s);
  EXPECT_EQ(next_reply(client, 10s).head, small);
}

TEST(FeatureChannel, AClientWithTheWrongTokenOrServerIsRefused) {
  ChannelServer server("127.0.0.1", 1, [] { return repeat(); }, 10s, "partition 1");
  DecodedChannelOffer offer = server.open();
  DecodedChannelOffer forged = offer;
  forged.token ^= 1;
  ChannelClient intruder("partition 1");
  EXPECT_NE(error_of([&] { intruder.open(forged, 1, 2s); }).find("partition 1"), std::string::npos);
  // The real client still gets in: a refused connection does not end the session.
  ChannelClient client("partition 1");
  client.open(offer, 1, 10s);
  // A client that expects another server (a stale offer) notices.
  ChannelClient confused("partition 2");
  EXPECT_NE(error_of([&] { confused.open(server.open(), 2, 2s); }), "");
}

TEST(FeatureChannel, ASlowReplyFailsAtTheDeadlineAndTheClientStaysBroken) {
  ChannelServer server("127.0.0.1", 3, [] { return repeat(500ms); }, 10s, "partition 3");
  ChannelClient client("partition 3");
  client.open(server.open(), 3, 10s);
  std::vector<char> request{1}, head;
  uint64_t body_bytes = 0;
  client.send(request, 1s);
  const auto start = std::chrono::steady_clock::now();
  std::string failure = error_of([&] { client.receive_head(head, body_bytes, 50ms); });
  EXPECT_NE(failure.find("partition 3: feature channel: timed out"), std::string::npos) << failure;
  EXPECT_NE(failure.find("deadline 50 ms"), std::string::npos) << failure;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 400ms);
  // Half a frame may be on its way: the stream cannot be trusted any more.
  EXPECT_NE(error_of([&] { client.send(request, 1s); }).find("unusable since an earlier failure: timed out"),
            std::string::npos);
}

TEST(FeatureChannel, ShutDownWakesABlockedReceive) {
  ChannelServer server("127.0.0.1", 3, [] { return repeat(1s); }, 10s, "partition 3");
  ChannelClient client("partition 3");
  client.open(server.open(), 3, 10s);
  std::vector<char> request{1}, head;
  uint64_t body_bytes = 0;
  client.send(request, 1s);
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    client.shut_down();
  });
  const auto start = std::chrono::steady_clock::now();
  std::string failure = error_of([&] { client.receive_head(head, body_bytes, 60s); });
  stopper.join();
  EXPECT_NE(failure.find("shut down"), std::string::npos) << failure;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(FeatureChannel, AStoppedServerFailsItsClientsAtOnce) {
  auto server = std::make_unique<ChannelServer>("127.0.0.1", 4, [] { return repeat(); }, 10s, "partition 4");
  ChannelClient client("partition 4");
  client.open(server->open(), 4, 10s);
  server.reset();  // joins its sessions
  std::vector<char> request{1}, head;
  uint64_t body_bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  std::string failure = error_of([&] {
    client.send(request, 1s);
    client.receive_head(head, body_bytes, 30s);
  });
  EXPECT_NE(failure.find("partition 4"), std::string::npos) << failure;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

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
    Reply by_channel = next_reply(client, 10s);
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
  Reply reply = next_reply(client, 10s);
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

}  // namespace
}  // namespace partita
