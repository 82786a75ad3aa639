// Data staging between a server and a node's cache in one process, over the real transport
// on loopback: what a node relies on is that the folder it gets holds exactly the served
// bytes, that a cached unit is not copied again, that a damaged cached file is noticed
// (named) and fetched again, that a copy that does not match its manifest is an error naming
// the file and leaves nothing that looks valid, that a manifest from the network is checked,
// that the cache stays within its bound, and that all this holds while several requests
// are in flight.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "base/array_file.h"
#include "base/error.h"
#include "base/file_util.h"
#include "runtime/staging/folder_manifest.h"
#include "runtime/staging/stage_cache.h"
#include "runtime/staging/stage_server.h"

namespace partita::runtime {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class StagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "partita-staging-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "data" / "part0");
    fs::create_directories(root_ / "data" / "part1");
    write_file_atomically((root_ / "data" / "META.json").string(), std::string("{\"num_parts\": 2}"));
    write_array((root_ / "data" / "partition_book.bin").string(), std::vector<int64_t>{0, 10, 20});
    write_part(0, 3 << 20);  // 3 Mi floats: 12 MB, several reads and writes
    write_part(1, 1000);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write_part(int part, int64_t n, float base = 0) {
    std::vector<float> x(static_cast<size_t>(n));
    std::iota(x.begin(), x.end(), base + static_cast<float>(part));
    const fs::path dir = root_ / "data" / ("part" + std::to_string(part));
    write_array((dir / "x.bin").string(), DType::kFloat32, {n}, x.data());
    write_array((dir / "ids.bin").string(), std::vector<int64_t>{part, part + 1});
  }

  std::vector<ServedUnit> units(const std::vector<int>& parts) {
    std::vector<ServedUnit> served{{(root_ / "data").string(),
                                    describe_unit((root_ / "data").string(), "", {"META.json", "partition_book.bin"})}};
    for (int p : parts) {
      const std::string name = "part" + std::to_string(p);
      served.push_back({(root_ / "data" / name).string(), describe_unit((root_ / "data" / name).string(), name)});
    }
    return served;
  }

  StageOutcome stage(StageCache& cache, const std::vector<ServedUnit>& served) {
    std::vector<StagedUnit> manifest;
    for (const auto& s : served) manifest.push_back(s.unit);
    return cache.stage(manifest, server_.open(served), StageServer::kServerId);
  }

  StageCacheOptions options(uint64_t max_bytes = 0) {
    StageCacheOptions o;
    o.dir = (root_ / "cache").string();
    o.max_bytes = max_bytes;
    o.deadline = 30s;
    return o;
  }

  static void expect_same_file(const fs::path& a, const fs::path& b) {
    EXPECT_EQ(read_file(a.string()), read_file(b.string())) << a << " vs " << b;
  }

  static void flip_last_byte(const fs::path& file) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1, std::ios::end);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x5A);
    f.seekp(-1, std::ios::end);
    f.write(&c, 1);
  }

  fs::path root_;
  StageServer server_{"127.0.0.1", 30s};
};

TEST_F(StagingTest, StagesTheServedUnitsAndCopiesNothingTheSecondTime) {
  StageCache cache(options());
  const auto served = units({0});
  const StageOutcome first = stage(cache, served);
  const uint64_t bytes = served[0].unit.bytes() + served[1].unit.bytes();
  EXPECT_EQ(first.bytes_copied, bytes);
  EXPECT_EQ(first.files_copied, 4);
  EXPECT_EQ(first.units_copied, 2);
  EXPECT_EQ(first.units_reused, 0);
  const fs::path folder = first.folder;
  EXPECT_EQ(folder.parent_path().parent_path(), root_ / "cache");
  expect_same_file(folder / "META.json", root_ / "data" / "META.json");
  expect_same_file(folder / "partition_book.bin", root_ / "data" / "partition_book.bin");
  expect_same_file(folder / "part0" / "x.bin", root_ / "data" / "part0" / "x.bin");
  expect_same_file(folder / "part0" / "ids.bin", root_ / "data" / "part0" / "ids.bin");
  EXPECT_FALSE(fs::exists(folder / "part1")) << "only the units asked for";
  MappedArray x((folder / "part0" / "x.bin").string());
  x.verify_checksum();

  const StageOutcome again = stage(cache, served);
  EXPECT_EQ(again.bytes_copied, 0u);
  EXPECT_EQ(again.units_reused, 2);
  EXPECT_EQ(again.folder, first.folder);
  EXPECT_EQ(again.cache_bytes, cache.cached_bytes());

  // Another cache object on the same folder (a restarted daemon) reuses it too.
  StageCache restarted(options());
  EXPECT_EQ(stage(restarted, served).bytes_copied, 0u);
}

