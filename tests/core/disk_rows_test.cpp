// graph/disk_rows and a feature store's attributes on disk: the rows of the file, whichever
// way they are read (io_uring or pread, O_DIRECT or buffered, any queue depth); a file
// truncated under the reader is an error naming the file and the offset; a refused io_uring
// submission falls back to pread without losing or changing a row.
#include "graph/disk_rows.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/array_file.h"
#include "base/error.h"
#include "base/random.h"
#include "graph/feature_store.h"
#include "expect_error.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::TempDir;

using testing::error_of;

// A rows x width float matrix whose every value differs, written as an array file.
std::vector<float> write_matrix(const std::string& path, int64_t rows, int64_t width) {
  std::vector<float> values(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f + 1.0f;
  write_array(path, {rows, width}, values.data());
  return values;
}

std::vector<int64_t> random_ids(size_t count, int64_t begin, int64_t end, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> ids(count);
  for (auto& id : ids) id = begin + static_cast<int64_t>(rng.below(static_cast<uint64_t>(end - begin)));
  return ids;
}

std::vector<float> expected_rows(const std::vector<float>& values, int64_t width, int64_t begin,
                                 const std::vector<int64_t>& ids) {
  std::vector<float> out;
  for (int64_t id : ids) {
    auto row = values.begin() + (id - begin) * width;
    out.insert(out.end(), row, row + width);
  }
  return out;
}

std::vector<float> read_rows(const DiskRows& rows, const std::vector<int64_t>& ids, int64_t begin) {
  std::vector<float> out(ids.size() * rows.row_bytes() / sizeof(float));
  rows.read(ids, begin, reinterpret_cast<char*>(out.data()));
  return out;
}

// PARTITA_NO_IO_URING=1 while it lives.
struct NoIoUring {
  NoIoUring() { ::setenv("PARTITA_NO_IO_URING", "1", 1); }
  ~NoIoUring() { ::unsetenv("PARTITA_NO_IO_URING"); }
};

// Widths whose rows straddle block boundaries differently (4 floats: 16 bytes; 128: the
// benchmark's 512; 1100: rows over two 4 KB blocks), read every way.
TEST(DiskRowsTest, EveryWayOfReadingGivesTheFileRows) {
  TempDir tmp;
  for (int64_t width : {4, 128, 1100}) {
    const std::string path = tmp / ("x" + std::to_string(width) + ".arr");
    const std::vector<float> values = write_matrix(path, 1000, width);
    // Repeats, any order, more rows than any queue depth.
    const std::vector<int64_t> ids = random_ids(700, 50, 1050, static_cast<uint64_t>(width));
    const std::vector<float> expected = expected_rows(values, width, 50, ids);
    for (bool direct : {true, false}) {
      for (int depth : {1, 3, 64}) {
        SCOPED_TRACE("width " + std::to_string(width) + ", direct " + std::to_string(direct) + ", depth " +
                     std::to_string(depth));
        DiskReadOptions options;
        options.direct = direct;
        options.queue_depth = depth;
        DiskRows rows(MappedArray(path), options);
        EXPECT_EQ(rows.backend(), DiskBackend::kIoUring);
        EXPECT_EQ(rows.rows(), 1000);
        EXPECT_EQ(rows.row_bytes(), static_cast<size_t>(width) * 4);
        if (!direct) {
          EXPECT_FALSE(rows.direct());
        }
        EXPECT_GE(rows.request_bytes(), rows.row_bytes());
        if (rows.direct()) {
          EXPECT_EQ(rows.request_bytes() % rows.alignment(), 0u);
        }
        EXPECT_EQ(read_rows(rows, ids, 50), expected);
        EXPECT_EQ(read_rows(rows, ids, 50), expected) << "a second gather reuses the ring";
        EXPECT_EQ(read_rows(rows, {}, 50), std::vector<float>{});
      }
    }
    NoIoUring no_uring;
    DiskRows rows{MappedArray(path)};
    EXPECT_EQ(rows.backend(), DiskBackend::kPread);
    EXPECT_EQ(read_rows(rows, ids, 50), expected) << "pread, width " << width;
    DiskReadOptions buffered;
    buffered.direct = false;
    EXPECT_EQ(read_rows(DiskRows(MappedArray(path), buffered), ids, 50), expected) << "buffered pread";
  }
}

TEST(DiskRowsTest, ConcurrentGathersGetTheirOwnRows) {
  TempDir tmp;
  const std::vector<float> values = write_matrix(tmp / "x.arr", 2000, 32);
  DiskRows rows(MappedArray(tmp / "x.arr"));
  std::vector<std::vector<float>> got(4), want(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<int64_t> ids = random_ids(3000, 0, 2000, 100 + static_cast<uint64_t>(t));
      want[t] = expected_rows(values, 32, 0, ids);
      got[t] = read_rows(rows, ids, 0);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(got[t], want[t]) << "thread " << t;
}

// tmpfs: O_DIRECT since Linux 6.6, refused before (then rows are read buffered, exactly
// the row's bytes): the same rows either way.
TEST(DiskRowsTest, AFileOnTmpfsGivesTheSameRows) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm on this machine";
  std::string dir = "/dev/shm/partita-disk-rows-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/x.arr";
  const std::vector<float> values = write_matrix(path, 300, 128);
  const std::vector<int64_t> ids = random_ids(500, 0, 300, 7);
  {
    DiskRows rows{MappedArray(path)};
    EXPECT_EQ(rows.request_bytes() == rows.row_bytes(), !rows.direct());
    EXPECT_EQ(read_rows(rows, ids, 0), expected_rows(values, 128, 0, ids));
  }
  std::filesystem::remove_all(dir);
}

// A file cut short after it was opened: the first row past the end is an error naming the
// file and that row's offset, with either backend and either kind of read.
TEST(DiskRowsTest, AShortReadNamesTheFileAndTheOffset) {
  TempDir tmp;
  const std::string path = tmp / "x.arr";
  write_matrix(path, 100, 128);
  for (bool uring : {true, false}) {
    for (bool direct : {true, false}) {
      SCOPED_TRACE(std::string(uring ? "io_uring" : "pread") + (direct ? ", direct" : ", buffered"));
      write_matrix(path, 100, 128);
      std::unique_ptr<NoIoUring> no_uring = uring ? nullptr : std::make_unique<NoIoUring>();
      DiskReadOptions options;
      options.direct = direct;
      options.queue_depth = 8;
      DiskRows rows(MappedArray(path), options);
      // 40 rows and half of the 41st remain.
      ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(sizeof(ArrayHeader) + 40 * 512 + 256)), 0);
      EXPECT_EQ(read_rows(rows, {3, 39, 0}, 0).size(), 3u * 128) << "rows before the cut still read";
      const std::string error = error_of([&] { read_rows(rows, {1, 2, 41, 5}, 0); });
      EXPECT_NE(error.find(path), std::string::npos) << error;
      EXPECT_NE(error.find("short read at offset " + std::to_string(sizeof(ArrayHeader) + 41 * 512)), std::string::npos)
          << error;
      const std::string partial = error_of([&] { read_rows(rows, {40}, 0); });
      EXPECT_NE(partial.find("short read at offset " + std::to_string(sizeof(ArrayHeader) + 40 * 512) + ": 256 of 512"),
                std::string::npos)
          << partial;
      EXPECT_EQ(read_rows(rows, {39}, 0).size(), 128u) << "the reader still works after the error";
    }
  }
}

