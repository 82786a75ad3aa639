// The dataset cache against a server on loopback that serves the project's copies of the
// public datasets the way their publishers do (cora.tgz, ml-latest-small.zip): a good
// download is checked and unpacked where a reader reads it; a bad checksum, a download cut
// short, one resumed, a server gone each end in an error naming the problem, and never
// leave a dataset folder (or a staging folder) behind in the cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "datasets/archive.h"
#include "datasets/dataset_cache.h"
#include "datasets/loopback_http.h"
#include "datasets/registry.h"
#include "datasets/sha256.h"
#include "expect_error.h"
#include "partitioner/readers.h"
#include "test_util.h"

namespace partita::datasets {
namespace {

namespace fs = std::filesystem;
using testing::LoopbackHttpServer;
using testing::TempDir;

std::string data_file(const std::string& relative) { return testing::read_text(testing::dataset_path(relative)); }

// cora.tgz as LINQS serves it: the two files under cora/ (cora.content as given).
std::string cora_tgz(const std::string& content = data_file("cora/cora.content")) {
  return testing::archive_of({{"cora/cora.content", content}, {"cora/cora.cites", data_file("cora/cora.cites")}});
}

// What the cache holds besides finished datasets: staging folders must never remain.
std::vector<std::string> staging_left(const std::string& cache) {
  std::vector<std::string> left;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache, ec)) {
    if (e.path().filename().string().rfind(".staging-", 0) == 0) left.push_back(e.path().string());
  }
  return left;
}

class DatasetCacheTest : public ::testing::Test {
 protected:
  FetchOptions options() const {
    FetchOptions o;
    o.cache_dir = cache_.path();
    o.mirror = server_.base_url();
    o.download.attempts = 2;
    o.download.retry_pause_ms = 0;
    o.download.connect_timeout_s = 10;
    o.download.stall_timeout_s = 30;
    return o;
  }
  std::string cached(const std::string& name) const { return cache_ / name; }
  void expect_nothing_half_done(const std::string& name) const {
    EXPECT_FALSE(fs::exists(cached(name))) << cached(name);
    EXPECT_TRUE(staging_left(cache_.path()).empty());
    EXPECT_FALSE(is_cached(dataset_or_throw(name), cache_.path()));
  }

  TempDir cache_;
  LoopbackHttpServer server_;
};

TEST_F(DatasetCacheTest, DownloadsChecksAndUnpacksCoraWhereTheReaderReadsIt) {
  server_.serve("/cora/cora.tgz", {cora_tgz()});
  const NamedDataset& cora = dataset_or_throw("cora");
  const std::string dir = fetch_dataset(cora, options());
  EXPECT_EQ(dir, cached("cora"));
  EXPECT_EQ(testing::read_text(dir + "/cora.content"), data_file("cora/cora.content"));  // cora/ stripped
  EXPECT_TRUE(fs::is_regular_file(dir + "/" + kMarkerFile));
  EXPECT_TRUE(is_cached(cora, cache_.path()));
  EXPECT_TRUE(staging_left(cache_.path()).empty());
  EXPECT_FALSE(fs::exists(cache_ / ".downloads/cora"));  // the archive is not kept
  const Dataset d = read_dataset(cora.format, dir);
  EXPECT_EQ(d.num_nodes, 2708);
  // Cached: no second request.
  EXPECT_EQ(fetch_dataset(cora, options()), dir);
  EXPECT_EQ(server_.ranges_asked("/cora/cora.tgz").size(), 1u);
}

TEST_F(DatasetCacheTest, UnpacksAZipArchiveOfMovieLens) {
  server_.serve("/movielens-small/ml-latest-small.zip",
                {testing::archive_of({{"ml-latest-small/ratings.csv", data_file("movielens-small/ratings.csv")},
                               {"ml-latest-small/movies.csv", data_file("movielens-small/movies.csv")}},
                              true)});
  const std::string dir = fetch_dataset(dataset_or_throw("movielens-small"), options());
  EXPECT_EQ(sha256_file(dir + "/ratings.csv"), "aa289ca83157595d0df6aea1be6a4ded676ddc4385472e8313a8ed9805352646");
  EXPECT_EQ(read_dataset("movielens", dir).num_edges(), 2 * 100836);
}