TEST_F(StagingTest, ADamagedCachedFileIsNamedAndFetchedAgain) {
  StageCache cache(options());
  const auto served = units({0});
  const StageOutcome first = stage(cache, served);
  const fs::path cached = fs::canonical(fs::path(first.folder) / "part0") / "x.bin";
  flip_last_byte(cached);
  const StageOutcome again = stage(cache, served);
  ASSERT_EQ(again.damaged.size(), 1u);
  EXPECT_NE(again.damaged[0].find(cached.string()), std::string::npos) << again.damaged[0];
  EXPECT_NE(again.damaged[0].find("data checksum mismatch"), std::string::npos) << again.damaged[0];
  EXPECT_EQ(again.bytes_copied, served[1].unit.bytes()) << "the damaged unit only";
  expect_same_file(fs::path(again.folder) / "part0" / "x.bin", root_ / "data" / "part0" / "x.bin");
}

TEST_F(StagingTest, ACopyThatDoesNotMatchItsManifestIsAnErrorNamingTheFileAndKeepsNothing) {
  StageCache cache(options());
  const auto served = units({1});
  write_part(1, 1000, 7);  // after it was described: what arrives is not what the manifest says
  try {
    stage(cache, served);
    FAIL() << "a corrupted copy was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("header checksum mismatch"), std::string::npos) << e.what();
  }
  const fs::path unit = root_ / "cache" / "units" / key_text(served[1].unit.key());
  EXPECT_FALSE(fs::exists(unit)) << "no unit under its key";
  for (const auto& entry : fs::directory_iterator(root_ / "cache" / "units")) {
    EXPECT_EQ(entry.path().filename().string().find(key_text(served[1].unit.key())), std::string::npos)
        << "a temporary copy was left: " << entry.path();
  }
  // Described again, the data stages.
  EXPECT_GT(stage(cache, units({1})).bytes_copied, 0u);
}

TEST_F(StagingTest, TheCacheKeepsWithinItsBoundLeastRecentlyUsedFirst) {
  const auto both = units({0, 1});
  // The top and part1 fit (with their MANIFEST.json files); part0 (12 MB) does not too.
  const uint64_t bound = both[0].unit.bytes() + both[2].unit.bytes() + (64 << 10);
  StageCache cache(options(bound));
  const StageOutcome big = stage(cache, units({0}));
  EXPECT_EQ(big.evicted_units, 0) << "a staging keeps what it uses, even over the bound";
  const StageOutcome small = stage(cache, units({1}));
  EXPECT_EQ(small.evicted_units, 1);
  EXPECT_LE(small.cache_bytes, bound);
  EXPECT_EQ(small.cache_bytes, cache.cached_bytes());
  EXPECT_FALSE(fs::exists(big.folder)) << "the folder that linked the evicted unit goes with it";
  EXPECT_TRUE(fs::exists(fs::path(small.folder) / "part1" / "x.bin"));
  // Asked again, part0 is fetched again.
  EXPECT_EQ(stage(cache, units({0})).bytes_copied, both[1].unit.bytes());
}

