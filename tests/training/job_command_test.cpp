// `partita run` and `partita submit` as a user types them: a job file in, progress and the
// test accuracy out; bad job files and flags rejected with the field named.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/subprocess.h"
#include "daemon_process.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "test_paths.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::kPartitaBinary;

namespace fs = std::filesystem;

class JobCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(2000, 4), options, tmp_ / "parts");
  }
  std::string write_job(const std::string& name, const std::string& text) {
    testing::write_text(tmp_ / name, text);
    return tmp_ / name;
  }
  std::string good_job() {
    return write_job("job.yaml",
                     "data: {partitions: parts}\n"
                     "model: {kind: gcn, hidden: 16, layers: 2}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 50}\n"
                     "train: {epochs: 2}\n"
                     "output: out\n");
  }
  testing::TempDir tmp_;
};

TEST_F(JobCommandTest, RunTrainsWritesResultsAndResumes) {
  const std::string job = good_job();
  testing::CommandResult r = testing::run_partita({"run", job});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "test accuracy");
  EXPECT_CONTAINS(r.err, "epoch 2/2");
  EXPECT_TRUE(fs::exists(tmp_ / "out/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(tmp_ / "out/checkpoint.json"));
  EXPECT_TRUE(fs::exists(tmp_ / "out/job.yaml"));

  // A second run must not clobber the first by accident.
  r = testing::run_partita({"run", job});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--resume");
  // Resuming a finished job has nothing left to do.
  r = testing::run_partita({"run", job, "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "already covers every epoch");
}

// --seed is train.seed for one run (the quality tier's seeds): the job the run records holds
// it, and a run with another seed trains other weights.
TEST_F(JobCommandTest, ASeedOnTheCommandLineIsTheRunsTrainingSeed) {
  const std::string job = good_job();
  testing::CommandResult r = testing::run_partita({"run", job, "--seed", "7", "--output", tmp_ / "seven"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(testing::read_text(tmp_ / "seven/job.yaml"), "seed: 7");
  r = testing::run_partita({"run", job, "--output", tmp_ / "one"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(testing::read_text(tmp_ / "one/job.yaml"), "seed: 1");
  const auto first_loss = [](const std::string& metrics) {
    const size_t at = metrics.find("\"train_loss\":");
    return at == std::string::npos ? std::string() : metrics.substr(at, metrics.find(',', at) - at);
  };
  const std::string seven = first_loss(testing::read_text(tmp_ / "seven/metrics.jsonl"));
  ASSERT_FALSE(seven.empty());
  EXPECT_NE(seven, first_loss(testing::read_text(tmp_ / "one/metrics.jsonl")));

  r = testing::run_partita({"run", job, "--seed", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--seed");
  r = testing::run_partita({"submit", job, "--address", "127.0.0.1:1", "--seed", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--seed is for run and --daemons");
}

TEST_F(JobCommandTest, SubmitRunsTheJobOnDaemons) {
  testing::Daemon a = testing::start_daemon();
  testing::Daemon b = testing::start_daemon();
  ASSERT_FALSE(a.address.empty());
  ASSERT_FALSE(b.address.empty());
  testing::CommandResult r =
      testing::run_partita({"submit", good_job(), "--daemons", a.address + "," + b.address, "--output", tmp_ / "remote"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "test accuracy");
  EXPECT_CONTAINS(r.err, "2 node(s)");
  EXPECT_TRUE(fs::exists(tmp_ / "remote/checkpoint.json"));
  EXPECT_TRUE(a.process->running()) << "a daemon did not outlive the job";
}

TEST_F(JobCommandTest, BadJobsAndFlagsAreNamed) {
  struct Case {
    std::string yaml, expected;
  };
  const std::vector<Case> cases = {
      {"data: {partitions: parts}\nmodel: {kind: graphsage, hiden: 8}\n", "model.hiden: unknown field"},
      {"data: {partitions: parts}\ntrain: {epochs: many}\n", "train.epochs: expected an integer"},
      {"data: {partitions: nowhere}\n", "data.partitions"},
      {"data: {partitions: parts}\nsampling: {fanouts: [5]}\n", "sampling.fanouts: has 1 entries but model.layers is 2"},
  };
  for (const Case& c : cases) {
    testing::CommandResult r = testing::run_partita({"run", write_job("bad.yaml", c.yaml)});
    EXPECT_EQ(r.exit_code, 2) << c.yaml;
    EXPECT_CONTAINS(r.err, c.expected);
  }
  testing::CommandResult r = testing::run_partita({"run", (tmp_ / "missing.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "missing.yaml");
  r = testing::run_partita({"submit", good_job()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "--daemons");
  r = testing::run_partita({"submit", good_job(), "--daemons", "127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "127.0.0.1:1");
  r = testing::run_partita({"run", good_job(), "--resume", "--overwrite"});
  EXPECT_EQ(r.exit_code, 2);
}

// A partition rewritten under a running job: its files shrink under their mappings. The
// run used to die of SIGBUS with no message; it must exit 1 naming a file of that part.
// Features are mapped here as they are when larger than memory (`storage: auto` would copy
// this small part into memory, and a copy does not see its file change).
TEST_F(JobCommandTest, APartitionTruncatedUnderARunningJobIsNamed) {
  const std::string job = write_job("long.yaml",
                                    "data: {partitions: parts}\n"
                                    "features: {storage: mapped}\n"
                                    "model: {kind: graphsage, hidden: 16, layers: 2}\n"
                                    "sampling: {fanouts: [5, 5], batch_size: 20}\n"
                                    "train: {epochs: 1000}\n"
                                    "output: out\n");
  ChildProcess run({kPartitaBinary, "run", job});
  // Wait until training has started (its first progress line), at most 60 s.
  for (int i = 0; i < 600 && run.errors_so_far().find("epoch 1/1000") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_NE(run.errors_so_far().find("epoch 1/1000"), std::string::npos) << run.errors_so_far();
  for (const auto& file : fs::directory_iterator(tmp_ / "parts/part0")) {
    if (file.path().extension() == ".bin") fs::resize_file(file.path(), 64);  // headers only
  }
  const ProcessResult r = run.wait(60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_CONTAINS(r.err, "partita: error: ");
  EXPECT_CONTAINS(r.err, "/parts/part0/");
  EXPECT_CONTAINS(r.err, ": the file was truncated while mapped");
}

// A job whose output disk is full fails naming the reason, and leaves no empty job.yaml.
TEST_F(JobCommandTest, AFullOutputDiskIsNamed) {
  testing::SmallDisk disk(tmp_ / "disk", 64 * 1024);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  {  // fill it up
    std::ofstream filler(tmp_ / "disk/filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), block.size())) {
    }
  }
  const std::string job = write_job("full.yaml",
                                    "data: {partitions: parts}\n"
                                    "model: {kind: gcn, hidden: 16, layers: 2}\n"
                                    "sampling: {fanouts: [5, 5], batch_size: 50}\n"
                                    "train: {epochs: 1}\n"
                                    "output: disk/out\n");
  const testing::CommandResult r = testing::run_partita({"run", job});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_CONTAINS(r.err, "No space left on device");
  EXPECT_FALSE(fs::exists(tmp_ / "disk/out/job.yaml") && fs::file_size(tmp_ / "disk/out/job.yaml") == 0);
}

}  // namespace
}  // namespace partita