TEST_F(DatasetCacheTest, ABadChecksumIsAnErrorAndLeavesNothing) {
  std::string content = data_file("cora/cora.content");
  content[100] = content[100] == '0' ? '1' : '0';  // one feature flipped
  server_.serve("/cora/cora.tgz", {cora_tgz(content)});
  EXPECT_THROW_CONTAINS(fetch_dataset(dataset_or_throw("cora"), options()),
                        "cora.content unpacked from its download has SHA-256 ");
  expect_nothing_half_done("cora");
  EXPECT_FALSE(fs::exists(cache_ / ".downloads/cora/cora.tgz"));  // not unpacked again next time
}

TEST_F(DatasetCacheTest, ADownloadNotMatchingItsRecordedSumIsRemoved) {
  NamedDataset d = dataset_or_throw("cora");
  d.files = {{"https://example.org/cora.content", sha256_file(testing::dataset_path("cora/cora.cites")), Unpack::none},
             {"https://example.org/cora.cites", sha256_file(testing::dataset_path("cora/cora.cites")), Unpack::none}};
  server_.serve("/cora/cora.content", {data_file("cora/cora.content")});
  server_.serve("/cora/cora.cites", {data_file("cora/cora.cites")});
  EXPECT_THROW_CONTAINS(fetch_dataset(d, options()), "is damaged or not the publisher's file");
  expect_nothing_half_done("cora");
  EXPECT_FALSE(fs::exists(cache_ / ".downloads/cora/cora.content"));
  EXPECT_FALSE(fs::exists(cache_ / ".downloads/cora/cora.content.part"));
}

TEST_F(DatasetCacheTest, RawFilesWithRecordedSumsNeedNoArchive) {
  NamedDataset d = dataset_or_throw("cora");
  d.files = {
      {"https://example.org/cora.content", sha256_file(testing::dataset_path("cora/cora.content")), Unpack::none},
      {"https://example.org/cora.cites", sha256_file(testing::dataset_path("cora/cora.cites")), Unpack::none}};
  server_.serve("/cora/cora.content", {data_file("cora/cora.content")});
  server_.serve("/cora/cora.cites", {data_file("cora/cora.cites")});
  EXPECT_EQ(read_dataset("linqs", fetch_dataset(d, options())).num_nodes, 2708);
}

TEST_F(DatasetCacheTest, ATruncatedDownloadIsAnErrorAndKeepsWhatArrivedForLater) {
  const std::string tgz = cora_tgz();
  server_.serve("/cora/cora.tgz", {tgz, tgz.size() / 2, 100});
  const std::string error = testing::error_of([&] { fetch_dataset(dataset_or_throw("cora"), options()); });
  EXPECT_CONTAINS(error, "cannot download " + server_.base_url() + "/cora/cora.tgz");
  EXPECT_CONTAINS(error, std::to_string(tgz.size() / 2) + " of " + std::to_string(tgz.size()) + " bytes received");
  EXPECT_CONTAINS(error, "after 2 attempt(s)");
  expect_nothing_half_done("cora");
  EXPECT_EQ(fs::file_size(cache_ / ".downloads/cora/cora.tgz.part"), tgz.size() / 2);
}

TEST_F(DatasetCacheTest, AnInterruptedDownloadResumesWhereItStopped) {
  const std::string tgz = cora_tgz();
  const size_t half = tgz.size() / 2;
  server_.serve("/cora/cora.tgz", {tgz, half, 1});
  const std::string dir = fetch_dataset(dataset_or_throw("cora"), options());  // the second attempt resumes
  EXPECT_EQ(testing::read_text(dir + "/cora.cites"), data_file("cora/cora.cites"));
  EXPECT_EQ(server_.ranges_asked("/cora/cora.tgz"), (std::vector<std::string>{"", "bytes=" + std::to_string(half) + "-"}));
}