TEST_F(StagingTest, AManifestFromTheNetworkIsChecked) {
  const auto rejects = [](const std::string& json, const std::string& says) {
    try {
      units_from_json(json);
      ADD_FAILURE() << "accepted: " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  rejects("{}", "not a JSON array");
  rejects("[{\"mount\": \"\"}]", "needs a mount");
  rejects("[{\"mount\": \"..\", \"files\": []}]", "is not a plain name");
  rejects("[{\"mount\": \"a/b\", \"files\": []}]", "is not a plain name");
  rejects("[{\"mount\": \"\", \"files\": [{\"name\": \"../x\", \"bytes\": 1, \"checksum\": 2}]}]", "not a plain file name");
  rejects("[{\"mount\": \"\", \"files\": [{\"name\": \"x\", \"bytes\": -1, \"checksum\": 2}]}]", "unsigned numbers");
  rejects("[{\"mount\": \"\", \"files\": [{\"name\": \"b\", \"bytes\": 1, \"checksum\": 2}, "
          "{\"name\": \"a\", \"bytes\": 1, \"checksum\": 2}]}]",
          "not sorted and unique");
  rejects("[{\"mount\": \"p\", \"files\": []}, {\"mount\": \"p\", \"files\": []}]", "appears twice");
  const auto served = units({0, 1});
  std::vector<StagedUnit> manifest;
  for (const auto& s : served) manifest.push_back(s.unit);
  const std::vector<StagedUnit> back = units_from_json(units_to_json(manifest));
  ASSERT_EQ(back.size(), manifest.size());
  for (size_t u = 0; u < back.size(); ++u) EXPECT_EQ(back[u].key(), manifest[u].key());
}

// The driver serves every node at once, and a job whose every node reads every part has
// sessions of (nodes x parts x files per part) files: a session may not hold them all open.
TEST_F(StagingTest, AServerSessionHoldsFewFilesOpenWhateverItServes) {
  const fs::path many = root_ / "many";
  fs::create_directories(many);
  constexpr int kFiles = 200;
  for (int i = 0; i < kFiles; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "f%03d", i);
    write_file_atomically((many / name).string(), std::string(name) + " holds a few bytes");
  }
  const std::vector<ServedUnit> served{{many.string(), describe_unit(many.string(), "many")}};
  ASSERT_EQ(served[0].unit.files.size(), static_cast<size_t>(kFiles));
  StageCache cache(options());

  // Room for the channel's sockets and a few files, not for every served file at once.
  size_t open_now = 0;
  for ([[maybe_unused]] const auto& fd : fs::directory_iterator("/proc/self/fd")) ++open_now;
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit tight = before;
  tight.rlim_cur = open_now + 64;
  ASSERT_LT(tight.rlim_cur, open_now + kFiles);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  struct Restore {
    rlimit limit;
    ~Restore() { ::setrlimit(RLIMIT_NOFILE, &limit); }
  } restore{before};

  const StageOutcome outcome = stage(cache, served);
  EXPECT_EQ(outcome.files_copied, kFiles);
  for (const StagedFile& f : served[0].unit.files) expect_same_file(many / f.name, fs::path(outcome.folder) / "many" / f.name);
}

// A file named as the cache's own markers would be replaced by the marker after its check,
// and the job would read the marker in its place: such a manifest is refused, named.
TEST_F(StagingTest, AFileNamedAsTheCachesOwnIsRefusedNamingIt) {
  StageCache cache(options());
  const auto refused = [&](const fs::path& dir, const std::string& mount, const std::string& name) {
    const std::vector<ServedUnit> served{{dir.string(), describe_unit(dir.string(), mount)}};
    try {
      const StageOutcome outcome = stage(cache, served);
      ADD_FAILURE() << "staged " << name << " into " << outcome.folder << "; it now reads '"
                    << read_file((fs::path(outcome.folder) / mount / name).string()).substr(0, 40) << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("the cache's own"), std::string::npos) << e.what();
    }
  };
  fs::create_directories(root_ / "odd" / "unit");
  write_file_atomically((root_ / "odd" / "unit" / "MANIFEST.json").string(), std::string("the job's own file"));
  refused(root_ / "odd" / "unit", "unit", "MANIFEST.json");
  fs::create_directories(root_ / "odd" / "top");
  write_file_atomically((root_ / "odd" / "top" / "STAGED.json").string(), std::string("the job's own file"));
  refused(root_ / "odd" / "top", "", "STAGED.json");
}

// Sizes come from the network: a staging that cannot fit on the node's disk is refused
// before a byte is written, naming what it needs and what is free.
TEST_F(StagingTest, AStagingThatCannotFitOnTheDiskIsRefusedBeforeItWrites) {
  StageCache cache(options());
  StagedUnit huge;
  huge.mount = "huge";
  huge.files = {{"a.bin", uint64_t{1} << 62, 1}, {"b.bin", UINT64_MAX, 2}};  // their sum overflows
  try {
    const StageOutcome outcome = stage(cache, {{(root_ / "data").string(), huge}});
    ADD_FAILURE() << "staged into " << outcome.folder;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((root_ / "cache").string()), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(UINT64_MAX) + " bytes more"), std::string::npos) << what;
    EXPECT_NE(what.find("bytes free"), std::string::npos) << what;
  }
  for ([[maybe_unused]] const auto& unit : fs::directory_iterator(root_ / "cache" / "units")) ADD_FAILURE() << unit.path();
}