// The kernel refusing a submission mid-gather (injected): the gather still gives every row,
// and the reader stays on pread.
TEST(DiskRowsTest, ARefusedSubmissionFallsBackToPreadWithTheSameRows) {
  TempDir tmp;
  const std::vector<float> values = write_matrix(tmp / "x.arr", 1000, 128);
  const std::vector<int64_t> ids = random_ids(400, 0, 1000, 3);
  const std::vector<float> expected = expected_rows(values, 128, 0, ids);
  for (int fail : {1, 3}) {
    SCOPED_TRACE("submission " + std::to_string(fail) + " fails");
    DiskReadOptions options;
    options.queue_depth = 16;
    options.merge_gap_bytes = 0;  // a read per few rows: several submissions
    options.fail_submission = fail;
    DiskRows rows(MappedArray(tmp / "x.arr"), options);
    EXPECT_EQ(rows.backend(), DiskBackend::kIoUring);
    EXPECT_EQ(read_rows(rows, ids, 0), expected);
    EXPECT_EQ(rows.backend(), DiskBackend::kPread);
    EXPECT_EQ(read_rows(rows, ids, 0), expected);
  }
}

// The kernel completing a read with fewer bytes than asked (injected): the rest is read
// from where it stopped and the gather gives every row, still on io_uring; in a file cut
// short, what is then still missing is an error naming the file and the row's offset.
TEST(DiskRowsTest, AShortCompletionIsReadToItsEnd) {
  TempDir tmp;
  const std::string path = tmp / "x.arr";
  const std::vector<float> values = write_matrix(path, 1000, 128);
  const std::vector<int64_t> ids = random_ids(400, 0, 1000, 5);
  const std::vector<float> expected = expected_rows(values, 128, 0, ids);
  for (bool direct : {true, false}) {
    for (int cut : {1, 4}) {
      SCOPED_TRACE(std::string(direct ? "direct" : "buffered") + ", completion " + std::to_string(cut) + " short");
      DiskReadOptions options;
      options.direct = direct;
      options.queue_depth = 16;
      options.short_completion = cut;
      DiskRows rows(MappedArray(path), options);
      EXPECT_EQ(read_rows(rows, ids, 0), expected);
      EXPECT_EQ(rows.backend(), DiskBackend::kIoUring);
    }
  }
  DiskReadOptions options;
  options.direct = false;
  options.short_completion = 1;
  DiskRows rows(MappedArray(path), options);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(sizeof(ArrayHeader) + 40 * 512 + 256)), 0);
  const std::string error = error_of([&] { read_rows(rows, {40}, 0); });
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("short read at offset " + std::to_string(sizeof(ArrayHeader) + 40 * 512) + ": 256 of 512"),
            std::string::npos)
      << error;
}

