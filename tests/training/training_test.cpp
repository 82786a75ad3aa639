// Whole training jobs through the job driver: Cora's accuracy, replicas that agree after
// every step, the same losses in one process and on two daemons, resuming from a
// checkpoint, a lost daemon named, and what an embedding host sees: the progress callback
// and cancellation.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <regex>
#include <thread>

#include "actors/protocol.h"
#include "base/error.h"
#include "daemon_process.h"
#include "job_runs.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "runtime/runtime.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

using testing::run_in_process;

runtime::ActorSystemOptions system_options() { return testing::job_system_options(); }

// A small SBM graph partitioned in 2, and a job over it: fast enough to run several times.
class SmallJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(3000, 11), options, tmp_ / "parts");
  }
  // `train` replaces the job's train section.
  JobConfig job(const std::string& train = "{epochs: 2, seed: 3}") {
    return parse_job("data: {partitions: parts}\n"
                     "model: {kind: graphsage, hidden: 32, layers: 2, dropout: 0.3}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 64}\n"
                     "train: " + train + "\n"
                     "output: run\n",
                     tmp_.path(), "small job");
  }
  testing::TempDir tmp_;
};

TEST_F(SmallJobTest, ReplicasAgreeAfterEveryStepAndTheLossFalls) {
  JobConfig j = job("{epochs: 3, seed: 3, trainers_per_partition: 2}");
  ASSERT_EQ(j.num_trainers(), 4);
  JobReport report = run_in_process(j);
  ASSERT_EQ(report.epochs.size(), 3u);
  for (const EpochMetrics& m : report.epochs) {
    ASSERT_EQ(static_cast<int64_t>(m.step_hashes.size()), m.steps);
    // The driver fails the job when a replica's hash differs; the weights also move.
    for (size_t s = 1; s < m.step_hashes.size(); ++s) EXPECT_NE(m.step_hashes[s], m.step_hashes[s - 1]);
  }
  EXPECT_LT(report.epochs.back().train_loss, report.epochs.front().train_loss);
  EXPECT_GT(report.epochs.back().test_accuracy, 0.5);  // 4 classes in sbm_graph
  // Results are where the job said: a metrics line per epoch and the last checkpoint.
  std::ifstream metrics(fs::path(j.output) / "metrics.jsonl");
  int lines = 0;
  for (std::string line; std::getline(metrics, line);) ++lines;
  EXPECT_EQ(lines, 3);
  EXPECT_TRUE(fs::exists(fs::path(j.output) / "checkpoints" / "epoch-3.bin"));
}

TEST_F(SmallJobTest, ResumingFromACheckpointEndsWithTheSameWeights) {
  JobConfig whole = job();
  whole.output = tmp_ / "whole";
  const JobReport uninterrupted = run_in_process(whole);

  JobConfig parts = job();
  parts.output = tmp_ / "parts-run";
  RunOptions first;
  first.stop_after_epoch = 1;
  run_in_process(parts, first);
  RunOptions rest;
  rest.resume = true;
  const JobReport resumed = run_in_process(parts, rest);
  ASSERT_EQ(resumed.first_epoch, 2);
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_EQ(resumed.parameter_hash, uninterrupted.parameter_hash);
  EXPECT_EQ(resumed.epochs[0].step_losses, uninterrupted.epochs[1].step_losses);
}

