// base/: array files, checksums, staging folders, deterministic randomness.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "base/array_file.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/random.h"
#include "base/staging_dir.h"
#include "base/subprocess.h"
#include "expect_error.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

using testing::error_of;

TEST(ArrayFileTest, RoundTripKeepsDtypeShapeAndData) {
  TempDir tmp;
  std::vector<float> values{1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
  write_array(tmp / "a.bin", {2, 3}, values.data());
  MappedArray a(tmp / "a.bin");
  EXPECT_EQ(a.dtype(), DType::kFloat32);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  auto view = a.as<float>();
  EXPECT_EQ(std::vector<float>(view.begin(), view.end()), values);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw_data()) % 64, 0u) << "data must be 64-byte aligned";
  EXPECT_NO_THROW(a.verify_checksum());
  EXPECT_NE(error_of([&] { a.as<int64_t>(); }).find("dtype is float32, expected int64"), std::string::npos);
}

TEST(ArrayFileTest, EmptyArrayRoundTrips) {
  TempDir tmp;
  write_array(tmp / "e.bin", std::vector<int64_t>{});
  MappedArray a(tmp / "e.bin");
  EXPECT_EQ(a.num_elements(), 0);
  EXPECT_TRUE(a.as<int64_t>().empty());
}

TEST(ArrayFileTest, ChunkedWritesEqualOneWrite) {
  TempDir tmp;
  std::vector<int64_t> values(1001);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i * i);
  write_array(tmp / "one.bin", values);
  ArrayWriter writer(tmp / "chunks.bin", DType::kInt64, {1001});
  writer.append(values.data(), 13);  // cut inside an element on purpose
  writer.append(reinterpret_cast<const char*>(values.data()) + 13, values.size() * 8 - 13);
  writer.finish();
  EXPECT_EQ(testing::read_text(tmp / "one.bin"), testing::read_text(tmp / "chunks.bin"));
}

TEST(ArrayFileTest, WriterRejectsWrongAmountOfData) {
  TempDir tmp;
  ArrayWriter short_writer(tmp / "s.bin", DType::kInt64, {4});
  short_writer.append(std::vector<int64_t>{1, 2, 3}.data(), 24);
  EXPECT_THROW(short_writer.finish(), Error);
  ArrayWriter long_writer(tmp / "l.bin", DType::kInt32, {1});
  EXPECT_THROW(long_writer.append(std::vector<int32_t>{1, 2}.data(), 8), Error);
}

TEST(ArrayFileTest, UnfinishedFileIsNotValid) {
  TempDir tmp;
  {
    ArrayWriter writer(tmp / "u.bin", DType::kInt64, {2});
    writer.append(std::vector<int64_t>{1, 2}.data(), 16);
  }  // destroyed without finish(), as when a write is interrupted
  EXPECT_NE(error_of([&] { MappedArray a(tmp / "u.bin"); }).find("bad magic"), std::string::npos);
}

class CorruptArrayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<int64_t> values(100, 42);
    write_array(path(), values);
  }
  std::string path() const { return tmp_ / "c.bin"; }
  void patch(size_t offset, const std::string& bytes) {
    std::fstream f(path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string open_error() {
    return error_of([&] { MappedArray a(path()); });
  }
  TempDir tmp_;
};

TEST_F(CorruptArrayTest, TruncationIsDetectedAndNamed) {
  fs::resize_file(path(), 64 + 8 * 99);
  std::string e = open_error();
  EXPECT_NE(e.find(path()), std::string::npos) << e;
  EXPECT_NE(e.find("size mismatch"), std::string::npos) << e;
  fs::resize_file(path(), 10);
  EXPECT_NE(open_error().find("truncated"), std::string::npos);
}

TEST_F(CorruptArrayTest, BadMagicVersionAndDtypeAreDetected) {
  patch(0, "NOTARRAY");
  EXPECT_NE(open_error().find("bad magic"), std::string::npos);
  SetUp();
  patch(8, std::string("\x07\x00\x00\x00", 4));
  EXPECT_NE(open_error().find("unsupported array format version 7"), std::string::npos);
  SetUp();
  patch(12, std::string("\x63\x00\x00\x00", 4));
  EXPECT_NE(open_error().find("invalid dtype code 99"), std::string::npos);
  SetUp();
  patch(24, std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8));  // shape[0] = -1
  EXPECT_NE(open_error().find("invalid shape"), std::string::npos);
}