uint64_t at_row(int64_t row) { return sizeof(ArrayHeader) + static_cast<uint64_t>(row) * 512; }

// Rows whose spans touch or overlap, repeats, and rows less than the merge gap apart share
// one read of at most 64 KB; reads go in file order; the rows still land at their positions.
TEST(DiskRowsTest, NeighbouringAndRepeatedRowsShareOneRead) {
  TempDir tmp;
  const std::vector<float> values = write_matrix(tmp / "x.arr", 1000, 128);
  std::vector<int64_t> ids{901, 12, 500, 10, 12, 11, 900, 505};  // 500 and 505: 2 KB apart
  for (int64_t r = 600; r < 800; ++r) ids.push_back(r);  // 100 KB of neighbours: two reads
  for (bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "direct" : "buffered");
    DiskReadOptions options;
    options.direct = direct;
    options.merge_gap_bytes = 0;
    EXPECT_EQ(DiskRows(MappedArray(tmp / "x.arr"), options).requests(ids, 0).size(), 6u) << "500 and 505 apart";
    options.merge_gap_bytes = 4096;
    DiskRows rows(MappedArray(tmp / "x.arr"), options);
    const std::vector<DiskRequest> reads = rows.requests(ids, 0);
    ASSERT_EQ(reads.size(), 5u);
    EXPECT_GE(reads[1].offset + reads[1].length, at_row(506)) << "500 and 505 in one read";
    const auto at = at_row;
    EXPECT_LE(reads[0].offset, at(10));
    EXPECT_GE(reads[0].offset + reads[0].length, at(13)) << "rows 10-12 and the repeat in one read";
    EXPECT_LE(reads[1].offset, at(500));
    EXPECT_LE(reads[2].offset, at(600));
    EXPECT_EQ(reads[2].length, 64u << 10);
    EXPECT_GE(reads[3].offset + reads[3].length, at(800));
    EXPECT_GE(reads[4].offset + reads[4].length, at(902));
    for (size_t i = 1; i < reads.size(); ++i) EXPECT_GT(reads[i].offset, reads[i - 1].offset) << "file order";
    EXPECT_EQ(read_rows(rows, ids, 0), expected_rows(values, 128, 0, ids));
  }
}

TEST(DiskRowsTest, BadRowsAndOptionsAreErrors) {
  TempDir tmp;
  write_matrix(tmp / "x.arr", 10, 4);
  DiskRows rows(MappedArray(tmp / "x.arr"));
  const std::string error = error_of([&] { read_rows(rows, {100, 110}, 100); });
  EXPECT_NE(error.find("row 10 (id 110, position 1) is outside the file's 10 rows"), std::string::npos) << error;
  DiskReadOptions zero;
  zero.queue_depth = 0;
  EXPECT_THROW(DiskRows(MappedArray(tmp / "x.arr"), zero), UsageError);
  DiskReadOptions wide;
  wide.merge_gap_bytes = 1 << 20;
  EXPECT_THROW(DiskRows(MappedArray(tmp / "x.arr"), wide), UsageError);
}

// A feature store's attribute on disk: described by get() without data, gathered with the
// same rows and the same errors as the attribute in memory.
TEST(DiskRowsTest, AFeatureStoreGathersRowsOnDiskAsInMemory) {
  TempDir tmp;
  const std::vector<float> values = write_matrix(tmp / "x.arr", 500, 16);
  FeatureStore memory(100, 600, 0, 0), disk(100, 600, 0, 0);
  memory.put("node", "x", RowSpace::kNode, ArrayRef::from_vector(values, {500, 16}));
  disk.put_disk("node", "x", RowSpace::kNode, std::make_shared<const DiskRows>(MappedArray(tmp / "x.arr")));
  ASSERT_NE(disk.get("node", "x"), nullptr);
  EXPECT_EQ(disk.get("node", "x")->raw_data(), nullptr);
  EXPECT_EQ(disk.get("node", "x")->shape(), (std::vector<int64_t>{500, 16}));
  EXPECT_EQ(disk.get("node", "x")->row_bytes(), 64u);
  EXPECT_NE(disk.disk_rows("node", "x"), nullptr);
  EXPECT_EQ(memory.disk_rows("node", "x"), nullptr);
  const std::vector<int64_t> ids = random_ids(2000, 100, 600, 11);
  std::vector<float> a, b;
  memory.gather_as("node", "x", ids, a);
  disk.gather_as("node", "x", ids, b, 2);
  EXPECT_EQ(a, b);
  const std::vector<int64_t> bad{150, 99};
  EXPECT_EQ(error_of([&] { memory.gather_as("node", "x", bad, a); }),
            error_of([&] { disk.gather_as("node", "x", bad, b); }));
  FeatureStore other_range(0, 10, 0, 0);
  EXPECT_THROW(other_range.put_disk("node", "x", RowSpace::kNode,
                                    std::make_shared<const DiskRows>(MappedArray(tmp / "x.arr"))),
               Error)
      << "checked against the range as put() is";
}

}  // namespace
}  // namespace partita
