// The `partita` command line, end to end: exit codes, one-line errors, the whole pipeline.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "test_paths.h"
#include "test_util.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::run_partita;
using testing::TempDir;

bool one_line(const std::string& s) {
  return !s.empty() && s.find('\n') == s.size() - 1;
}

TEST(CliTest, GenerateThenPartitionThenInspect) {
  TempDir tmp;
  auto gen = run_partita({"--log-level", "warn", "generate", "sbm", "--nodes", "5000",
                          "--classes", "4", "--features", "8", "--seed", "3", "-o", tmp / "g"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  auto part = run_partita({"--log-level", "warn", "partition", "-i", tmp / "g", "-o", tmp / "p",
                           "-k", "3", "--json"});
  ASSERT_EQ(part.exit_code, 0) << part.err;
  auto report = nlohmann::json::parse(part.out);
  EXPECT_EQ(report["num_nodes"], 5000);
  EXPECT_EQ(report["num_parts"], 3);
  auto inspect = run_partita({"--log-level", "warn", "inspect", tmp / "p", "--verify", "--json"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(nlohmann::json::parse(inspect.out), report);
  auto table = run_partita({"--log-level", "warn", "inspect", tmp / "p"});
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("edge cut:"), std::string::npos);
  EXPECT_NE(table.out.find("balance (largest / mean)"), std::string::npos);
}

TEST(CliTest, GeneratorOutputDoesNotDependOnThreads) {
  TempDir tmp;
  for (const char* threads : {"1", "2"}) {
    auto r = run_partita({"--log-level", "warn", "--threads", threads, "generate", "rmat",
                          "--nodes", "20000", "--features", "4", "--classes", "3", "-o",
                          tmp / (std::string("t") + threads)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (const char* file : {"edge_index.npy", "x.npy", "y.npy", "train_idx.npy"}) {
    EXPECT_EQ(testing::read_text(tmp / (std::string("t1/") + file)),
              testing::read_text(tmp / (std::string("t2/") + file)))
        << file;
  }
}

struct UsageCase {
  std::vector<std::string> args;
  std::string expected;  // what the message must name
};

// Runs partita with `args`, which must fail as a usage error: exit code 2 and one line on
// stderr, which is returned; `command` gets the command line, for failure messages.
std::string usage_error(const std::vector<std::string>& args, std::string* command) {
  auto r = run_partita(args);
  command->clear();
  for (const auto& a : args) *command += a + " ";
  EXPECT_EQ(r.exit_code, 2) << *command << "\n" << r.err;
  EXPECT_TRUE(one_line(r.err)) << *command << "\n" << r.err;
  return r.err;
}

TEST(CliTest, UsageErrorsExitTwoWithOneLineNamingTheFlag) {
  const std::vector<UsageCase> cases{
      {{}, "subcommand"},
      {{"frobnicate"}, "frobnicate"},
      {{"partition", "-o", "/tmp/x"}, "--input"},
      {{"partition", "-i", "x", "-o", "y", "--parts", "0"}, "--parts"},
      {{"partition", "-i", "x", "-o", "y", "--parts", "two"}, "--parts"},
      {{"partition", "-i", "x", "-o", "y", "--format", "csv"}, "--format"},
      {{"partition", "-i", "x", "-o", "y", "--method", "spectral"}, "--method"},
      {{"generate", "rmat", "-o", "y", "--a", "0.5", "--b", "0.3", "--c", "0.3"}, "--a/--b/--c"},
      {{"generate", "sbm", "-o", "y", "--homophily", "1.5"}, "--homophily"},
      {{"--log-level", "loud", "inspect", "x"}, "--log-level"},
      {{"--threads", "-1", "inspect", "x"}, "--threads"},
      {{"generate", "rmat", "-o", "y", "--undirected=maybe"}, "--undirected"},
      {{"bench", "loader", "--input", "/nonexistent/graph"}, "--input"},
      {{"bench", "train", "--input", "/nonexistent/graph"}, "--input"},
      {{"bench", "train", "--profile-steps", "-1"}, "--profile-steps"},
  };
  for (const auto& c : cases) {
    std::string cmd;
    const std::string err = usage_error(c.args, &cmd);
    EXPECT_NE(err.find(c.expected), std::string::npos) << cmd << "\n" << err;
  }
}

// Every usage error starts as docs/cli.md documents, and a numeric flag says what it
// expected in words (CLI11's own check printed a 300-digit range, and wrapped a negative
// seed to 2^64 - 5 without a word).
TEST(CliTest, NumericFlagsSayWhatTheyExpected) {
  const std::vector<UsageCase> cases{
      {{"generate", "rmat", "-o", "y", "--nodes", "0"}, "--nodes: must be positive, got 0"},
      {{"generate", "rmat", "-o", "y", "--nodes", "1.5"}, "--nodes: expected an integer, got '1.5'"},
      {{"--threads", "abc", "generate", "rmat", "-o", "y"}, "--threads: expected an integer, got 'abc'"},
      {{"--threads", "100000", "generate", "rmat", "-o", "y"}, "--threads: must be in [0, 1024], got 100000"},
      {{"partition", "-i", "x", "-o", "y", "-k", "0"}, "--parts: must be positive, got 0"},
      {{"partition", "-i", "x", "-o", "y", "--seed", "-5"}, "--seed: expected a non-negative integer, got '-5'"},
      {{"generate", "sbm", "-o", "y", "--seed", "99999999999999999999999"}, "--seed: '99999999999999999999999' is out of range"},
      {{"generate", "rmat", "-o", "y", "--avg-degree", "abc"}, "--avg-degree: expected a number, got 'abc'"},
      {{"generate", "sbm", "-o", "y", "--homophily", "2"}, "--homophily: must be in [0, 1], got 2"},
      {{"bench", "loader", "--cache-bound-batches", "1"}, "--cache-bound-batches: must be in [2, 65536], got 1"},
      {{"generate", "sbm", "-o", "y", "--noise", "inf"}, "--noise: expected a finite number, got 'inf'"},
      {{"generate", "rmat", "-o", "y", "--avg-degree", "inf"}, "--avg-degree: expected a finite number, got 'inf'"},
      {{"generate", "rmat", "-o", "y", "--a", "nan"}, "--a: expected a finite number, got 'nan'"},
      {{"daemon", "--head", "--heartbeat-ms", "99999999999999999999"}, "--heartbeat-ms: '99999999999999999999' is too large"},
      {{"generate", "rmat", "-o", "y", "--features", "100000"}, "--features: must be in [0, 65536], got 100000"},
  };
  for (const auto& c : cases) {
    std::string cmd;
    const std::string err = usage_error(c.args, &cmd);
    EXPECT_EQ(err.rfind("partita: error: " + c.expected, 0), 0u) << cmd << "\n" << err;
  }
}

// A disk that fills up: the error says so (it said "cannot write FILE" with no reason) and
// leaves no partial output behind. A 256 KiB tmpfs mounted by the test stands for the disk.
TEST(CliTest, AFullDiskIsNamedAndLeavesNothingPartial) {
  TempDir tmp;
  const std::string disk = tmp / "disk";
  testing::SmallDisk small(disk, 256 * 1024);
  if (!small.mounted()) GTEST_SKIP() << small.why();

  auto r = run_partita({"--log-level", "warn", "generate", "sbm", "--nodes", "20000", "-o", disk + "/g"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("partita: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(disk)) << "partial output left on the full disk";
}

TEST(CliTest, BenchInputMustBeAnNpyFolderWithWhatTrainingNeeds) {
  TempDir tmp;
  auto gen = run_partita({"--log-level", "warn", "generate", "rmat", "--nodes", "2000", "--undirected", "-o",
                          tmp / "no-features"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  fs::create_directories(tmp / "empty");
  for (const char* bench : {"loader", "train"}) {
    for (const char* input : {"empty", "no-features"}) {
      auto r = run_partita({"--log-level", "warn", "bench", bench, "--input", tmp / input, "--workdir", tmp / "work"});
      EXPECT_EQ(r.exit_code, 2) << bench << " " << input << "\n" << r.err;
      EXPECT_TRUE(one_line(r.err)) << r.err;
      EXPECT_NE(r.err.find("--input: " + (tmp / input) + " has no "), std::string::npos) << r.err;
    }
  }
}

TEST(CliTest, RuntimeErrorsExitOneAndNameTheProblem) {
  TempDir tmp;
  testing::write_text(tmp / "edges.txt", "0 1\n1 2\n2 x\n");
  testing::write_text(tmp / "small.txt", "0 1\n1 2\n");
  struct Case {
    std::vector<std::string> args;
    std::string expected;  // a fragment the error must contain
  };
  const std::vector<Case> cases{
      {{"partition", "-f", "npy", "-i", tmp / "missing", "-o", tmp / "o"}, tmp / "missing"},
      {{"partition", "-f", "edgelist", "-i", tmp / "edges.txt", "-o", tmp / "o"}, "edges.txt:3"},
      {{"partition", "-f", "edgelist", "-i", tmp / "small.txt", "-o", tmp / "o", "-k", "5"}, "5 partitions"},
      {{"partition", "-f", "edgelist", "-i", tmp / "small.txt", "-o", tmp / "nope/o"}, "does not exist"},
      {{"partition", "-f", "edgelist", "-i", tmp / "small.txt", "-o", tmp.path(), "--overwrite"},
       "refusing to replace a folder without META.json"},
      {{"inspect", tmp / "missing"}, "not a folder"},
      {{"inspect", tmp.path()}, "META.json"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"--log-level", "error"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = run_partita(args);
    EXPECT_EQ(r.exit_code, 1) << c.expected << "\n" << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(tmp / "o")) << "a failed run left output behind";
}

class CorruptFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = run_partita({"--log-level", "warn", "partition", "-f", "linqs", "-i",
                          testing::dataset_path("cora"), "-o", dir(), "-k", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string dir() const { return tmp_ / "cora"; }
  std::string inspect_error(bool verify) {
    std::vector<std::string> args{"--log-level", "warn", "inspect", dir()};
    if (verify) args.push_back("--verify");
    auto r = run_partita(args);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    return r.err;
  }
  void patch(const std::string& file, long offset, const std::string& bytes) {
    std::fstream f(dir() + "/" + file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  TempDir tmp_;
};

TEST_F(CorruptFolderTest, TruncatedArrayIsNamed) {
  fs::resize_file(dir() + "/part1/indices.bin", 100);
  std::string e = inspect_error(false);
  EXPECT_NE(e.find("part1/indices.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("size mismatch"), std::string::npos) << e;
}

TEST_F(CorruptFolderTest, CorruptFeatureByteFailsVerify) {
  patch("part0/x.bin", 64 + 4 * 1000, "\x7f");
  auto quick = run_partita({"--log-level", "warn", "inspect", dir()});
  EXPECT_EQ(quick.exit_code, 0) << "structure is intact; only --verify reads every byte";
  std::string e = inspect_error(true);
  EXPECT_NE(e.find("part0/x.bin: checksum mismatch"), std::string::npos) << e;
}

TEST_F(CorruptFolderTest, OutOfRangeSourceIdIsNamed) {
  // A huge source id with an intact header: only the range check can catch it.
  patch("part0/indices.bin", 64 + 8 * 3, std::string("\xff\xff\xff\x00\x00\x00\x00\x00", 8));
  std::string e = inspect_error(false);
  EXPECT_NE(e.find("part0/indices.bin: entry 3"), std::string::npos) << e;
  EXPECT_NE(e.find("outside [0, 2708)"), std::string::npos) << e;
}

TEST_F(CorruptFolderTest, MissingPartFileIsNamed) {
  fs::remove(dir() + "/part1/orig_ids.bin");
  std::string e = inspect_error(false);
  EXPECT_NE(e.find("part1/orig_ids.bin: missing"), std::string::npos) << e;
}

TEST_F(CorruptFolderTest, BrokenMetaFieldIsNamed) {
  std::string meta = testing::read_text(dir() + "/META.json");
  auto j = nlohmann::json::parse(meta);
  j["num_parts"] = "two";
  testing::write_text(dir() + "/META.json", j.dump());
  EXPECT_NE(inspect_error(false).find("field 'num_parts': expected an integer"), std::string::npos);
  j["num_parts"] = 4294967298;  // 2 if truncated to 32 bits
  testing::write_text(dir() + "/META.json", j.dump());
  EXPECT_NE(inspect_error(false).find("field 'num_parts': must be at most 65536"), std::string::npos);
  j["num_parts"] = 2;
  j["format_version"] = 99;
  testing::write_text(dir() + "/META.json", j.dump());
  EXPECT_NE(inspect_error(false).find("version 99 is not supported"), std::string::npos);
  testing::write_text(dir() + "/META.json", meta.substr(0, meta.size() / 2));
  EXPECT_NE(inspect_error(false).find("invalid JSON"), std::string::npos);
}

// Numbers where integers are expected but that no integer holds (the fuzz campaign's
// finding: a feature width of 4.5e53 was converted to int64, undefined behaviour).
TEST_F(CorruptFolderTest, MetaFieldsThatAreNotIntegersAreNamed) {
  const auto j = nlohmann::json::parse(testing::read_text(dir() + "/META.json"));
  const auto error_with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json broken = j;
    change(broken);
    testing::write_text(dir() + "/META.json", broken.dump());
    return inspect_error(false);
  };
  EXPECT_CONTAINS(error_with([](nlohmann::json& m) { m["node_features"]["x"]["shape"][1] = 4.55556e+53; }),
                  "field 'node_features.x.shape[1]': expected an integer");
  EXPECT_CONTAINS(error_with([](nlohmann::json& m) { m["node_features"]["x"]["shape"] = {2708}; }),
                  "field 'node_features.x.shape': expected [rows, columns]");
  EXPECT_CONTAINS(error_with([](nlohmann::json& m) { m["seed"] = 1e30; }),
                  "field 'seed': expected an integer from 0 to 2^64 - 1");
  EXPECT_CONTAINS(error_with([](nlohmann::json& m) { m["seed"] = -1; }),
                  "field 'seed': expected an integer from 0 to 2^64 - 1");
}

TEST_F(CorruptFolderTest, SwappedNodeMapFailsVerify) {
  // Consistent checksums and ranges, wrong content: the cross-part check catches it.
  std::string map = testing::read_text(dir() + "/node_map.bin");
  std::string first = map.substr(64, 8), second = map.substr(72, 8);
  patch("node_map.bin", 64, second);
  patch("node_map.bin", 72, first);
  std::string e = inspect_error(true);
  EXPECT_NE(e.find("node_map.bin"), std::string::npos) << e;
}


// The commands that never train start without libtorch (it costs a process ~1 s at
// start-up, tools/main.cpp); the others, their help and the list of all commands come from
// partita-full, through the same `partita`.
TEST(CliTest, CommandsThatNeverTrainStartWithoutLibtorch) {
  // What the dynamic loader loads for the binary, listed without running it.
  const ProcessResult loaded = run_process({"/usr/bin/env", "LD_TRACE_LOADED_OBJECTS=1", testing::kPartitaBinary}, 60);
  EXPECT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_NE(loaded.out.find("libcaf_core"), std::string::npos) << loaded.out;  // the listing is partita's
  EXPECT_EQ(loaded.out.find("libtorch"), std::string::npos) << loaded.out;

  auto run_help = run_partita({"run", "--help"});
  EXPECT_EQ(run_help.exit_code, 0) << run_help.err;
  EXPECT_NE(run_help.out.find("--resume"), std::string::npos) << run_help.out;
  auto all = run_partita({"--help"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  for (const char* command : {"partition", "status", "daemon", "run", "submit", "bench"}) {
    EXPECT_NE(all.out.find(command), std::string::npos) << command << ": " << all.out;
  }
  EXPECT_EQ(all.out.find("job-driver"), std::string::npos) << "the head's own command is listed: " << all.out;
  auto unknown = run_partita({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "partita: error: unknown command 'frobnicate' (see partita --help)\n");

  // Without partita-full beside it or installed: the commands that need it say so.
  TempDir tmp;
  const std::string alone = tmp / "partita";
  fs::copy_file(testing::kPartitaBinary, alone);
  fs::permissions(alone, fs::perms::owner_all);
  const ProcessResult r = run_process({alone, "run", "job.yaml"}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("partita: error: cannot run " + tmp.path() + "/../libexec/partita/partita-full (every command "
                       "but partition, generate, inspect, status, stop, down, cluster and datasets runs there): No such file or directory"),
            std::string::npos)
      << r.err;
  const ProcessResult light = run_process({alone, "inspect", tmp / "nothing"}, 60);
  EXPECT_NE(light.err.find("not a folder"), std::string::npos) << light.err;  // its own commands run
}

// Every broken input of the corpus, through the command line a user types: exit 1, one
// line, the file named, nothing written.
TEST(CliTest, EveryCorpusInputFailsCleanly) {
  TempDir tmp;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(testing::corpus_path("readers"))) {
    std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    std::string input = entry.path().string(), format, named = name;
    if (entry.path().extension() == ".npy") {
      // A bare array: as the edge_index of an otherwise empty npy folder.
      std::string dir = tmp / ("npy-" + name);
      fs::create_directory(dir);
      fs::copy_file(input, dir + "/edge_index.npy");
      input = dir;
      format = "npy";
      named = "edge_index.npy";
    } else {
      format = name.substr(0, name.find('_'));
    }
    ASSERT_TRUE(format == "npy" || format == "linqs" || format == "edgelist" || format == "triples" ||
                format == "movielens" || format == "ntriples")
        << name;
    auto r = run_partita({"--log-level", "error", "partition", "-f", format, "-i", input, "-o",
                          tmp / "out"});
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.err;
    EXPECT_TRUE(one_line(r.err)) << name << ": " << r.err;
    EXPECT_NE(r.err.find(named), std::string::npos) << name << ": " << r.err;
    EXPECT_FALSE(fs::exists(tmp / "out")) << name;
    ++checked;
  }
  EXPECT_GE(checked, 38);
}

// An edge list of PubMed-like ids, remapped and made undirected by `partition`: the id map
// is kept beside the partitions, one line per original node id.
TEST(CliTest, PartitionRemapKeepsTheIdMapBesideThePartitions) {
  TempDir tmp;
  testing::write_text(tmp / "pmids.txt", "19127292 17363749\n17363749 9000000000000000\nalice 19127292\n");
  auto r = run_partita({"--log-level", "error", "partition", "-f", "edgelist", "-i", tmp / "pmids.txt", "-o",
                        tmp / "parts", "--remap", "--undirected", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["num_nodes"], 4);
  EXPECT_EQ(report["num_edges"], 6);  // 3 pairs, both ways
  EXPECT_EQ(testing::read_text(tmp / "parts/node_names.tsv"),
            "# id\tname: the original node id and the token the input had for it\n"
            "0\t19127292\n1\t17363749\n2\t9000000000000000\n3\talice\n");
  auto check = run_partita({"--log-level", "error", "inspect", "--verify", tmp / "parts"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  // Without remapping there is no map to keep.
  testing::write_text(tmp / "dense.txt", "0 1\n1 2\n");
  r = run_partita({"--log-level", "error", "partition", "-f", "edgelist", "-i", tmp / "dense.txt", "-o", tmp / "dense"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "dense/node_names.tsv"));
}

}  // namespace
}  // namespace partita
