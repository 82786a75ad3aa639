// The on-disk embedding table and its partition buffer (embeddings/embedding_partitions.h,
// embeddings/partition_buffer.h): the budget of c resident partitions holds at every swap of
// a whole walk with prefetching; what the walk wrote reaches the files (a re-read table
// equals the in-memory one); corrupt, short and mismatched files and unwritable folders
// are errors naming the file, the offset or the folder.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "embeddings/bucket_order.h"
#include "embeddings/embedding_partitions.h"
#include "embeddings/embedding_shard.h"
#include "embeddings/partition_buffer.h"
#include "expect_error.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

EmbeddingPartitions::Shape shape(int64_t entities, int p, int64_t dim) {
  EmbeddingPartitions::Shape s;
  s.num_entities = entities;
  s.num_partitions = p;
  s.dim = dim;
  return s;
}

using testing::error_of;

TEST(EmbeddingPartitionsTest, RangesCoverTheEntitiesAndStartFromTheSharedInitialValues) {
  testing::TempDir tmp;
  const EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(103, 4, 3), 9, 0.5, 0.25);
  int64_t covered = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(table.begin(i), covered);
    covered = table.end(i);
    for (int64_t id = table.begin(i); id < table.end(i); ++id) ASSERT_EQ(table.partition_of(id), i);
  }
  EXPECT_EQ(covered, 103);
  std::vector<float> payload(table.payload_bytes(2) / sizeof(float));
  table.read(2, Span<float>(payload));
  std::vector<float> expected(3);
  initial_embedding_row(9, 0.5, table.begin(2) + 1, 3, expected.data());
  EXPECT_EQ(std::vector<float>(payload.begin() + 3, payload.begin() + 6), expected);
  EXPECT_EQ(payload.back(), 0.25f);  // accumulators
  std::vector<float> row(3);
  const int64_t id = table.begin(2) + 1;
  table.read_rows(Span<const int64_t>(&id, 1), row.data());
  EXPECT_EQ(row, expected);
}

TEST(EmbeddingPartitionsTest, CorruptShortAndForeignFilesAreNamedWithTheOffset) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(40, 2, 4), 1, 0.1, 0.0);
  std::vector<float> payload(table.payload_bytes(1) / sizeof(float));
  {
    std::fstream f(table.file(1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 + 17);
    f.put('\x7f');
  }
  std::string what = error_of([&] { table.read(1, Span<float>(payload)); });
  EXPECT_NE(what.find(table.file(1)), std::string::npos) << what;
  EXPECT_NE(what.find("at offset 64"), std::string::npos) << what;
  EXPECT_NE(what.find("checksum mismatch"), std::string::npos) << what;

  fs::resize_file(table.file(0), 64 + 100);
  what = error_of([&] { table.read(0, Span<float>(payload)); });
  EXPECT_NE(what.find(table.file(0)), std::string::npos) << what;
  EXPECT_NE(what.find("short read at offset 164"), std::string::npos) << what;

  // A table of another shape in the folder.
  what = error_of([&] { EmbeddingPartitions::open(tmp / "t", shape(40, 2, 8)); });
  EXPECT_NE(what.find("of dim 4; expected partition 0, [0, 20) of dim 8"), std::string::npos) << what;
}

TEST(EmbeddingPartitionsTest, AnUnwritableFolderIsNamed) {
  testing::TempDir tmp;
  testing::write_text(tmp / "a-file", "not a folder");
  const std::string what =
      error_of([&] { EmbeddingPartitions::create(tmp / "a-file/embeddings", shape(10, 2, 2), 1, 0.1, 0.0); });
  EXPECT_NE(what.find("embeddings: cannot create the folder " + (tmp / "a-file/embeddings")), std::string::npos) << what;
  EXPECT_THROW(EmbeddingPartitions::create(tmp / "t", shape(10, 11, 2), 1, 0.1, 0.0), UsageError);
  EXPECT_THROW(EmbeddingPartitions::create(tmp / "t", shape(10, 0, 2), 1, 0.1, 0.0), UsageError);
}

