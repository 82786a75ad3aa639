// A cluster run with Ray's commands, in real processes on loopback: `partita start --head`
// and two `partita start --address HEAD` in the background, then `partita job submit | list
// | status | logs | stop | resume` without --address (the head's address is where `start`
// wrote it), a cancelled job resumed twice (by `submit --address --resume`, the old spelling,
// and `job resume`) to the end, with the weights of the same job run at once in one process,
// and `partita down --yes`. A deliberate cancel and an orderly stop are logged as what they
// are (info), never as an error or a dead node; each epoch's line is in the log once.
//
// The test's HOME is a temporary folder; the daemons are killed if it fails before `down`.
// Waits are bounded only to end a hang; what is checked is the state reached.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "base/subprocess.h"
#include "job_runs.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_config.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kPartitaBinary;

constexpr double kProcessSeconds = 180;
constexpr auto kBound = std::chrono::seconds(120);
// Long enough (some 30 steps an epoch) for the cancels to land while it runs: each cancel
// comes a few CLI commands after the test saw the job run, and a command's start (loading
// libtorch) takes seconds on a loaded machine, as long as dozens of epochs.
constexpr int kEpochs = 200;

size_t count_lines(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class CliClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(home());
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(6000, 4), options, tmp_ / "parts");
  }
  // Whatever `start` left running, if the test ended before `down`.
  void TearDown() override {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(home() + "/.partita", ec)) {
      if (entry.path().extension() != ".pid") continue;
      std::ifstream in(entry.path());
      long pid = 0;
      if (in >> pid && pid > 0) ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  std::string home() const { return tmp_ / "home"; }
  std::string log_of(const std::string& daemon) const {
    return testing::read_text(home() + "/.partita/logs/" + daemon + ".log");
  }

  // partita --insecure ARGS with the test's HOME, stdin from /dev/null.
  ProcessResult partita(const std::vector<std::string>& args) {
    std::string line = "exec /usr/bin/env -u PARTITA_ADDRESS HOME='" + home() + "' '" + kPartitaBinary + "' --insecure";
    for (const auto& a : args) line += " '" + a + "'";
    line += " </dev/null";
    ProcessResult r = run_process({"/bin/sh", "-c", line}, kProcessSeconds);
    EXPECT_FALSE(r.timed_out) << line;
    return r;
  }
  // `job status ID --json`; null when it fails.
  json job(const std::string& id) {
    ProcessResult r = partita({"job", "status", id, "--json", "--log-level", "warn"});
    if (r.exit_code != 0) return json();
    return json::parse(r.out, nullptr, false);
  }
  // The job's entry in `partita status --json`; null when it fails or lists no such job. What
  // the waits poll: status starts in milliseconds, `job status` loads libtorch first (half a
  // second of CPU a poll, taken from the job's training).
  json listed(const std::string& id) {
    ProcessResult r = partita({"status", "--json", "--log-level", "warn"});
    if (r.exit_code != 0) return json();
    const json s = json::parse(r.out, nullptr, false);
    if (!s.is_object() || !s.contains("jobs")) return json();
    for (const auto& j : s["jobs"]) {
      if (j.value("id", "") == id) return j;
    }
    return json();
  }
  json wait_for(const std::string& id, const std::function<bool(const json&)>& done) {
    const auto until = std::chrono::steady_clock::now() + kBound;
    json j = listed(id);
    while (!(j.is_object() && done(j)) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      j = listed(id);
    }
    return j;
  }
  static int epoch(const json& j) { return j.is_object() ? j["epoch"].get<int>() : -1; }

  std::string write_job(const std::string& name, int epochs) {
    testing::write_text(tmp_ / name, "data: {partitions: " + tmp_ / "parts" +
                                         "}\n"
                                         "model: {kind: graphsage, hidden: 32, layers: 2}\n"
                                         "sampling: {fanouts: [10, 10], batch_size: 10}\n"
                                         "train: {epochs: " + std::to_string(epochs) +
                                         ", checkpoint_every_steps: 10}\n"
                                         "cluster: {partitions_per_node: 1}\n"
                                         "output: " + tmp_ / "unused" + "\n");
    return tmp_ / name;
  }

  testing::TempDir tmp_;
};

