// `partita datasets list | download | path`, run as a user runs them, against a server on
// loopback standing in for the publishers (--mirror).
#include <gtest/gtest.h>

#include <filesystem>

#include "datasets/loopback_http.h"
#include "test_util.h"

namespace partita::testing {
namespace {

TEST(DatasetsCliTest, ListsEveryDatasetWithItsLicenceAndCitation) {
  TempDir cache;
  const CommandResult r = run_partita({"datasets", "list", "--cache-dir", cache.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "cache: " + cache.path());
  for (const char* name : {"\ncora\n", "\nfb15k-237\n", "\nmovielens-100k\n", "\nogbn-arxiv\n", "\nwn18rr\n"}) {
    EXPECT_CONTAINS(r.out, name);
  }
  EXPECT_CONTAINS(r.out, "https://files.grouplens.org/datasets/movielens/ml-latest-small.zip");
  EXPECT_CONTAINS(r.out, "licence:  ODC-BY 1.0");
  EXPECT_CONTAINS(r.out, "cite:     F. M. Harper, J. A. Konstan. The MovieLens Datasets");
}

TEST(DatasetsCliTest, DownloadsFromAMirrorThenPrintsThePath) {
  TempDir cache;
  LoopbackHttpServer server;
  server.serve("/cora/cora.tgz", {cora_tgz()});
  const CommandResult missing = run_partita({"datasets", "path", "cora", "--cache-dir", cache.path()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.err, "dataset cora is not downloaded (" + cache.path() + "/cora); partita datasets download cora");

  const CommandResult got =
      run_partita({"datasets", "--mirror", server.base_url(), "download", "cora", "--cache-dir", cache.path()});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_CONTAINS(got.out, "cora: " + cache.path() + "/cora\n");
  EXPECT_CONTAINS(got.out, "cite:     P. Sen, G. Namata");
  EXPECT_EQ(read_text(cache / "cora/cora.cites"), read_text(dataset_path("cora/cora.cites")));

  const CommandResult path = run_partita({"datasets", "path", "cora", "--cache-dir", cache.path()});
  EXPECT_EQ(path.exit_code, 0) << path.err;
  EXPECT_EQ(path.out, cache.path() + "/cora\n");
  const CommandResult listed = run_partita({"datasets", "list", "--cache-dir", cache.path()});
  EXPECT_CONTAINS(listed.out, "\ncora  (downloaded)\n");
}

TEST(DatasetsCliTest, AnUnknownNameIsAUsageErrorListingTheKnownOnes) {
  const CommandResult r = run_partita({"datasets", "download", "imagenet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "unknown dataset 'imagenet' (known: aifb, citeseer, cora, fb15k-237,");
}

TEST(DatasetsCliTest, AServerGoneIsARuntimeError) {
  TempDir cache;
  std::string url;
  {
    LoopbackHttpServer server;
    url = server.base_url();
  }
  const CommandResult r = run_partita({"datasets", "download", "cora", "--cache-dir", cache.path(), "--mirror", url});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "cannot download " + url + "/cora/cora.tgz: Couldn't connect to server");
  EXPECT_FALSE(std::filesystem::exists(cache / "cora"));
}

}  // namespace
}  // namespace partita::testing