// A write-back cut short (here by a file size limit, as a full disk or a crash mid-write
// would cut it) leaves the partition as it was before, whole: not a torn payload under the
// old header, which open() would accept and read_rows() return.
TEST(EmbeddingPartitionsTest, AWriteCutShortLeavesThePreviousPartitionWhole) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(40, 2, 4), 1, 0.1, 0.0);
  std::vector<float> before(table.payload_bytes(1) / sizeof(float));
  table.read(1, Span<float>(before));
  const std::vector<float> trained(before.size(), 7.0f);

  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 64 + 100;  // the header and 100 of the payload's 640 bytes
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string what = error_of([&] { table.write(1, Span<const float>(trained)); });
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(what.find(table.file(1)), std::string::npos) << what;

  std::vector<float> after(before.size());
  EXPECT_EQ(error_of([&] { table.read(1, Span<float>(after)); }), "") << "no error";
  EXPECT_EQ(after, before);
  const int64_t id = table.begin(1);
  std::vector<float> row(4);
  EmbeddingPartitions::open(tmp / "t", shape(40, 2, 4)).read_rows(Span<const int64_t>(&id, 1), row.data());
  EXPECT_EQ(row, std::vector<float>(before.begin(), before.begin() + 4));
  EXPECT_FALSE(fs::exists(table.file(1) + ".tmp"));

  // A write that completes reaches the open table and the files.
  table.write(1, Span<const float>(trained));
  table.read(1, Span<float>(after));
  EXPECT_EQ(after, trained);
  EmbeddingPartitions::open(tmp / "t", shape(40, 2, 4)).read(1, Span<float>(after));
  EXPECT_EQ(after, trained);
}

// A whole BETA walk over physical partitions of g logical ones each (as a knowledge-graph
// job walks its table: embeddings/bucket_epoch.h), prefetching every logical partition of the
// next swap: at every state the residents are exactly the state's partitions and never more
// than c physical ones, the staged ones never more than one physical partition; every swap's
// reads are the prefetch's; each state adds to every row of its buckets' partitions, as a
// shadow table in memory does; after flush the files equal the shadow, with and without
// prefetching.
TEST(PartitionBufferTest, AWalkKeepsTheBudgetAndItsWritesReachTheFiles) {
  struct Case {
    int p, c, g;
    bool prefetch;
  };
  for (const Case& t : std::vector<Case>{{4, 2, 1, true}, {8, 4, 1, true}, {5, 3, 1, true}, {3, 3, 1, true},
                                         {8, 4, 4, true}, {4, 2, 3, true}, {8, 4, 4, false}}) {
    SCOPED_TRACE("p = " + std::to_string(t.p) + ", c = " + std::to_string(t.c) + ", " + std::to_string(t.g) +
                 " logical each, prefetch " + std::to_string(t.prefetch));
    const int l = t.p * t.g, capacity = t.c * t.g;
    testing::TempDir tmp;
    const int64_t dim = 5;
    EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(61 * t.g, l, dim), 4, 1.0, 0.0);
    std::vector<std::vector<float>> shadow(static_cast<size_t>(l));
    for (int i = 0; i < l; ++i) {
      shadow[i].resize(table.payload_bytes(i) / sizeof(float));
      table.read(i, Span<float>(shadow[i]));
    }
    PartitionBuffer buffer(table, capacity, t.prefetch ? t.g : 0, milliseconds(60000));
    const BucketOrder order = beta_order(t.p, t.c);
    auto logical = [&](const std::vector<int>& physical) {
      std::vector<int> out;
      for (int x : physical) {
        for (int j = 0; j < t.g; ++j) out.push_back(x * t.g + j);
      }
      return out;
    };
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (size_t k = 0; k < order.states.size(); ++k) {
        const std::vector<int> state = logical(order.states[k]);
        buffer.enter(state);
        ASSERT_LE(buffer.resident_count(), capacity);
        for (int i = 0; i < l; ++i) {
          const bool in_state = std::find(state.begin(), state.end(), i) != state.end();
          ASSERT_EQ(buffer.resident(i), in_state) << "partition " << i << " in state " << k;
        }
        if (t.prefetch && k + 1 < order.states.size()) buffer.prefetch(logical(order.states[k + 1]));
        for (const auto& [a, b] : order.buckets[k]) {
          for (int part : logical({a, b})) {
            Span<float> values = buffer.values(part);
            Span<float> acc = buffer.accumulators(part);
            for (size_t j = 0; j < values.size(); ++j) {
              values[j] += 1.0f + a;
              acc[j] += 0.5f;
              shadow[part][j] += 1.0f + a;
              shadow[part][values.size() + j] += 0.5f;
            }
          }
        }
      }
      buffer.flush();
      EXPECT_EQ(buffer.resident_count(), 0);
    }
    EXPECT_EQ(buffer.stats().peak_resident, capacity);
    EXPECT_EQ(buffer.stats().swaps, 2 * order.swaps());
    // Every swap's g reads, and only those, came from the background reader.
    EXPECT_EQ(buffer.stats().prefetched, t.prefetch ? 2 * order.swaps() * t.g : 0);
    EXPECT_EQ(buffer.stats().peak_staged, t.prefetch && t.p > t.c ? t.g : 0);
    EXPECT_EQ(buffer.stats().reads, 2 * (capacity + order.swaps() * t.g));
    EXPECT_THROW(buffer.values(0), Error);  // nothing resident after flush
    const EmbeddingPartitions reread = EmbeddingPartitions::open(tmp / "t", shape(61 * t.g, l, dim));
    for (int i = 0; i < l; ++i) {
      std::vector<float> payload(reread.payload_bytes(i) / sizeof(float));
      reread.read(i, Span<float>(payload));
      EXPECT_EQ(payload, shadow[i]) << "partition " << i;
    }
  }
}