TEST_F(DatasetCacheTest, AFailedCallIsResumedByTheNextOne) {
  const std::string tgz = cora_tgz();
  const size_t third = tgz.size() / 3;
  server_.serve("/cora/cora.tgz", {tgz, third, 1});
  FetchOptions once = options();
  once.download.attempts = 1;
  EXPECT_THROW_CONTAINS(fetch_dataset(dataset_or_throw("cora"), once), "the next download resumes from there");
  expect_nothing_half_done("cora");
  fetch_dataset(dataset_or_throw("cora"), once);
  EXPECT_TRUE(is_cached(dataset_or_throw("cora"), cache_.path()));
  EXPECT_EQ(server_.ranges_asked("/cora/cora.tgz"), (std::vector<std::string>{"", "bytes=" + std::to_string(third) + "-"}));
}

TEST_F(DatasetCacheTest, AServerIgnoringTheRangeSendsTheWholeFileAgain) {
  const std::string tgz = cora_tgz();
  server_.serve("/cora/cora.tgz", {tgz, tgz.size() / 2, 1, false});
  const std::string dir = fetch_dataset(dataset_or_throw("cora"), options());
  EXPECT_EQ(testing::read_text(dir + "/cora.content"), data_file("cora/cora.content"));
}

TEST_F(DatasetCacheTest, AServerGoneIsAnErrorNamingTheUrl) {
  const std::string url = server_.base_url();
  server_.stop();
  const std::string error = testing::error_of([&] { fetch_dataset(dataset_or_throw("cora"), options()); });
  EXPECT_CONTAINS(error, "cannot download " + url + "/cora/cora.tgz: Couldn't connect to server");
  expect_nothing_half_done("cora");
}

TEST_F(DatasetCacheTest, AMissingFileIsTheServersHttpStatus) {
  EXPECT_THROW_CONTAINS(fetch_dataset(dataset_or_throw("cora"), options()),
                        "/cora/cora.tgz: the server answered HTTP 404 Not Found");
  expect_nothing_half_done("cora");
}

TEST_F(DatasetCacheTest, AnArchiveLackingAFileTheReaderNeedsIsRefused) {
  server_.serve("/cora/cora.tgz", {testing::archive_of({{"cora/cora.content", data_file("cora/cora.content")}}, false)});
  EXPECT_THROW_CONTAINS(fetch_dataset(dataset_or_throw("cora"), options()), "has no cora.cites");
  expect_nothing_half_done("cora");
}

TEST_F(DatasetCacheTest, ADatasetWithoutRecordedSumsKeepsTheSumsItComputed) {
  NamedDataset d = dataset_or_throw("cora");
  d.name = "cora-unsummed";
  for (ContentFile& c : d.contents) c.sha256.clear();
  ASSERT_TRUE(needs_first_sum(d));
  server_.serve("/cora-unsummed/cora.tgz", {cora_tgz()});
  const std::string dir = fetch_dataset(d, options());
  EXPECT_CONTAINS(testing::read_text(dir + "/" + kMarkerFile), sha256_file(testing::dataset_path("cora/cora.cites")));
}

TEST_F(DatasetCacheTest, AFolderInTheCacheThatIsNoDownloadIsLeftAlone) {
  fs::create_directories(cached("cora"));
  testing::write_text(cached("cora") + "/mine.txt", "a user's file");
  server_.serve("/cora/cora.tgz", {cora_tgz()});
  EXPECT_THROW_CONTAINS(fetch_dataset(dataset_or_throw("cora"), options()), "move it away to download cora");
  EXPECT_EQ(testing::read_text(cached("cora") + "/mine.txt"), "a user's file");
}

TEST(ArchiveTest, AnEntryLeavingTheFolderIsRefused) {
  TempDir dir;
  testing::write_text(dir / "evil.tgz", testing::archive_of({{"data/../../evil.txt", "x"}}, false));
  fs::create_directories(dir / "out");
  EXPECT_THROW_CONTAINS(extract_archive(dir / "evil.tgz", dir / "out"), "leaves the folder");
  EXPECT_FALSE(fs::exists(dir / "evil.txt"));
}

