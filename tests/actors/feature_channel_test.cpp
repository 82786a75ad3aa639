// The feature channel (the request channel itself is tested in tests/runtime/): a partition
// actor's channel answers feature requests exactly as its messages do, bad requests with
// encoded error replies, and a request over the channel's limit with one naming the limit.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
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

// Two partitions of the synthetic graph served by in-process actors; partition 1's actor
// is asked, by message, for its answers and its channel.
class FeatureChannelTest : public ::testing::Test {
 protected:
  FeatureChannelTest() {
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(), options, tmp_ / "parts");
    SamplerConfig config;
    config.fanouts = {{5}};
    cluster_ = std::make_unique<testing::Cluster>(tmp_ / "parts", config);
  }

  // Sends `args` to partition 1's actor and returns its encoded reply.
  template <typename... Args>
  Encoded ask(Args... args) {
    caf::scoped_actor self{cluster_->system()};
    Encoded reply;
    self->request(cluster_->actor(1), 10s, args...)
        .receive([&](Encoded& r) { reply = std::move(r); },
                 [&](caf::error& e) { ADD_FAILURE() << cluster_->system().render(e); });
    return reply;
  }
  DecodedChannelOffer offer() { return decode_channel_offer(Span<const char>(ask(channel_atom::value).bytes)); }

  testing::TempDir tmp_;
  std::unique_ptr<testing::Cluster> cluster_;
};

TEST_F(FeatureChannelTest, APartitionActorsChannelAnswersLikeItsMessages) {
  testing::Cluster& cluster = *cluster_;
  DecodedChannelOffer offer = this->offer();
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

// A fetch whose first reply is refused (rows of another width than the batch's) still reads
// its second reply, so the channel stays in step: the next fetch gets its own rows.
TEST_F(FeatureChannelTest, ARefusedReplyLeavesTheWorkerInStepForTheNextFetch) {
  testing::Cluster& cluster = *cluster_;
  std::mutex mutex;
  std::condition_variable reported;
  std::vector<uint64_t> tags;
  ChannelWorker worker(1, offer(), 10s, [&](uint64_t tag) {
    std::lock_guard<std::mutex> lock(mutex);
    tags.push_back(tag);
    reported.notify_all();
  });
  auto wait_for = [&](uint64_t tag) {
    std::unique_lock<std::mutex> lock(mutex);
    return reported.wait_for(lock, 30s, [&] { return std::find(tags.begin(), tags.end(), tag) != tags.end(); });
  };
  ASSERT_TRUE(wait_for(0)) << "the channel never reported its connection";
  ASSERT_EQ(worker.failure(), "");

  std::vector<int64_t> ids{cluster.book().begin(1), cluster.book().begin(1) + 2};
  const int64_t width = cluster.stores(1).features->get("node", "x")->row_width();
  std::vector<int64_t> positions{1, 0};
  Encoder encoder;
  auto prepare = [&](ChannelFetch& fetch, uint64_t first_id, std::vector<float>& x, std::vector<int64_t>& y,
                     int64_t x_width) {
    const char* names[2] = {"x", "y"};
    for (int k = 0; k < 2; ++k) {
      fetch.asked[k] = true;
      fetch.ids[k] = first_id + k;
      encoder.feature_request(fetch.ids[k], "node", names[k], ids, fetch.requests[k]);
      RowsTarget& t = fetch.targets[k];
      t.part = 1;
      t.rows = k == 0 ? Rows::kX : Rows::kY;
      t.dtype = k == 0 ? DType::kFloat32 : DType::kInt64;
      t.row_bytes = k == 0 ? static_cast<size_t>(x_width) * sizeof(float) : sizeof(int64_t);
      t.base = k == 0 ? reinterpret_cast<char*>(x.data()) : reinterpret_cast<char*>(y.data());
      t.positions = Span<const int64_t>(positions);
    }
  };
  // The batch expects rows one value narrower than the partition's: the x reply is refused.
  std::vector<float> narrow_x(2 * static_cast<size_t>(width - 1)), x(2 * static_cast<size_t>(width));
  std::vector<int64_t> y_first(2), y(2);
  ChannelFetch refused, next;
  prepare(refused, 10, narrow_x, y_first, width - 1);
  worker.submit(1, &refused);
  ASSERT_TRUE(wait_for(1));
  EXPECT_NE(refused.error.find("another width"), std::string::npos) << refused.error;
  prepare(next, 20, x, y, width);
  worker.submit(2, &next);
  ASSERT_TRUE(wait_for(2));
  EXPECT_EQ(next.error, "") << "the channel fell out of step";
  std::vector<float> want_x;
  std::vector<int64_t> want_y;
  cluster.stores(1).features->gather_as("node", "x", ids, want_x);
  cluster.stores(1).features->gather_as("node", "y", ids, want_y);
  EXPECT_EQ(y[1], want_y[0]);  // placed at positions {1, 0}
  EXPECT_EQ(y[0], want_y[1]);
  EXPECT_TRUE(std::equal(x.begin(), x.begin() + width, want_x.begin() + width));
}

}  // namespace
}  // namespace partita