TEST_F(CliClusterTest, RaysCommandsRunStopAndResumeAJobToTheWeightsOfAnUninterruptedRun) {
  ProcessResult r = partita({"start", "--head", "--listen", "127.0.0.1:0", "--runs", tmp_ / "runs"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(" on (127\\.0\\.0\\.1:\\d+)"))) << r.out;
  const std::string head = m[1];
  for (const char* name : {"a", "b"}) {
    r = partita({"start", "--address", head, "--name", name, "--listen", "127.0.0.1:0", "--cache",
                 tmp_ / (std::string("cache-") + name)});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  const std::string file = write_job("resumed.yaml", kEpochs);

  r = partita({"job", "submit", file, "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "job resumed-1 submitted to " + head);
  EXPECT_CONTAINS(r.out, "partita job logs resumed-1 --follow");
  const std::string id = "resumed-1";
  json j = wait_for(id, [](const json& j) { return epoch(j) >= 1 && j["state"] == "running"; });
  ASSERT_EQ(j["state"], "running") << j.dump(2);

  // A cancel, then a resume by the old spelling, which continues the latest stopped job of the file.
  r = partita({"job", "stop", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "job " + id + " cancelled");
  const int stopped_at = epoch(job(id));
  EXPECT_LT(stopped_at, kEpochs);
  r = partita({"submit", file, "--address", head, "--resume", "--detach"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "job " + id + " resumed on " + head + " from its last checkpoint");
  j = wait_for(id, [&](const json& j) { return epoch(j) > stopped_at && j["state"] == "running"; });
  ASSERT_EQ(j["state"], "running") << j.dump(2);
  EXPECT_GE(epoch(j), stopped_at) << "it continued, not started again";

  // Again, by `job resume`, followed to the end.
  r = partita({"job", "stop", id});
  EXPECT_CONTAINS(r.out, "job " + id + " cancelled");
  r = partita({"job", "resume", id});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "job " + id + " done; results in " + tmp_ / ("runs/" + id));
  j = job(id);
  EXPECT_EQ(j["state"], "done") << j.dump(2);
  EXPECT_EQ(epoch(j), kEpochs);
  r = partita({"job", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(id + " +done"))) << r.out;
  r = partita({"job", "resume", id});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "job " + id + " is done: nothing to resume");
  r = partita({"job", "resume", "nope-1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "no job 'nope-1' on this head");

  // The weights of the same job run at once.
  JobConfig config = load_job(file);
  config.output = tmp_ / "reference";
  const JobReport expected = testing::run_in_process(config);
  r = partita({"job", "logs", id});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string log = r.out;
  std::smatch hash;
  ASSERT_TRUE(std::regex_search(log, hash, std::regex("parameter hash (\\d+)"))) << log;
  EXPECT_EQ(std::stoull(hash[1]), expected.parameter_hash);
  // Each epoch's line once (a resumed epoch is logged by the attempt that finished it), and
  // the cancels are no errors.
  const std::string of = "/" + std::to_string(kEpochs);
  for (int e = 1; e <= kEpochs; ++e) {
    // The epoch's summary line ("epoch E/200: 3.1s, 40.00 batches/s, ..."), or a second one of
    // the driver's own; the progress lines ("epoch E/200: 20/31 steps") are not counted.
    const std::regex line("epoch " + std::to_string(e) + of + "(: [0-9.]+s, | val accuracy)");
    const auto n = std::distance(std::sregex_iterator(log.begin(), log.end(), line), std::sregex_iterator());
    EXPECT_LE(n, 1) << "epoch " << e << " logged " << n << " times:\n" << log;
  }
  EXPECT_TRUE(std::regex_search(log, std::regex("epoch " + std::to_string(kEpochs) + of + ": [0-9.]+s, "))) << log;
  EXPECT_CONTAINS(log, "[info] job " + id + ": job cancelled in epoch");
  EXPECT_EQ(log.find("[error]"), std::string::npos) << log;
  for (const char* node : {"node-a", "node-b"}) {
    const std::string node_log = log_of(node);
    EXPECT_EQ(node_log.find("[error]"), std::string::npos) << node << ":\n" << node_log;
    EXPECT_EQ(node_log.find("failed"), std::string::npos) << node << ":\n" << node_log;
  }

  r = partita({"down", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "stopped the cluster of " + head + ": 2 node(s) and the head");
  const std::string head_log = log_of("head");
  EXPECT_EQ(head_log.find("is dead"), std::string::npos) << head_log;
  EXPECT_EQ(head_log.find("[warning] head: member"), std::string::npos) << "nodes that leave as asked: " << head_log;
  EXPECT_EQ(count_lines(head_log, "left: the cluster is stopping"), 2u) << head_log;
}

}  // namespace
}  // namespace partita