// train.checkpoint_every_steps: a job stopped in the middle of epoch 2 resumes from the
// checkpoint after step 6 (or 9) of that epoch, not from its start, and ends with the
// weights, step losses and epoch metrics of the uninterrupted run.
TEST_F(SmallJobTest, AJobCancelledMidEpochResumesFromItsStepCheckpoint) {
  auto small_batches = [&](const std::string& output) {
    JobConfig j = parse_job("data: {partitions: parts}\n"
                            "model: {kind: graphsage, hidden: 32, layers: 2, dropout: 0.3}\n"
                            "sampling: {fanouts: [5, 5], batch_size: 16}\n"
                            "train: {epochs: 2, seed: 3, checkpoint_every_steps: 3}\n"
                            "output: " + output + "\n",
                            tmp_.path(), "small job");
    return j;
  };
  const JobReport uninterrupted = run_in_process(small_batches("whole"));
  ASSERT_EQ(uninterrupted.steps_per_epoch, 10);

  const JobConfig j = small_batches("stopped");
  RunOptions first;
  first.cancel = std::make_shared<CancelToken>();
  first.on_progress = [&](const JobProgress& p) {
    if (p.event == JobProgress::Event::step && p.epoch == 2 && p.step == 8) first.cancel->cancel();
  };
  try {
    run_in_process(j, first);
    ADD_FAILURE() << "not cancelled";
  } catch (const JobCancelled& e) {
    // The message names what the checkpoint holds: a step inside epoch 2, not epoch 1.
    EXPECT_TRUE(std::regex_search(std::string(e.what()), std::regex("holds step [69] of epoch 2 \\(resume to continue\\)")))
        << e.what();
  }
  const nlohmann::json pointer = nlohmann::json::parse(testing::read_text(j.output + "/checkpoint.json"));
  EXPECT_EQ(pointer["epoch"], 1);
  EXPECT_TRUE(pointer["step"] == 6 || pointer["step"] == 9) << pointer.dump();
  const std::optional<CheckpointPointer> read = read_checkpoint_pointer(j.output);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->epoch, 1);
  EXPECT_EQ(read->step, pointer["step"].get<int64_t>());

  // Damaged copies are named, not resumed: step sums that do not match the step, a pointer
  // that is not JSON or has no epoch.
  auto damaged = [&](const std::string& name, const std::string& text) {
    JobConfig copy = small_batches(tmp_ / name);
    fs::copy(j.output, copy.output, fs::copy_options::recursive);
    testing::write_text(copy.output + "/checkpoint.json", text);
    RunOptions resume;
    resume.resume = true;
    try {
      run_in_process(copy, resume);
      ADD_FAILURE() << name << ": resumed";
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  nlohmann::json short_sums = pointer;
  short_sums["partial"]["step_losses"].erase(0);
  EXPECT_CONTAINS(damaged("mismatch", short_sums.dump()), "the checkpoint's step sums do not match");
  EXPECT_CONTAINS(damaged("not-json", "{\"epoch\": "), "not-json/checkpoint.json is damaged");
  EXPECT_CONTAINS(damaged("no-epoch", "{\"step\": 3}"), "no-epoch/checkpoint.json is damaged");
  EXPECT_THROW(read_checkpoint_pointer(tmp_ / "no-epoch"), Error) << "the cluster's recovery reads it the same way";

  RunOptions rest;
  rest.resume = true;
  const JobReport resumed = run_in_process(j, rest);
  ASSERT_EQ(resumed.first_epoch, 2);
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_EQ(resumed.parameter_hash, uninterrupted.parameter_hash);
  EXPECT_EQ(resumed.epochs[0].step_losses, uninterrupted.epochs[1].step_losses);
  EXPECT_EQ(resumed.epochs[0].step_hashes, uninterrupted.epochs[1].step_hashes);
  EXPECT_EQ(resumed.epochs[0].train_loss, uninterrupted.epochs[1].train_loss);
  EXPECT_EQ(resumed.epochs[0].train_accuracy, uninterrupted.epochs[1].train_accuracy);
  EXPECT_EQ(resumed.epochs[0].test_accuracy, uninterrupted.epochs[1].test_accuracy);
}

TEST_F(SmallJobTest, RefusesToOverwriteOrResumeWhatIsNotThere) {
  JobConfig j = job();
  RunOptions resume;
  resume.resume = true;
  EXPECT_THROW(run_in_process(j, resume), UsageError);
  RunOptions one;
  one.stop_after_epoch = 1;
  run_in_process(j, one);
  try {
    run_in_process(j, one);
    ADD_FAILURE() << "a second run overwrote the first";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
  RunOptions overwrite = one;
  overwrite.overwrite = true;
  EXPECT_NO_THROW(run_in_process(j, overwrite));
}

TEST_F(SmallJobTest, TwoDaemonsGiveTheSameLossesAsOneProcessWithOrWithoutAFeatureCache) {
  JobConfig j = job();
  j.output = tmp_ / "local";
  const JobReport local = run_in_process(j);

  const testing::TwoDaemons two = testing::start_two_daemons();
  j.output = tmp_ / "remote";
  const JobReport remote = run_job(*two.runtime, j, {});
  ASSERT_EQ(remote.epochs.size(), local.epochs.size());
  for (size_t e = 0; e < local.epochs.size(); ++e) {
    EXPECT_EQ(remote.epochs[e].step_losses, local.epochs[e].step_losses) << "epoch " << e + 1;
    EXPECT_EQ(remote.epochs[e].step_hashes, local.epochs[e].step_hashes) << "epoch " << e + 1;
    EXPECT_EQ(remote.epochs[e].test_accuracy, local.epochs[e].test_accuracy);
  }
  // The job's feature cache (sampling.feature_cache_mb) and storage (features.storage)
  // change no number: with a cache of each policy and mapped features, the same losses and
  // weights.
  for (const char* policy : {"degree", "sieve"}) {
    SCOPED_TRACE(policy);
    j.feature_cache_mb = 1;
    j.feature_cache_policy = policy;
    j.feature_storage = "mapped";
    j.output = tmp_ / (std::string("cached-") + policy);
    const JobReport cached = run_job(*two.runtime, j, {});
    ASSERT_EQ(cached.epochs.size(), local.epochs.size());
    for (size_t e = 0; e < local.epochs.size(); ++e) {
      EXPECT_EQ(cached.epochs[e].step_losses, local.epochs[e].step_losses) << "epoch " << e + 1;
      EXPECT_EQ(cached.epochs[e].step_hashes, local.epochs[e].step_hashes) << "epoch " << e + 1;
    }
  }
  // The settings reach the daemons' samplers: one that only a sampler checks is refused there.
  j.feature_cache_policy = "lru";
  j.output = tmp_ / "refused";
  try {
    run_job(*two.runtime, j, {});
    ADD_FAILURE() << "a job with cache policy 'lru' ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("feature_cache_policy"), std::string::npos) << e.what();
  }
}

TEST_F(SmallJobTest, AKilledDaemonFailsTheJobNamingIt) {
  testing::expect_a_killed_daemon_fails_the_job_naming_it(job("{epochs: 1000, seed: 3}"));
}

// NaN features that reach a partition (the readers refuse them; a dataset built in memory
// does not pass through a reader) stop the job at the first step they poison, naming the
// epoch and step, instead of training on to a `nan` loss and chance accuracy. The batch's
// loss stays finite here (ReLU maps NaN to 0): the gradients give them away.
TEST(NonFiniteLossTest, NaNFeaturesStopTheJobNamingTheStep) {
  testing::TempDir tmp;
  Dataset graph = testing::sbm_graph(3000, 11);
  // The first 300 nodes' rows: some seed of the one full-neighbourhood batch reaches them.
  for (int64_t i = 0; i < 300 * graph.feature_dim; ++i) graph.x[i] = std::numeric_limits<float>::quiet_NaN();
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(graph, options, tmp / "parts");
  const JobConfig job = parse_job("data: {partitions: parts}\n"
                                  "model: {kind: graphsage, hidden: 16, layers: 2}\n"
                                  "sampling: {fanouts: [-1, -1], batch_size: 3000}\n"
                                  "train: {epochs: 1}\n"
                                  "output: run\n",
                                  tmp.path(), "nan job");
  try {
    run_in_process(job);
    ADD_FAILURE() << "a job with NaN features finished";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed in epoch 1: step 0: the loss or its gradients are not finite"), std::string::npos)
        << e.what();
  }
}

TEST_F(SmallJobTest, TheProgressCallbackSeesEveryStepInOrderAndTheEpochMetrics) {
  std::vector<JobProgress> events;
  std::vector<EpochMetrics> epoch_metrics;
  RunOptions options;
  options.on_progress = [&](const JobProgress& p) {
    events.push_back(p);
    if (p.event == JobProgress::Event::epoch) {
      ASSERT_NE(p.metrics, nullptr);
      epoch_metrics.push_back(*p.metrics);
    }
  };
  const JobReport report = run_in_process(job(), options);
  ASSERT_EQ(report.epochs.size(), 2u);
  ASSERT_EQ(epoch_metrics.size(), 2u);
  size_t i = 0;
  for (const EpochMetrics& m : report.epochs) {
    for (int64_t s = 1; s <= m.steps; ++s, ++i) {
      ASSERT_LT(i, events.size());
      const JobProgress& p = events[i];
      EXPECT_EQ(p.event, JobProgress::Event::step);
      EXPECT_EQ(p.epoch, m.epoch);
      EXPECT_EQ(p.epochs, 2);
      EXPECT_EQ(p.step, s);
      EXPECT_EQ(p.steps, m.steps);
      EXPECT_EQ(p.loss, m.step_losses[s - 1]);
      EXPECT_GT(p.steps_per_second, 0);
      EXPECT_EQ(p.metrics, nullptr);
    }
    ASSERT_LT(i, events.size());
    EXPECT_EQ(events[i].event, JobProgress::Event::epoch);
    EXPECT_EQ(events[i].epoch, m.epoch);
    EXPECT_EQ(events[i].step, m.steps);
    EXPECT_EQ(events[i].loss, m.train_loss);
    ++i;
  }
  EXPECT_EQ(i, events.size());
  for (size_t e = 0; e < report.epochs.size(); ++e) {
    const EpochMetrics &seen = epoch_metrics[e], &reported = report.epochs[e];
    EXPECT_EQ(seen.epoch, reported.epoch);
    EXPECT_EQ(seen.train_loss, reported.train_loss);
    EXPECT_EQ(seen.train_accuracy, reported.train_accuracy);
    EXPECT_EQ(seen.val_accuracy, reported.val_accuracy);
    EXPECT_EQ(seen.test_accuracy, reported.test_accuracy);
    EXPECT_EQ(seen.step_losses, reported.step_losses);
    EXPECT_EQ(seen.step_hashes, reported.step_hashes);
  }
}

TEST_F(SmallJobTest, AnExceptionFromTheProgressCallbackStopsTheJobAndIsRethrown) {
  RunOptions options;
  options.on_progress = [](const JobProgress& p) {
    if (p.step == 2) throw std::runtime_error("the host gave up");
  };
  try {
    run_in_process(job(), options);
    ADD_FAILURE() << "the job ignored its callback's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the host gave up");
  }
}

// The host cancels from its own thread while the driver is in the middle of epoch 2 (the
// callback of its second step waits until the token is set, so the moment is certain):
// the job stops at that step, run_job throws JobCancelled, epoch 1's checkpoint is kept
// and the job resumes from it.
TEST_F(SmallJobTest, CancellingFromAnotherThreadStopsTheJobAndKeepsTheCheckpoint) {
  JobConfig j = job("{epochs: 1000, seed: 3}");
  j.batch_size = 16;  // ~10 steps per epoch
  auto token = std::make_shared<CancelToken>();
  std::mutex mutex;
  std::condition_variable changed;
  bool mid_epoch = false;
  RunOptions options;
  options.cancel = token;
  options.on_progress = [&](const JobProgress& p) {
    if (p.event != JobProgress::Event::step || p.epoch != 2 || p.step != 2) return;
    std::unique_lock<std::mutex> lock(mutex);
    mid_epoch = true;
    changed.notify_all();
    changed.wait_for(lock, seconds(30), [&] { return token->cancelled(); });
  };
  std::thread host([&] {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait_for(lock, seconds(60), [&] { return mid_epoch; });
    token->cancel();
    changed.notify_all();
  });
  auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
  prepare_data(j, 2);
  try {
    run_job(*rt, j, options);
    ADD_FAILURE() << "the job ignored its cancellation";
  } catch (const JobCancelled& e) {
    EXPECT_EQ(e.epoch(), 2);
    EXPECT_EQ(e.steps_done(), 2);
    EXPECT_EQ(e.checkpoint_epoch(), 1);
    EXPECT_NE(std::string(e.what()).find("cancelled in epoch 2"), std::string::npos) << e.what();
  }
  host.join();
  EXPECT_TRUE(fs::exists(fs::path(j.output) / "checkpoints" / "epoch-1.bin"));

  // The same runtime runs the next job: the resumed one, for one more epoch.
  RunOptions resume;
  resume.resume = true;
  resume.stop_after_epoch = 2;
  const JobReport resumed = run_job(*rt, j, resume);
  EXPECT_EQ(resumed.first_epoch, 2);
  EXPECT_EQ(resumed.epochs.size(), 1u);
}

// A token set before the job starts stops it before its first step.
TEST_F(SmallJobTest, AJobCancelledBeforeItStartsTrainsNothing) {
  RunOptions options;
  options.cancel = std::make_shared<CancelToken>();
  options.cancel->cancel();
  try {
    run_in_process(job(), options);
    ADD_FAILURE() << "the job ignored its cancellation";
  } catch (const JobCancelled& e) {
    EXPECT_EQ(e.epoch(), 1);
    EXPECT_EQ(e.steps_done(), 0);
    EXPECT_EQ(e.checkpoint_epoch(), 0);
  }
}

// Cora, 2 partitions x 1 trainer, 2-layer GraphSAGE: the published accuracy, over 3 seeds of
// training on one split (data.split_seed: 0, as a fixed split is Cora's convention).
TEST(CoraTest, GraphSageReachesPublishedAccuracy) {
  testing::TempDir tmp;
  double sum = 0;
  for (uint64_t seed : {1, 2, 3}) {
    JobConfig job = parse_job("data: {dataset: " + testing::dataset_path("cora") +
                                  ", format: linqs, num_partitions: 2, split_seed: 0}\n"
                                  "model: {kind: graphsage, hidden: 128, layers: 2, dropout: 0.6}\n"
                                  "sampling: {fanouts: [25, 10], batch_size: 32}\n"
                                  "train: {epochs: 20, learning_rate: 0.005, weight_decay: 0.001, seed: " +
                                  std::to_string(seed) + "}\noutput: run-" + std::to_string(seed) + "\n",
                              tmp.path(), "cora job");
    JobReport report = run_in_process(job);
    const double accuracy = report.epochs.back().test_accuracy;
    std::printf("seed %llu: test accuracy %.4f\n", static_cast<unsigned long long>(seed), accuracy);
    sum += accuracy;
  }
  EXPECT_GE(sum / 3, 0.78);
}

}  // namespace
}  // namespace partita