// A file is fetched in many ranges, several requested ahead of the one arriving: the
// copies are still byte for byte the served files, each checked as it arrives, and a
// damaged cached file is fetched again the same way.
TEST_F(StagingTest, RangesRequestedAheadArriveInOrderAndEachFileIsChecked) {
  StageCacheOptions o = options();
  o.request_bytes = 64 << 10;  // x.bin of part0 (12 MB) in 192 ranges
  StageCache cache(o);
  const auto served = units({0, 1});
  const StageOutcome first = stage(cache, served);
  EXPECT_EQ(first.files_copied, 6);
  const fs::path folder = first.folder;
  for (const char* file : {"META.json", "partition_book.bin", "part0/x.bin", "part0/ids.bin", "part1/x.bin", "part1/ids.bin"}) {
    expect_same_file(folder / file, root_ / "data" / file);
  }
  MappedArray((folder / "part0" / "x.bin").string()).verify_checksum();

  const fs::path cached = fs::canonical(folder / "part0") / "x.bin";
  flip_last_byte(cached);
  const StageOutcome again = stage(cache, served);
  ASSERT_EQ(again.damaged.size(), 1u);
  EXPECT_EQ(again.bytes_copied, served[1].unit.bytes()) << "the damaged unit only";
  expect_same_file(fs::path(again.folder) / "part0" / "x.bin", root_ / "data" / "part0" / "x.bin");

  // A byte in the middle of a served file changes after it was described: the range that
  // carries it arrives among others, and the file's check names it.
  StageCacheOptions small = options();
  small.dir = (root_ / "other-cache").string();
  small.request_bytes = 64 << 10;
  StageCache fresh(small);
  {
    std::fstream f(root_ / "data" / "part0" / "x.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(6 << 20);
    f.put('\x7f');
  }
  try {
    const StageOutcome outcome = stage(fresh, served);
    ADD_FAILURE() << "a changed range was accepted into " << outcome.folder;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum mismatch"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(root_ / "other-cache" / "units" / key_text(served[1].unit.key())));
}

// A range the server refuses (the file shrank after it was described) ends the staging
// with an error naming the file and the range, though later requests are already on their
// way; nothing of the unit is kept, and the next staging, on a new connection, works.
TEST_F(StagingTest, ARefusedRangeAmongThoseInFlightEndsTheStagingNamingIt) {
  StageCacheOptions o = options();
  o.request_bytes = 1 << 20;
  StageCache cache(o);
  const auto served = units({0});
  const fs::path x = root_ / "data" / "part0" / "x.bin";
  const std::string whole = read_file(x.string());
  fs::resize_file(x, whole.size() / 2);
  try {
    const StageOutcome outcome = stage(cache, served);
    ADD_FAILURE() << "staged a shrunk file into " << outcome.folder;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(x.filename().string()), std::string::npos) << what;
    EXPECT_NE(what.find("refused the range"), std::string::npos) << what;
    EXPECT_NE(what.find("past the end"), std::string::npos) << what;
  }
  for (const auto& entry : fs::directory_iterator(root_ / "cache" / "units")) {
    EXPECT_EQ(entry.path().filename().string().find(key_text(served[1].unit.key())), std::string::npos)
        << "a copy was left: " << entry.path();
  }
  write_file_atomically(x.string(), whole);
  const StageOutcome outcome = stage(cache, served);
  EXPECT_EQ(outcome.units_copied, 1) << "the top unit was kept before the refusal";
  expect_same_file(fs::path(outcome.folder) / "part0" / "x.bin", x);
}

TEST_F(StagingTest, RequestSizesOutsideTheProtocolsRangeAndNoRequestInFlightAreRefused) {
  for (uint64_t bytes : {uint64_t{0}, wire::kMaxStageChunkBytes + 1}) {
    StageCacheOptions o = options();
    o.request_bytes = bytes;
    try {
      StageCache cache(o);
      ADD_FAILURE() << "a request size of " << bytes << " bytes was taken";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(bytes)), std::string::npos) << e.what();
    }
  }
  StageCacheOptions o = options();
  o.requests_in_flight = 0;
  EXPECT_THROW(StageCache cache(o), UsageError);
}

TEST_F(StagingTest, AMissingCacheFolderParentIsAnErrorNamingIt) {
  StageCacheOptions o = options();
  write_file_atomically((root_ / "file").string(), std::string("x"));
  o.dir = (root_ / "file" / "cache").string();
  try {
    StageCache cache(o);
    FAIL() << "a cache under a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(o.dir), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace partita::runtime
