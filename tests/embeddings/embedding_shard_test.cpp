// An embedding table's shard (embeddings/embedding_shard.h): its checkpoints, of both
// versions, and what it refuses in them; its request frames from trainers in other
// processes (shard_wire::answer), well formed and malformed, which are refused, named,
// without changing the shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/error.h"
#include "embeddings/embedding_shard.h"
#include "runtime/transport/wire_format.h"

namespace partita {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A shard of 3 rows of dim 2 (ids [0, 3), original ids 0..2).
EmbeddingShardConfig three_row_shard() {
  EmbeddingShardConfig config;
  config.end = 3;
  config.dim = 2;
  config.seed = 4;
  return config;
}

// The checkpoint of a shard of `config` after one step on row 1.
std::vector<char> checkpoint_after_a_step(const EmbeddingShardConfig& config) {
  EmbeddingShard trained(config, std::vector<int64_t>{0, 1, 2});
  trained.push(0, std::vector<int64_t>{1}, std::vector<float>(static_cast<size_t>(config.dim), 0.5f));
  return trained.save(seconds(10));
}

// A shard checkpoint of version 1 (before SparseAdam: Adagrad's state, no step count)
// loads into an Adagrad shard as it was saved, and is refused by a SparseAdam one, named.
TEST(EmbeddingShardTest, AVersionOneCheckpointLoadsIntoAnAdagradShardOnly) {
  EmbeddingShardConfig config = three_row_shard();
  const std::vector<int64_t> original{0, 1, 2};
  EmbeddingShard trained(config, original);
  trained.push(0, std::vector<int64_t>{1}, std::vector<float>{0.5f, -0.25f});
  const std::vector<char> v2 = trained.save(seconds(10));
  // Version 1: magic "PTSHARD1", checksum, header {begin, end, dim}, rows, state.
  std::vector<char> body(v2.begin() + 16, v2.end());
  body.erase(body.begin() + 3 * sizeof(int64_t), body.begin() + 5 * sizeof(int64_t));
  std::vector<char> v1(v2.begin(), v2.begin() + 8);
  v1[7] = '1';
  const uint64_t sum = checksum(body.data(), body.size());
  v1.insert(v1.end(), reinterpret_cast<const char*>(&sum), reinterpret_cast<const char*>(&sum) + sizeof(sum));
  v1.insert(v1.end(), body.begin(), body.end());

  EmbeddingShard loaded(config, original);
  loaded.load(v1);
  const std::vector<char> again = loaded.save(seconds(10));
  ASSERT_EQ(again.size(), v2.size());
  // The same rows and Adagrad state; only the step count (unknown in version 1) is 0.
  EXPECT_TRUE(std::equal(again.begin() + 16 + 5 * sizeof(int64_t), again.end(), v2.begin() + 16 + 5 * sizeof(int64_t)));
  std::vector<float> rows(6), expected(6);
  loaded.read(0, std::vector<int64_t>{0, 1, 2}, rows.data(), seconds(10));
  trained.read(0, std::vector<int64_t>{0, 1, 2}, expected.data(), seconds(10));
  EXPECT_EQ(rows, expected);

  config.optimizer = RowOptimizer::parse("sparse_adam", 0.01, "train.optimizer");
  EmbeddingShard adam(config, original);
  try {
    adam.load(v1);
    ADD_FAILURE() << "a version-1 (Adagrad) checkpoint loaded into a SparseAdam shard";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another optimiser than the job's sparse_adam"), std::string::npos) << e.what();
  }
  // And SparseAdam's own checkpoint holds its step count.
  adam.push(0, std::vector<int64_t>{2}, std::vector<float>{1.0f, 1.0f});
  const std::vector<char> adam_bytes = adam.save(seconds(10));
  int64_t header[5];
  std::memcpy(header, adam_bytes.data() + 16, sizeof(header));
  EXPECT_EQ(header[3], 1);
  EXPECT_EQ(header[4], 1);
  EXPECT_EQ(adam_bytes.size(), 16 + sizeof(header) + 3 * 6 * sizeof(float));
}

// A damaged checkpoint is named as damaged whichever byte is hit: a flipped optimiser kind
// is not "another optimiser" (which would send the user to change train.optimizer), a
// byte appended not "another table". A checkpoint written with a negative step count
// (checksum intact) is refused, named.
TEST(EmbeddingShardTest, ADamagedCheckpointIsNamedCorruptWhicheverByteIsHit) {
  const EmbeddingShardConfig config = three_row_shard();
  const std::vector<char> good = checkpoint_after_a_step(config);
  const auto load_error = [&](const std::vector<char>& bytes) {
    EmbeddingShard shard(config, std::vector<int64_t>{0, 1, 2});
    try {
      shard.load(bytes);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(load_error(good), "no error");
  std::vector<char> kind = good;
  kind[16 + 3 * sizeof(int64_t)] ^= 1;  // the optimiser's kind: Adagrad -> SparseAdam
  EXPECT_NE(load_error(kind).find("corrupt (checksum mismatch)"), std::string::npos) << load_error(kind);
  std::vector<char> longer = good;
  longer.push_back('x');
  EXPECT_NE(load_error(longer).find("corrupt (checksum mismatch)"), std::string::npos) << load_error(longer);
  std::vector<char> negative = good;
  const int64_t steps = -5;
  std::memcpy(negative.data() + 16 + 4 * sizeof(int64_t), &steps, sizeof(steps));
  const uint64_t sum = checksum(negative.data() + 16, negative.size() - 16);
  std::memcpy(negative.data() + 8, &sum, sizeof(sum));
  EXPECT_NE(load_error(negative).find("step count is negative (-5)"), std::string::npos) << load_error(negative);
  // Another table's intact checkpoint is still named as such.
  EmbeddingShardConfig wider = config;
  wider.dim = 4;
  EXPECT_NE(load_error(checkpoint_after_a_step(wider)).find("another table?"), std::string::npos);
}

// A partition may own no entity: its shard of no rows steps, saves and loads its checkpoint.
TEST(EmbeddingShardTest, AShardOfNoRowsStepsSavesAndLoads) {
  EmbeddingShardConfig config = three_row_shard();
  config.begin = config.end = 3;
  for (const char* optimizer : {"adagrad", "sparse_adam"}) {
    config.optimizer = RowOptimizer::parse(optimizer, 0.1, "train.optimizer");
    EmbeddingShard shard(config, std::vector<int64_t>{});
    shard.push(0, std::vector<int64_t>{}, std::vector<float>{});
    shard.read_range(3, 3, nullptr, seconds(1));
    const std::vector<char> bytes = shard.save(seconds(1));
    EXPECT_EQ(bytes.size(), 16 + 5 * sizeof(int64_t)) << optimizer;
    EmbeddingShard loaded(config, std::vector<int64_t>{});
    loaded.load(bytes);
    EXPECT_EQ(loaded.save(seconds(1)), bytes) << optimizer;
  }
}

// A request frame: the head, then the ids, then the floats.
std::vector<char> frame(shard_wire::Op op, int32_t trainer, int64_t count, int64_t first,
                        const std::vector<int64_t>& ids = {}, const std::vector<float>& values = {}) {
  std::vector<char> bytes(runtime::wire::kShardRequestHeadBytes + ids.size() * sizeof(int64_t) +
                          values.size() * sizeof(float));
  runtime::wire::encode_shard_request_head({op, trainer, count, first}, reinterpret_cast<unsigned char*>(bytes.data()));
  char* at = bytes.data() + runtime::wire::kShardRequestHeadBytes;
  if (!ids.empty()) std::memcpy(at, ids.data(), ids.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(at + ids.size() * sizeof(int64_t), values.data(), values.size() * sizeof(float));
  return bytes;
}

struct Answer {
  uint32_t status = 0;
  std::string text;           // a refusal's reason
  std::vector<float> rows;    // an ok reply's body
};

Answer ask(EmbeddingShard& shard, const std::vector<char>& request) {
  runtime::ChannelReply reply;
  shard_wire::answer(shard, Span<const char>(request), reply, milliseconds(100));
  Answer a;
  EXPECT_GE(reply.head_length, sizeof(a.status));
  std::memcpy(&a.status, reply.head.data(), sizeof(a.status));
  a.text.assign(reply.head.data() + sizeof(a.status), reply.head_length - sizeof(a.status));
  EXPECT_EQ(reply.body_bytes % sizeof(float), 0u);
  a.rows.resize(reply.body_bytes / sizeof(float));
  if (reply.body_bytes > 0) reply.fill(reinterpret_cast<char*>(a.rows.data()), 0, reply.body_bytes);
  return a;
}

// Every request kind answered: a push applied (one trainer), the rows read back by id and by
// range, a write overwriting a row, and empty requests (a push touching none of the
// shard's rows) answered ok.
TEST(ShardRequestTest, EachOperationIsAnsweredAsTheShardWouldCallIt) {
  const EmbeddingShardConfig config = three_row_shard();
  EmbeddingShard shard(config, std::vector<int64_t>{0, 1, 2});
  EmbeddingShard direct(config, std::vector<int64_t>{0, 1, 2});
  const std::vector<float> grads{0.5f, -0.25f};
  EXPECT_EQ(ask(shard, frame(shard_wire::Op::kPush, 0, 1, 0, {1}, grads)).status, runtime::wire::kShardReplyOk);
  direct.push(0, std::vector<int64_t>{1}, grads);
  EXPECT_EQ(ask(shard, frame(shard_wire::Op::kPush, 0, 0, 0)).status, runtime::wire::kShardReplyOk);
  direct.push(0, std::vector<int64_t>{}, std::vector<float>{});

  std::vector<float> expected(6);
  direct.read(0, std::vector<int64_t>{2, 1, 0}, expected.data(), seconds(1));
  const Answer read = ask(shard, frame(shard_wire::Op::kRead, 0, 3, 0, {2, 1, 0}));
  EXPECT_EQ(read.status, runtime::wire::kShardReplyOk) << read.text;
  EXPECT_EQ(read.rows, expected);
  direct.read_range(1, 3, expected.data(), seconds(1));
  const Answer range = ask(shard, frame(shard_wire::Op::kReadRange, 0, 2, 1));
  EXPECT_EQ(range.status, runtime::wire::kShardReplyOk) << range.text;
  EXPECT_EQ(range.rows, std::vector<float>(expected.begin(), expected.begin() + 4));
  EXPECT_TRUE(ask(shard, frame(shard_wire::Op::kReadRange, 0, 0, 3)).rows.empty());
  EXPECT_TRUE(ask(shard, frame(shard_wire::Op::kRead, 0, 0, 0)).rows.empty());

  EXPECT_EQ(ask(shard, frame(shard_wire::Op::kWrite, 0, 1, 0, {0}, {7.0f, 8.0f})).status, runtime::wire::kShardReplyOk);
  EXPECT_EQ(ask(shard, frame(shard_wire::Op::kRead, 0, 1, 0, {0})).rows, (std::vector<float>{7.0f, 8.0f}));
}

// Malformed frames and requests the shard refuses: each answered with a refusal naming the
// problem, never an exception, a body, or a change to the shard (its checkpoint after them
// is the one before).
TEST(ShardRequestTest, MalformedFramesAreRefusedNamedAndChangeNothing) {
  const EmbeddingShardConfig config = three_row_shard();
  EmbeddingShard shard(config, std::vector<int64_t>{0, 1, 2});
  const std::vector<char> before = shard.save(seconds(1));
  using shard_wire::Op;
  const int64_t huge = int64_t{1} << 40;
  const int64_t most = int64_t{0x7fffffffffffffff};
  std::vector<char> cut = frame(Op::kRead, 0, 2, 0, {0, 1});
  cut.pop_back();
  const struct {
    std::vector<char> request;
    const char* says;
  } cases[] = {
      {{}, "a request of 0 bytes is too short"},
      {std::vector<char>(23, '\0'), "a request of 23 bytes is too short"},
      {frame(static_cast<Op>(9), 0, 0, 0), "unknown operation 9"},
      {frame(static_cast<Op>(0), 0, 0, 0), "unknown operation 0"},
      {frame(Op::kRead, 0, -1, 0), "a request for -1 rows"},
      {frame(Op::kRead, 0, huge, 0), "a request for 1099511627776 rows"},
      {frame(Op::kReadRange, 0, most, 0), "rows"},
      {cut, "a read request of 39 bytes for 2 rows"},
      {frame(Op::kRead, 0, 1, 0, {0, 1}), "a read request of 40 bytes for 1 rows"},
      {frame(Op::kRead, 0, 1, 0, {3}), "entity 3 is not one of its ids [0, 3)"},
      {frame(Op::kRead, 5, 1, 0, {0}), "no trainer 5"},
      {frame(Op::kRead, -1, 0, 0), "no trainer -1"},
      {frame(Op::kReadRange, 0, 1, 0, {0}), "a range request of 32 bytes for 1 rows"},
      {frame(Op::kReadRange, 0, 2, 2), "a range of 2 rows from 2 outside the shard's ids [0, 3)"},
      // Refused before its reply's gigabyte is allocated.
      {frame(Op::kReadRange, 0, int64_t{1} << 27, 0), "a range of 134217728 rows from 0 outside"},
      {frame(Op::kReadRange, 0, 1, -1), "a range of 1 rows from -1 outside"},
      {frame(Op::kReadRange, 0, 1, most), "outside the shard's ids"},
      {frame(Op::kPush, 0, 1, 0, {1}, {0.5f}), "a push request of 36 bytes for 1 rows"},
      {frame(Op::kPush, 0, 1, 0, {1}), "a push request of 32 bytes for 1 rows"},
      {frame(Op::kPush, 0, 2, 0, {1, 1}, {1, 1, 1, 1}), "entity 1 pushed twice in one step"},
      {frame(Op::kPush, 0, 1, 0, {-4}, {1, 1}), "entity -4 is not one of its ids"},
      {frame(Op::kPush, 1, 1, 0, {0}, {1, 1}), "no trainer 1"},
      {frame(Op::kWrite, 0, 1, 0, {0}, {1, 1, 1}), "a write request of 44 bytes for 1 rows"},
      {frame(Op::kWrite, 0, 2, 0, {2, 2}, {1, 1, 1, 1}), "entity 2 written twice"},
  };
  for (const auto& c : cases) {
    const Answer a = ask(shard, c.request);
    EXPECT_EQ(a.status, runtime::wire::kShardReplyRefused) << c.says;
    EXPECT_NE(a.text.find(c.says), std::string::npos) << "expected '" << c.says << "' in '" << a.text << "'";
    EXPECT_TRUE(a.rows.empty()) << c.says;
  }
  EXPECT_EQ(shard.save(seconds(1)), before);
}

// A read waits for the steps its trainer pushed; with a trainer missing, the wait ends at
// the deadline given to answer(), as a refusal saying so.
TEST(ShardRequestTest, AReadWaitingForAMissingTrainerIsRefusedAtTheDeadline) {
  EmbeddingShardConfig config = three_row_shard();
  config.num_trainers = 2;
  EmbeddingShard shard(config, std::vector<int64_t>{0, 1, 2});
  EXPECT_EQ(ask(shard, frame(shard_wire::Op::kPush, 0, 0, 0)).status, runtime::wire::kShardReplyOk);
  const Answer a = ask(shard, frame(shard_wire::Op::kRead, 0, 1, 0, {0}));
  EXPECT_EQ(a.status, runtime::wire::kShardReplyRefused);
  EXPECT_NE(a.text.find("a trainer did not send its gradients"), std::string::npos) << a.text;
}

}  // namespace
}  // namespace partita