TEST(ArchiveTest, ATruncatedArchiveIsAnError) {
  TempDir dir;
  const std::string tgz = testing::archive_of({{"a.txt", std::string(100000, 'a') + "end"}}, false);
  testing::write_text(dir / "cut.tgz", tgz.substr(0, tgz.size() / 2));
  fs::create_directories(dir / "out");
  EXPECT_THROW_CONTAINS(extract_archive(dir / "cut.tgz", dir / "out"), "cut.tgz: not an archive libarchive reads: truncated gzip input");
}

TEST(DatasetRegistryTest, EveryDatasetNamesItsSourceLicenceAndCitation) {
  std::set<std::string> formats = {"", "linqs", "triples", "movielens", "movielens100k", "ntriples", "edgelist", "npy"};
  for (const NamedDataset& d : registry()) {
    SCOPED_TRACE(d.name);
    EXPECT_FALSE(d.files.empty());
    EXPECT_FALSE(d.contents.empty());
    EXPECT_GT(d.licence.size(), 10u);
    EXPECT_GT(d.citation.size(), 20u);
    EXPECT_TRUE(formats.count(d.format));
    for (const RemoteFile& f : d.files) {
      EXPECT_TRUE(f.url.rfind("https://", 0) == 0 || f.url.rfind("http://", 0) == 0) << f.url;
      EXPECT_TRUE(f.sha256.empty() || f.sha256.size() == 64) << f.url;
    }
  }
  for (const char* name : {"cora", "citeseer", "pubmed", "fb15k-237", "wn18rr", "aifb", "mutag", "movielens-small",
                           "movielens-100k", "ogbn-arxiv"}) {
    EXPECT_NE(find_dataset(name), nullptr) << name;
  }
  EXPECT_THROW_CONTAINS(dataset_or_throw("coraa"), "unknown dataset 'coraa' (known: aifb, citeseer, cora,");
}

// The sums recorded are those of the project's copies of the datasets.
TEST(DatasetRegistryTest, RecordedSumsAreThoseOfTheProjectsCopies) {
  const std::map<std::string, std::string> copies = {
      {"cora", "cora"}, {"fb15k-237", "fb15k-237"}, {"aifb", "aifb"}, {"movielens-small", "movielens-small"}};
  for (const auto& [name, folder] : copies) {
    const NamedDataset& d = dataset_or_throw(name);
    EXPECT_FALSE(needs_first_sum(d)) << name;
    for (const ContentFile& c : d.contents) {
      EXPECT_EQ(sha256_file(testing::dataset_path(folder + "/" + c.path)), c.sha256) << name << " " << c.path;
    }
  }
}

TEST(DatasetRegistryTest, TheCacheAndMirrorComeFromTheEnvironment) {
  TempDir dir;
  ::setenv(kCacheEnv, dir.path().c_str(), 1);
  ::setenv(kMirrorEnv, "http://127.0.0.1:9/", 1);
  const NamedDataset& cora = dataset_or_throw("cora");
  EXPECT_EQ(dataset_dir(cora, ""), dir / "cora");
  EXPECT_EQ(source_url(cora, cora.files[0], ""), "http://127.0.0.1:9/cora/cora.tgz");
  EXPECT_EQ(source_url(cora, cora.files[0], "http://127.0.0.1:8/m"), "http://127.0.0.1:8/m/cora/cora.tgz");
  ::unsetenv(kMirrorEnv);
  EXPECT_EQ(source_url(cora, cora.files[0], ""), "https://linqs-data.soe.ucsc.edu/public/lbc/cora.tgz");
  ::unsetenv(kCacheEnv);
  ::setenv("XDG_CACHE_HOME", dir.path().c_str(), 1);
  EXPECT_EQ(default_cache_dir(), dir / "partita/datasets");
  ::unsetenv("XDG_CACHE_HOME");
}

}  // namespace
}  // namespace partita::datasets