TEST_F(CorruptArrayTest, ShapeWhoseSizeWrapsAroundIsRejected) {
  // (2^61 + 100) int64 = 2^64 + 800 bytes: wrapped to 64 bits, exactly the file's 800.
  int64_t huge = (int64_t{1} << 61) + 100;
  patch(24, std::string(reinterpret_cast<const char*>(&huge), 8));
  std::string e = open_error();
  EXPECT_NE(e.find("invalid shape"), std::string::npos) << e;
}

TEST_F(CorruptArrayTest, FlippedDataBitFailsTheChecksum) {
  patch(64 + 8 * 50, "\x01");
  MappedArray a(path());  // structure is intact
  std::string e = error_of([&] { a.verify_checksum(); });
  EXPECT_NE(e.find("checksum mismatch"), std::string::npos) << e;
  EXPECT_NE(e.find(path()), std::string::npos) << e;
}

// A file truncated under its mapping (a partition rewritten while a job runs): the next
// read of a lost page raised SIGBUS and the process died without a word. Now it exits 1
// naming the file.
TEST(ArrayFileDeathTest, ReadingAFileTruncatedWhileMappedNamesIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir tmp;
  const std::string path = tmp / "x.bin";
  write_array(path, std::vector<float>(1 << 16, 1.0f));
  MappedArray a(path);
  const Span<const float> values = a.as<float>();
  EXPECT_EXIT(
      {
        std::filesystem::resize_file(path, 64);  // the header only: every data page is gone
        std::filesystem::remove_all(tmp.path());  // the mapping stays; nothing is left behind
        volatile float sink = values[values.size() - 1];
        (void)sink;
      },
      // The death test re-runs this test in a new process: its own temporary folder, which
      // it removes before it dies (the process ends without running destructors).
      ::testing::ExitedWithCode(1), "partita: error: /.*/x.bin: the file was truncated while mapped");
}