// A short or corrupt file met by the background reader, one of a swap's several files, is
// an error on the training thread naming the file and the offset; the reader reads none of
// the swap's files after it; once the file is whole again, the swap completes (the
// training thread reads what was not staged).
TEST(PartitionBufferTest, AShortOrCorruptFileMetWhilePrefetchingIsNamedWithItsOffset) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(80, 8, 2), 1, 0.1, 0.0);
  std::vector<std::vector<float>> whole(8);
  for (int i = 0; i < 8; ++i) {
    whole[i].resize(table.payload_bytes(i) / sizeof(float));
    table.read(i, Span<float>(whole[i]));
  }
  PartitionBuffer buffer(table, 4, 3, milliseconds(60000));
  buffer.enter({0, 1, 2, 3});
  fs::resize_file(table.file(5), 64 + 20);
  buffer.prefetch({4, 5, 6});
  std::string what = error_of([&] { buffer.enter({0, 4, 5, 6}); });
  EXPECT_NE(what.find("prefetching failed"), std::string::npos) << what;
  EXPECT_NE(what.find(table.file(5)), std::string::npos) << what;
  EXPECT_NE(what.find("short read at offset 84"), std::string::npos) << what;
  EXPECT_LE(buffer.resident_count(), 4);
  EXPECT_EQ(buffer.stats().prefetched, 0);
  EXPECT_EQ(buffer.stats().reads, 5);  // 0-3, and 4 staged: 5 failed, 6 never read

  table.write(5, Span<const float>(whole[5]));
  buffer.enter({0, 4, 5, 6});
  EXPECT_EQ(buffer.stats().prefetched, 1);  // 4, staged before the failure; 5 and 6 read now
  for (int part : {0, 4, 5, 6}) {
    const Span<float> values = buffer.values(part);
    EXPECT_EQ(std::vector<float>(values.begin(), values.end()),
              std::vector<float>(whole[part].begin(), whole[part].begin() + whole[part].size() / 2))
        << "partition " << part;
  }

  // A corrupt payload (the checksum) in the last file of the next swap.
  {
    std::fstream f(table.file(7), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 + 9);
    f.put('\x7f');
  }
  buffer.prefetch({1, 2, 7});
  what = error_of([&] { buffer.enter({0, 1, 2, 7}); });
  EXPECT_NE(what.find(table.file(7)), std::string::npos) << what;
  EXPECT_NE(what.find("checksum mismatch"), std::string::npos) << what;
  EXPECT_NE(what.find("at offset 64"), std::string::npos) << what;
  EXPECT_EQ(buffer.stats().peak_resident, 4);
  EXPECT_EQ(buffer.stats().peak_staged, 3);
  EXPECT_EQ(buffer.settle(), "");

  // More partitions than the staging area holds is refused, naming both counts.
  what = error_of([&] { buffer.prefetch({1, 2, 3, 4}); });
  EXPECT_NE(what.find("prefetching 4 partitions with 0 staged, the staging area holds 3"), std::string::npos) << what;
}

TEST(PartitionBufferTest, MoreThanTheBudgetIsRefused) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(20, 4, 2), 1, 0.1, 0.0);
  PartitionBuffer buffer(table, 2, 1, milliseconds(60000));
  const std::string what = error_of([&] { buffer.enter({0, 1, 2}); });
  EXPECT_NE(what.find("a state of 3 partitions, the buffer holds 2"), std::string::npos) << what;
  EXPECT_EQ(buffer.resident_count(), 0);
  EXPECT_THROW(PartitionBuffer(table, 1, 1, milliseconds(1000)), UsageError);
  EXPECT_THROW(PartitionBuffer(table, 5, 1, milliseconds(1000)), UsageError);
}

TEST(PartitionBufferTest, AFailedPrefetchIsReportedWhenThePartitionIsAdmitted) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(20, 4, 2), 1, 0.1, 0.0);
  PartitionBuffer buffer(table, 2, 1, milliseconds(60000));
  buffer.enter({0, 1});
  fs::resize_file(table.file(3), 10);
  buffer.prefetch({3});
  const std::string what = error_of([&] { buffer.enter({0, 3}); });
  EXPECT_NE(what.find("prefetching failed"), std::string::npos) << what;
  EXPECT_NE(what.find(table.file(3)), std::string::npos) << what;
}

