// graph/feature_store: put/get/remove by (group, name) and the row gather, checked against
// a plain per-row copy for every row width the kernels treat differently.
#include "graph/feature_store.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>

#include "base/array_file.h"
#include "base/error.h"
#include "base/random.h"
#include "expect_error.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::TempDir;

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

using testing::error_of;

// Values that differ in every row and column, so a wrong row or a shifted copy shows.
template <typename T>
std::vector<T> distinct_values(int64_t rows, int64_t width) {
  std::vector<T> values(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(i * 3 + 1);
  return values;
}

std::vector<int64_t> random_ids(size_t count, int64_t begin, int64_t end, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> ids(count);
  for (auto& id : ids) id = begin + static_cast<int64_t>(rng.below(end - begin));
  return ids;
}

// The obvious gather, one row at a time.
template <typename T>
std::vector<T> reference_gather(const std::vector<T>& values, int64_t width, int64_t begin,
                                const std::vector<int64_t>& ids) {
  std::vector<T> out;
  for (int64_t id : ids) {
    auto row = values.begin() + (id - begin) * width;
    out.insert(out.end(), row, row + width);
  }
  return out;
}

// A buffer whose data starts `offset` bytes past a 64-byte boundary: the streaming kernel
// handles each alignment differently.
class Buffer {
 public:
  Buffer(size_t bytes, size_t offset)
      : memory_(static_cast<char*>(std::aligned_alloc(64, (bytes + offset + 63) / 64 * 64)),
                &std::free),
        data_(memory_.get() + offset),
        bytes_(bytes) {
    std::memset(data_, 0xAB, bytes);
  }
  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <typename T>
  std::vector<T> as() const {
    std::vector<T> values(bytes_ / sizeof(T));
    std::memcpy(values.data(), data_, bytes_);
    return values;
  }

 private:
  std::unique_ptr<char, decltype(&std::free)> memory_;
  char* data_;
  size_t bytes_;
};

constexpr int64_t kBegin = 1000;

// Gathers `ids` of a [rows, width] array of T stored as node/a with 1, 2 and all threads,
// and checks each against the reference.
template <typename T>
void expect_gather_matches(int64_t rows, int64_t width, const std::vector<int64_t>& ids,
                           size_t out_offset = 0) {
  std::vector<T> values = distinct_values<T>(rows, width);
  FeatureStore store(kBegin, kBegin + rows, 0, 0);
  store.put("node", "a", RowSpace::kNode,
            ArrayRef::from_vector(values, width == 1 ? std::vector<int64_t>{rows}
                                                     : std::vector<int64_t>{rows, width}));
  std::vector<T> expected = reference_gather(values, width, kBegin, ids);
  for (int threads : {1, 2, 0}) {
    Buffer out(expected.size() * sizeof(T), out_offset);
    store.gather("node", "a", ids, out.data(), out.bytes(), threads);
    EXPECT_EQ(out.as<T>(), expected) << "threads " << threads << ", width " << width;
  }
}

TEST(FeatureStoreTest, PutGetContainsAndKeys) {
  FeatureStore store(10, 13, 50, 52);
  store.put("node", "x", RowSpace::kNode,
            ArrayRef::from_vector(distinct_values<float>(3, 2), {3, 2}));
  store.put("node", "y", RowSpace::kNode, ArrayRef::from_vector(std::vector<int64_t>{0, 1, 2}));
  store.put("edge", "time", RowSpace::kEdge, ArrayRef::from_vector(std::vector<int64_t>{5, 6}));

  const ArrayRef* x = store.get("node", "x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->dtype(), DType::kFloat32);
  EXPECT_EQ(x->shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(store.contains("edge", "time"));
  EXPECT_FALSE(store.contains("edge", "x"));
  EXPECT_EQ(store.get("node", "z"), nullptr);
  using Keys = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(store.keys(), (Keys{{"edge", "time"}, {"node", "x"}, {"node", "y"}}));
}

TEST(FeatureStoreTest, PutReplacesAndRemoveDeletes) {
  FeatureStore store(0, 2, 0, 0);
  store.put("node", "y", RowSpace::kNode, ArrayRef::from_vector(std::vector<int64_t>{1, 2}));
  store.put("node", "y", RowSpace::kNode, ArrayRef::from_vector(std::vector<int32_t>{7, 8}));
  ASSERT_NE(store.get("node", "y"), nullptr);
  EXPECT_EQ(store.get("node", "y")->dtype(), DType::kInt32);
  EXPECT_EQ(store.keys().size(), 1u);

  EXPECT_TRUE(store.remove("node", "y"));
  EXPECT_FALSE(store.remove("node", "y"));
  EXPECT_FALSE(store.contains("node", "y"));
  EXPECT_TRUE(store.keys().empty());
}

TEST(FeatureStoreTest, PutRejectsRowCountMismatch) {
  FeatureStore store(100, 200, 0, 10);
  std::string error = error_of([&] {
    store.put("node", "x", RowSpace::kNode, ArrayRef::from_vector(std::vector<float>(99)));
  });
  EXPECT_TRUE(Contains(error, "put node/x"));
  EXPECT_TRUE(Contains(error, "the array has 99 rows"));
  EXPECT_TRUE(Contains(error, "node range [100, 200) has 100"));
  EXPECT_FALSE(store.contains("node", "x"));

  // Edge groups are sized by the edge range, not the node range.
  error = error_of([&] {
    store.put("edge", "w", RowSpace::kEdge, ArrayRef::from_vector(std::vector<float>(100)));
  });
  EXPECT_TRUE(Contains(error, "edge range [0, 10) has 10"));
}

TEST(FeatureStoreTest, PutRejectsRowsOfTheWrongSpace) {
  FeatureStore store(0, 3, 0, 3);
  auto three = [] { return ArrayRef::from_vector(std::vector<float>(3)); };
  EXPECT_TRUE(Contains(error_of([&] { store.put("node", "x", RowSpace::kEdge, three()); }),
                       "put node/x: group 'node' must hold node rows, not edge rows"));
  EXPECT_TRUE(Contains(error_of([&] { store.put("edge", "w", RowSpace::kNode, three()); }),
                       "group 'edge' must hold edge rows, not node rows"));
  store.put("paper", "x", RowSpace::kNode, three());
  EXPECT_TRUE(Contains(error_of([&] { store.put("paper", "t", RowSpace::kEdge, three()); }),
                       "group 'paper' already holds node rows (x), not edge rows"));
  EXPECT_TRUE(Contains(error_of([&] { store.put("paper", "y", RowSpace::kNode, ArrayRef()); }),
                       "put paper/y: the array is empty"));
}

TEST(FeatureStoreTest, ConstructorRejectsReversedRanges) {
  EXPECT_TRUE(
      Contains(error_of([] { FeatureStore(5, 4, 0, 0); }), "node range [5, 4) is reversed"));
  EXPECT_TRUE(
      Contains(error_of([] { FeatureStore(0, 0, 9, 1); }), "edge range [9, 1) is reversed"));
}

TEST(FeatureStoreTest, GatherFloatRowsAnyThreadCount) {
  // 512-byte rows; 6000 ids make a 3 MiB output, enough to be split over threads.
  expect_gather_matches<float>(4096, 128, random_ids(6000, kBegin, kBegin + 4096, 1));
  // A handful of ids stays single-threaded whatever `threads` says.
  expect_gather_matches<float>(4096, 128, {kBegin + 4095, kBegin, kBegin, kBegin + 17});
}

TEST(FeatureStoreTest, GatherScalarColumnsOfEveryWidth) {
  std::vector<int64_t> ids = random_ids(300000, kBegin, kBegin + 5000, 2);  // 2.4 MB of int64
  expect_gather_matches<int64_t>(5000, 1, ids);
  expect_gather_matches<int32_t>(5000, 1, ids);
  expect_gather_matches<double>(5000, 1, ids);
  expect_gather_matches<uint8_t>(5000, 1, ids);
}

TEST(FeatureStoreTest, GatherRowsOfOddWidths) {
  std::vector<int64_t> ids = random_ids(70000, kBegin, kBegin + 3000, 3);
  expect_gather_matches<double>(3000, 3, ids);   // 24-byte rows
  expect_gather_matches<int32_t>(3000, 5, ids);  // 20-byte rows
  expect_gather_matches<uint8_t>(3000, 2, ids);  // 2-byte rows
}

TEST(FeatureStoreTest, LargeGatherAtAnyOutputAlignment) {
  // 40000 rows of 512 bytes: 20 MB, past the size where streaming stores take over. An
  // output off 64-byte alignment makes every row end inside a cache line, which the
  // streaming kernel assembles from two rows.
  std::vector<int64_t> ids = random_ids(40000, kBegin, kBegin + 4096, 4);
  for (size_t offset : {0, 16, 1}) expect_gather_matches<float>(4096, 128, ids, offset);
  // Rows that are not whole lines (100 bytes) and rows of exactly one line.
  ids = random_ids(300000, kBegin, kBegin + 4096, 5);  // 30 and 19 MB
  for (size_t offset : {0, 8}) expect_gather_matches<float>(4096, 25, ids, offset);
  expect_gather_matches<float>(4096, 16, ids, 4);
}

TEST(FeatureStoreTest, GatherAsResizesAndChecksDtype) {
  FeatureStore store(0, 4, 0, 0);
  store.put("node", "x", RowSpace::kNode,
            ArrayRef::from_vector(distinct_values<float>(4, 3), {4, 3}));
  std::vector<float> out(100, -1.f);
  store.gather_as<float>("node", "x", std::vector<int64_t>{3, 1}, out);
  EXPECT_EQ(out, (std::vector<float>{28, 31, 34, 10, 13, 16}));

  std::vector<int64_t> wrong;
  EXPECT_TRUE(Contains(
      error_of([&] { store.gather_as<int64_t>("node", "x", std::vector<int64_t>{0}, wrong); }),
      "gather_as node/x: dtype is float32, requested int64"));
  EXPECT_TRUE(Contains(
      error_of([&] { store.gather_as<float>("node", "nope", std::vector<int64_t>{0}, out); }),
      "gather_as: no attribute node/nope"));
}

TEST(FeatureStoreTest, GatherFromMemoryMappedArray) {
  TempDir tmp;
  const int64_t rows = 2000, width = 64;
  std::vector<float> values = distinct_values<float>(rows, width);
  write_array(tmp / "x.bin", {rows, width}, values.data());
  FeatureStore store(kBegin, kBegin + rows, 0, 0);
  store.put("node", "x", RowSpace::kNode, ArrayRef::from_mapped(MappedArray(tmp / "x.bin")));

  std::vector<int64_t> ids = random_ids(20000, kBegin, kBegin + rows, 6);
  std::vector<float> single, parallel;
  store.gather_as<float>("node", "x", ids, single, 1);
  store.gather_as<float>("node", "x", ids, parallel, 2);
  EXPECT_EQ(single, reference_gather(values, width, kBegin, ids));
  EXPECT_EQ(parallel, single);
}

TEST(FeatureStoreTest, EdgeGroupsAreIndexedByGlobalEdgeId) {
  FeatureStore store(0, 3, 500, 505);
  store.put("edge", "w", RowSpace::kEdge,
            ArrayRef::from_vector(std::vector<double>{.0, .1, .2, .3, .4}));
  store.put("cites", "time", RowSpace::kEdge,
            ArrayRef::from_vector(std::vector<int64_t>{10, 11, 12, 13, 14}));
  std::vector<double> w;
  store.gather_as<double>("edge", "w", std::vector<int64_t>{504, 500, 502}, w);
  EXPECT_EQ(w, (std::vector<double>{.4, .0, .2}));
  std::vector<int64_t> time;
  store.gather_as<int64_t>("cites", "time", std::vector<int64_t>{501, 501}, time);
  EXPECT_EQ(time, (std::vector<int64_t>{11, 11}));
  // A node id is not an edge id.
  EXPECT_TRUE(
      Contains(error_of([&] { store.gather_as<double>("edge", "w", std::vector<int64_t>{2}, w); }),
               "global id 2 (position 0) is outside this partition's edge range [500, 505)"));
}

TEST(FeatureStoreTest, GatherErrorsNameTheProblem) {
  FeatureStore store(100, 200, 0, 0);
  store.put("node", "x", RowSpace::kNode,
            ArrayRef::from_vector(distinct_values<float>(100, 4), {100, 4}));
  std::vector<float> out(64);
  auto gather = [&](std::vector<int64_t> ids, size_t bytes, const std::string& name = "x") {
    return error_of([&] { store.gather("node", name, ids, out.data(), bytes, 1); });
  };
  EXPECT_TRUE(Contains(gather({100}, 16, "y"), "gather: no attribute node/y (stored: node/x)"));
  EXPECT_TRUE(Contains(gather({150, 99, 300}, 48),
                       "gather node/x: global id 99 (position 1) is outside this partition's "
                       "node range [100, 200)"));
  EXPECT_TRUE(Contains(gather({150, 199, 200}, 48), "global id 200 (position 2) is outside"));
  EXPECT_TRUE(Contains(gather({-5}, 16), "global id -5 (position 0)"));
  EXPECT_TRUE(Contains(gather({100, 101}, 16),
                       "gather node/x: output buffer has 16 bytes, expected 32 (2 ids x 16 "
                       "bytes per row)"));
  EXPECT_EQ(gather({100, 199}, 32), "");
  EXPECT_EQ(gather({}, 0), "");
}

TEST(FeatureStoreTest, ParallelGatherReportsTheFirstBadId) {
  const int64_t rows = 1000;
  FeatureStore store(0, rows, 0, 0);
  store.put("node", "x", RowSpace::kNode,
            ArrayRef::from_vector(distinct_values<float>(rows, 128), {rows, 128}));
  // 4096 rows of 512 bytes (2 MiB) split over two threads; one bad id in each half, the
  // second half's finishing first is as likely as not.
  std::vector<int64_t> ids = random_ids(4096, 0, rows, 7);
  ids[3000] = rows + 5;
  ids[1000] = -1;
  std::vector<float> out;
  for (int threads : {1, 2}) {
    EXPECT_TRUE(Contains(error_of([&] { store.gather_as<float>("node", "x", ids, out, threads); }),
                         "global id -1 (position 1000)"))
        << "threads " << threads;
  }
}

TEST(FeatureStoreTest, StreamingGatherReportsTheFirstBadId) {
  const int64_t rows = 4096;
  FeatureStore store(0, rows, 0, 0);
  store.put("node", "x", RowSpace::kNode,
            ArrayRef::from_vector(distinct_values<float>(rows, 128), {rows, 128}));
  // 20 MB of output; with two threads the bad id at 20000 is the first of the second slice.
  std::vector<int64_t> ids = random_ids(40000, 0, rows, 8);
  ids[35000] = rows;
  ids[20000] = rows + 1;
  for (size_t offset : {0, 16}) {
    Buffer out(ids.size() * 512, offset);
    for (int threads : {1, 2}) {
      EXPECT_TRUE(Contains(
          error_of([&] { store.gather("node", "x", ids, out.data(), out.bytes(), threads); }),
          "global id 4097 (position 20000)"))
          << "threads " << threads << ", offset " << offset;
    }
  }
  ids[0] = -3;
  Buffer out(ids.size() * 512, 0);
  EXPECT_TRUE(
      Contains(error_of([&] { store.gather("node", "x", ids, out.data(), out.bytes(), 1); }),
               "global id -3 (position 0)"));
}

}  // namespace
}  // namespace partita