// A fault outside every registered mapping still ends the process with SIGBUS.
TEST(ArrayFileDeathTest, OtherBusErrorsKeepTheirSignal) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir tmp;
  const std::string path = tmp / "x.bin";
  write_array(path, std::vector<float>(1 << 16, 1.0f));
  { MappedArray registers_the_handler(path); }
  EXPECT_EXIT(
      {
        ScopedFd fd = open_for_reading(path);
        void* raw = ::mmap(nullptr, 1 << 18, PROT_READ, MAP_SHARED, fd.get(), 0);
        std::filesystem::resize_file(path, 64);
        std::filesystem::remove_all(tmp.path());
        volatile char sink = static_cast<const char*>(raw)[(1 << 18) - 1];
        (void)sink;
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

// A SIGBUS sent by another process (no fault to repeat) still ends the process with it.
TEST(ArrayFileDeathTest, ASentBusErrorStillEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir tmp;
  write_array(tmp / "x.bin", std::vector<float>(16, 1.0f));
  EXPECT_EXIT(
      {
        MappedArray registers_the_handler(tmp / "x.bin");
        std::filesystem::remove_all(tmp.path());
        ::raise(SIGBUS);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

// An append that fails halfway (a full disk) leaves the file as it was: readers of a
// metrics file never meet half a line.
TEST(FileUtilTest, AFailedAppendLeavesTheFileAsItWas) {
  testing::TempDir tmp;
  testing::SmallDisk disk(tmp / "disk", 64 * 1024);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const std::string path = tmp / "disk/metrics.jsonl";
  append_to_file(path, "{\"epoch\": 1}\n");
  EXPECT_THROW(append_to_file(path, std::string(256 * 1024, 'x')), Error);
  EXPECT_EQ(testing::read_text(path), "{\"epoch\": 1}\n");
}

TEST(StagingDirTest, OnlyCommitMakesTheTargetAppear) {
  TempDir tmp;
  {
    StagingDir staging(tmp / "out", false, "MARK");
    testing::write_text(staging.path() + "/file", "data");
    EXPECT_FALSE(fs::exists(tmp / "out"));
  }  // abandoned, as when an exception unwinds the writer
  EXPECT_TRUE(fs::is_empty(tmp.path())) << "the staging folder was left behind";
  {
    StagingDir staging(tmp / "out", false, "MARK");
    testing::write_text(staging.path() + "/file", "data");
    staging.commit();
  }
  EXPECT_EQ(testing::read_text(tmp / "out/file"), "data");
}

TEST(StagingDirTest, NeverReplacesAFolderThatIsNotItsOwnOutput) {
  TempDir tmp;
  fs::create_directory(tmp / "home");
  testing::write_text(tmp / "home/thesis.tex", "years of work");
  std::string e = error_of([&] { StagingDir s(tmp / "home", true, "MARK"); });
  EXPECT_NE(e.find("refusing to replace a folder without MARK"), std::string::npos) << e;
  EXPECT_EQ(testing::read_text(tmp / "home/thesis.tex"), "years of work");
  testing::write_text(tmp / "file", "x");
  EXPECT_NE(error_of([&] { StagingDir s(tmp / "file", true, "MARK"); }).find("not a folder"), std::string::npos);
}

TEST(StagingDirTest, AbandonedStagingFoldersAreRemoved) {
  TempDir tmp;
  // pid 2^22 + 1 is above Linux's pid_max ceiling: no such process can exist.
  std::string abandoned = tmp / "out.partita-tmp-4194305";
  fs::create_directory(abandoned);
  StagingDir staging(tmp / "out", false, "MARK");
  EXPECT_FALSE(fs::exists(abandoned));
}

TEST(StagingDirTest, ReplacesOnlyWithOverwrite) {
  TempDir tmp;
  fs::create_directory(tmp / "out");
  testing::write_text(tmp / "out/MARK", "");
  EXPECT_NE(error_of([&] { StagingDir s(tmp / "out", false, "MARK"); }).find("already exists"), std::string::npos);
  StagingDir staging(tmp / "out", true, "MARK");
  testing::write_text(staging.path() + "/new", "1");
  staging.commit();
  EXPECT_TRUE(fs::exists(tmp / "out/new"));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()), 1);
}

TEST(FileUtilTest, AtomicWriteReplacesWholeAndNamesTheFileOnError) {
  testing::TempDir tmp;
  const std::string path = tmp / "checkpoint.json";
  write_file_atomically(path, std::string("first version, longer than the second"));
  write_file_atomically(path, std::string("second"));
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second");
  for (const auto& entry : std::filesystem::directory_iterator(tmp.path())) {
    EXPECT_EQ(entry.path().filename(), "checkpoint.json") << "a temporary sibling was left behind";
  }
  const std::string nowhere = tmp / "no/such/folder/x.bin";
  try {
    write_file_atomically(nowhere, std::string("x"));
    FAIL() << "wrote into a folder that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no/such/folder"), std::string::npos) << e.what();
  }
}

TEST(RandomTest, StreamsAreFixedAcrossPlatforms) {
  // Pinned values: partitions, splits and samples depend on these streams never changing.
  Rng rng(42);
  EXPECT_EQ(rng.next(), 0xBDD732262FEB6E95ull);
  EXPECT_EQ(mix64(0), 0xE220A8397B1DCDAFull);
  EXPECT_NE(mix64(1, 2), mix64(2, 1));
  std::vector<int> v{0, 1, 2, 3, 4, 5, 6, 7};
  Rng shuffler(7);
  shuffle(v, shuffler);
  EXPECT_EQ(v, (std::vector<int>{7, 4, 6, 1, 2, 5, 0, 3}));
}

TEST(RandomTest, BelowIsUniformEnough) {
  Rng rng(1);
  std::vector<int> counts(10, 0);
  for (int i = 0; i < 100000; ++i) ++counts[rng.below(10)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}


TEST(StagingDirTest, TrailingSlashStagesBesideNotInside) {
  testing::TempDir tmp;
  StagingDir staging(tmp / "out/", false, "MARK");
  EXPECT_EQ(std::filesystem::path(staging.path()).parent_path(), std::filesystem::path(tmp.path()));
  staging.commit();
  EXPECT_TRUE(std::filesystem::is_directory(tmp / "out"));
}

}  // namespace
}  // namespace partita

namespace partita {
namespace {

// A child inherits none of its parent's descriptors beyond 0-2 (a head's driver must not
// hold the head's listening sockets): a descriptor this process opened without O_CLOEXEC is
// not among the child's.
TEST(ChildProcessTest, AChildInheritsNoDescriptorBeyondTheStandardOnes) {
  const int fd = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC: inherited by default
  ASSERT_GE(fd, 0);
  const int high = ::dup2(fd, 57);
  ASSERT_EQ(high, 57);
  ::close(fd);
  testing::TempDir tmp;
  const std::string log = tmp / "child.log";
  ChildProcess child({"/bin/ls", "/proc/self/fd"}, log);
  const ProcessResult r = child.wait(60);
  ::close(high);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> fds;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) fds.push_back(line);
  // 0-2, and the folder ls reads (3).
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2", "3"})) << r.out;
}

}  // namespace
}  // namespace partita