// A partition whose read fails is not admitted, and does not keep the slot it was read
// into: once its file is whole again, the buffer fills all c slots.
TEST(PartitionBufferTest, AFailedReadLeavesItsSlotFree) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(30, 3, 2), 1, 0.1, 0.0);
  std::vector<float> whole(table.payload_bytes(1) / sizeof(float));
  table.read(1, Span<float>(whole));
  {
    std::fstream f(table.file(1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 + 5);
    f.put('\x7f');
  }
  PartitionBuffer buffer(table, 2, 1, milliseconds(60000));
  const std::string what = error_of([&] { buffer.enter({0, 1}); });
  EXPECT_NE(what.find("checksum mismatch"), std::string::npos) << what;
  EXPECT_TRUE(buffer.resident(0));
  EXPECT_FALSE(buffer.resident(1));
  EXPECT_EQ(buffer.resident_count(), 1);

  table.write(1, Span<const float>(whole));
  buffer.enter({0, 1});
  EXPECT_EQ(buffer.resident_count(), 2);
  const Span<float> values = buffer.values(1);
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), std::vector<float>(whole.begin(), whole.begin() + whole.size() / 2));
  buffer.enter({1, 2});
  EXPECT_EQ(buffer.resident_count(), 2);
  EXPECT_EQ(buffer.stats().peak_resident, 2);
}

// An epoch that fails midway (here the admission of a corrupt partition, read in the
// background) is settled: the trained residents reach the files, the buffer is empty, and
// the next walk starts from the files; a prefetch failure does not stop a flush.
TEST(PartitionBufferTest, AWalkThatFailsMidwayIsSettledIntoTheFiles) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(40, 4, 2), 1, 0.1, 0.0);
  auto file_values = [&](int part) {
    std::vector<float> payload(table.payload_bytes(part) / sizeof(float));
    table.read(part, Span<float>(payload));
    return payload;
  };
  PartitionBuffer buffer(table, 2, 1, milliseconds(60000));
  buffer.enter({0, 1});
  for (int part : {0, 1}) {
    for (float& v : buffer.values(part)) v += 1.0f;  // a state's training
  }
  std::vector<std::vector<float>> trained;
  for (int part : {0, 1}) {
    const Span<float> v = buffer.values(part), a = buffer.accumulators(part);
    std::vector<float> payload(v.begin(), v.end());
    payload.insert(payload.end(), a.begin(), a.end());
    trained.push_back(payload);
  }
  {
    std::fstream f(table.file(2), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(64 + 3);
    f.put('\x7f');
  }
  buffer.prefetch({2});
  const std::string what = error_of([&] { buffer.enter({1, 2}); });
  EXPECT_NE(what.find(table.file(2)), std::string::npos) << what;
  EXPECT_TRUE(buffer.resident(1));  // the failed state is half entered

  EXPECT_EQ(buffer.settle(), "");
  EXPECT_EQ(buffer.resident_count(), 0);
  EXPECT_EQ(file_values(0), trained[0]);
  EXPECT_EQ(file_values(1), trained[1]);
  // The next walk reads the files.
  buffer.enter({1, 3});
  const Span<float> again = buffer.values(1);
  EXPECT_EQ(std::vector<float>(again.begin(), again.end()),
            std::vector<float>(trained[1].begin(), trained[1].begin() + trained[1].size() / 2));
  // A failed prefetch concerns a partition the flush drops anyway.
  buffer.prefetch({2});
  EXPECT_NO_THROW(buffer.flush());
  EXPECT_EQ(buffer.resident_count(), 0);
  EXPECT_EQ(buffer.stats().peak_resident, 2);
}

// A write-back that fails while settling is reported, naming the file; the partition is
// dropped all the same and its file holds it as last written whole.
TEST(PartitionBufferTest, SettlingReportsAWriteThatFailsAndStillEmptiesTheBuffer) {
  testing::TempDir tmp;
  EmbeddingPartitions table = EmbeddingPartitions::create(tmp / "t", shape(40, 2, 4), 1, 0.1, 0.0);
  std::vector<float> before(table.payload_bytes(1) / sizeof(float));
  table.read(1, Span<float>(before));
  PartitionBuffer buffer(table, 2, 1, milliseconds(60000));
  buffer.enter({0, 1});
  for (float& v : buffer.values(1)) v = 7.0f;

  rlimit old_limit{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 64 + 100;
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string unsaved = buffer.settle();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(unsaved.find(table.file(0)), std::string::npos) << unsaved;
  EXPECT_NE(unsaved.find(table.file(1)), std::string::npos) << unsaved;
  EXPECT_EQ(buffer.resident_count(), 0);
  std::vector<float> after(before.size());
  EXPECT_EQ(error_of([&] { table.read(1, Span<float>(after)); }), "") << "no error";
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace partita
