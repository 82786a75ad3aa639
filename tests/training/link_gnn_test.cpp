// Link prediction with a GNN encoder (task: link_prediction, encoder: graphsage | gcn | gat):
// the encoder learns held-out links of a small SBM graph; the same step losses on 1 and 2
// partitions and 4 trainers, and exactly the same in one process and on two daemons;
// resuming from a checkpoint (at an epoch end or inside an epoch) ends with the same weights;
// Cora reaches the published GAE AUC; the metrics computed by hand on a toy; bad input
// named. (That a step's positives never reach its sampled subgraph: the sampler actor's
// tests, ALinkPlanLeavesItsExcludedEdgesOutOfEveryHop.)
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "daemon_process.h"
#include "expect_error.h"
#include "job_runs.h"
#include "runtime/runtime.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/link_metrics.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::run_in_process;

// A homophilous SBM graph the job generates (4 classes, class-dependent features): linked
// nodes tend to share a class, so their features predict links.
class GnnLinkJobTest : public ::testing::Test {
 protected:
  JobConfig job(int parts, const std::string& model, const std::string& train, const std::string& output,
                const std::string& eval = "{negatives: 3}") {
    return parse_job("task: link_prediction\n"
                     "data: {generate: {kind: sbm, nodes: 600, classes: 4, features: 16, avg_degree: 8, seed: 2},\n"
                     "       num_partitions: " + std::to_string(parts) + ", holdout: {val: 0.05, test: 0.1}}\n"
                     "model: " + model + "\n"
                     "negatives: {k: 2, chunk_size: 1}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 128}\n"
                     "train: " + train + "\n"
                     "eval: " + eval + "\n"
                     "output: " + output + "\n",
                     tmp_.path(), "gnn link job");
  }
  // No dropout: its masks follow positions in a batch, which differ with the partitioning.
  JobConfig small_job(int parts, const std::string& encoder, const std::string& output) {
    return job(parts, "{encoder: " + encoder + ", dim: 16, hidden: 16, layers: 2, heads: 2, dropout: 0.0}",
               "{epochs: 2, learning_rate: 0.01, seed: 3}", output);
  }
  testing::TempDir tmp_;
};

void expect_same_losses(const JobReport& a, const JobReport& b, double relative) {
  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    ASSERT_EQ(a.epochs[e].step_losses.size(), b.epochs[e].step_losses.size());
    for (size_t s = 0; s < a.epochs[e].step_losses.size(); ++s) {
      EXPECT_NEAR(a.epochs[e].step_losses[s], b.epochs[e].step_losses[s], relative * a.epochs[e].step_losses[s])
          << "epoch " << e + 1 << " step " << s;
    }
    EXPECT_NEAR(a.epochs[e].ranking_metric("test.auc"), b.epochs[e].ranking_metric("test.auc"), 1e-3);
    EXPECT_EQ(a.epochs[e].ranking_metric("test.edges"), b.epochs[e].ranking_metric("test.edges"));
  }
}

TEST_F(GnnLinkJobTest, TheEncoderLearnsHeldOutLinks) {
  const JobReport report =
      run_in_process(job(2, "{encoder: graphsage, dim: 16, hidden: 32, layers: 2, dropout: 0.2}",
                         "{epochs: 5, learning_rate: 0.01, seed: 1}", "run"));
  const EpochMetrics& first = report.epochs.front();
  const EpochMetrics& last = report.epochs.back();
  EXPECT_LT(last.train_loss, first.train_loss);
  // Chance is 0.5. Knowing the classes alone gives 0.775 on this graph (80% of its edges
  // join a class, a quarter of random pairs do); the features are noisy. One epoch in the
  // encoder is near 0.57.
  EXPECT_GT(last.ranking_metric("test.auc"), 0.65);
  EXPECT_GT(last.ranking_metric("valid.auc"), 0.65);
  EXPECT_GT(last.ranking_metric("test.auc"), first.ranking_metric("test.auc") + 0.05);
  EXPECT_GT(last.ranking_metric("test.edges"), 0);
  EXPECT_GE(last.ranking_metric("test.mrr"), last.ranking_metric("test.hits@1"));
  std::ifstream metrics(tmp_ / "run/metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) {
    ++lines;
    EXPECT_CONTAINS(line, "\"test.auc\"");
  }
  EXPECT_EQ(lines, 5);
}

// eval.every: 2 of 3 epochs: the held-out links are scored after epoch 2 and after the last,
// and epoch 1's record in metrics.jsonl has no metrics of them.
TEST_F(GnnLinkJobTest, EvalEveryScoresEveryNthEpochAndTheLast) {
  const JobReport report = run_in_process(job(1, "{encoder: graphsage, dim: 8, hidden: 8, layers: 2, dropout: 0.0}",
                                              "{epochs: 3, learning_rate: 0.01, seed: 1}", "run",
                                              "{negatives: 3, every: 2}"));
  ASSERT_EQ(report.epochs.size(), 3u);
  EXPECT_TRUE(report.epochs[0].ranking.empty());
  EXPECT_GT(report.epochs[1].ranking_metric("test.edges"), 0);
  EXPECT_GT(report.epochs[2].ranking_metric("test.edges"), 0);
  std::ifstream metrics(tmp_ / "run/metrics.jsonl");
  std::vector<std::string> lines;
  for (std::string line; std::getline(metrics, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].find("\"test.auc\""), std::string::npos) << lines[0];
  EXPECT_CONTAINS(lines[1], "\"test.auc\"");
  EXPECT_CONTAINS(lines[2], "\"test.auc\"");
}

TEST_F(GnnLinkJobTest, OneAndTwoPartitionsAndFourTrainersGiveTheSameLosses) {
  for (const char* encoder : {"graphsage", "gat"}) {
    SCOPED_TRACE(encoder);
    const JobReport one = run_in_process(small_job(1, encoder, std::string("one-") + encoder));
    JobConfig four = small_job(2, encoder, std::string("four-") + encoder);
    four.trainers_per_partition = 2;
    for (const JobConfig& j : {small_job(2, encoder, std::string("two-") + encoder), four}) {
      SCOPED_TRACE(std::to_string(j.num_trainers()) + " trainers");
      // The same positives meet the same negatives in the same sampled trees; only the
      // order of float sums differs.
      expect_same_losses(one, run_in_process(j), 1e-4);
    }
  }
}

TEST_F(GnnLinkJobTest, ResumingFromACheckpointEndsWithTheSameWeights) {
  const JobReport uninterrupted = run_in_process(small_job(2, "graphsage", "whole"));
  const JobConfig parts = small_job(2, "graphsage", "parts-run");
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
  EXPECT_EQ(resumed.epochs[0].ranking, uninterrupted.epochs[1].ranking);
}

TEST_F(GnnLinkJobTest, AJobCancelledMidEpochResumesFromItsStepCheckpoint) {
  const auto with_step_checkpoints = [&](const std::string& output) {
    JobConfig j = small_job(2, "graphsage", output);
    j.checkpoint_every_steps = 2;
    return j;
  };
  const JobReport uninterrupted = run_in_process(with_step_checkpoints("whole"));
  const int64_t steps = uninterrupted.steps_per_epoch;
  ASSERT_GE(steps, 4);

  const JobConfig j = with_step_checkpoints("stopped");
  RunOptions first;
  first.cancel = std::make_shared<CancelToken>();
  first.on_progress = [&](const JobProgress& p) {
    if (p.event == JobProgress::Event::step && p.epoch == 2 && p.step == steps - 1) first.cancel->cancel();
  };
  EXPECT_THROW(run_in_process(j, first), JobCancelled);
  const nlohmann::json pointer = nlohmann::json::parse(testing::read_text(j.output + "/checkpoint.json"));
  EXPECT_EQ(pointer["epoch"], 1);
  EXPECT_GT(pointer["step"].get<int64_t>(), 0) << pointer.dump();

  RunOptions rest;
  rest.resume = true;
  const JobReport resumed = run_in_process(j, rest);
  ASSERT_EQ(resumed.first_epoch, 2);
  ASSERT_EQ(resumed.epochs.size(), 1u);
  EXPECT_EQ(resumed.parameter_hash, uninterrupted.parameter_hash);
  EXPECT_EQ(resumed.epochs[0].step_losses, uninterrupted.epochs[1].step_losses);
  EXPECT_EQ(resumed.epochs[0].train_loss, uninterrupted.epochs[1].train_loss);
  EXPECT_EQ(resumed.epochs[0].ranking, uninterrupted.epochs[1].ranking);
}

// A cancel stops the trainers' allreduce group while they are in a step: they end the epoch
// as stopped, logged at info, not as a failure.
TEST_F(GnnLinkJobTest, ACancelledJobsTrainersStopWithoutAnError) {
  JobConfig j = small_job(2, "graphsage", "cancelled");
  j.epochs = 1000;
  testing::expect_cancel_mid_epoch_logs_no_error(j);
}

TEST_F(GnnLinkJobTest, TwoDaemonsGiveTheSameLossesAsOneProcess) {
  JobConfig j = small_job(2, "graphsage", "local");
  const JobReport local = run_in_process(j);
  j.output = tmp_ / "remote";
  j.partitions = tmp_ / "local/partitions";  // as prepared by the local run
  const JobReport remote = testing::run_on_two_daemons(j);
  ASSERT_EQ(remote.epochs.size(), local.epochs.size());
  for (size_t e = 0; e < local.epochs.size(); ++e) {
    EXPECT_EQ(remote.epochs[e].step_losses, local.epochs[e].step_losses) << "epoch " << e + 1;
    EXPECT_EQ(remote.epochs[e].step_hashes, local.epochs[e].step_hashes) << "epoch " << e + 1;
    EXPECT_EQ(remote.epochs[e].ranking, local.epochs[e].ranking) << "epoch " << e + 1;
  }
}

TEST_F(GnnLinkJobTest, BadInputIsNamed) {
  const auto& refused = testing::expect_usage_error;
  // More negatives than nodes.
  refused(
      [&] {
        JobConfig j = job(1, "{encoder: graphsage}", "{epochs: 1}", "big-k");
        j.link.negatives = 601;
        run_in_process(j);
      },
      "negatives.k: 601 is more than the 600 nodes of the graph");
  refused(
      [&] {
        JobConfig j = job(1, "{encoder: graphsage}", "{epochs: 1}", "big-eval");
        j.link.eval_negatives = 1000;
        run_in_process(j);
      },
      "eval.negatives: 1000 is more than the 600 nodes of the graph");
  // A graph without features, and one without held-out edges.
  fs::create_directories(tmp_ / "plain");
  {
    std::ofstream edges(tmp_ / "plain/edges.txt");
    for (int i = 0; i < 50; ++i) edges << i << " " << (i + 1) % 50 << "\n" << (i + 1) % 50 << " " << i << "\n";
  }
  const auto plain = [&](const std::string& holdout, const std::string& output) {
    return parse_job("task: link_prediction\n"
                     "data: {dataset: plain/edges.txt, format: edgelist, num_partitions: 1" + holdout + "}\n"
                     "model: {encoder: graphsage}\nsampling: {fanouts: [5, 5]}\n"
                     "output: " + output + "\n",
                     tmp_.path(), "plain job");
  };
  refused([&] { run_in_process(plain(", holdout: {test: 0.1}", "featureless")); },
          "model.encoder: graphsage reads node features");
  refused(
      [&] {
        run_in_process(parse_job("task: link_prediction\n"
                                 "data: {generate: {kind: sbm, nodes: 600, classes: 4, features: 16, seed: 2}}\n"
                                 "model: {encoder: graphsage}\nsampling: {fanouts: [5, 5]}\noutput: no-holdout\n",
                                 tmp_.path(), "job without held-out edges"));
      },
      "has no held-out edges to evaluate a link predictor on: give data.holdout");
  // In the job file.
  const auto parsed = [&](const std::string& text) { parse_job(text, tmp_.path(), "bad job"); };
  const std::string data = "data: {dataset: plain/edges.txt, format: edgelist}\n";
  refused([&] { parsed("task: link_prediction\n" + data + "model: {encoder: gcn}\neval: {negatives: -1}\n"); },
          "eval.negatives");
  refused([&] { parsed("task: link_prediction\n" + data + "model: {encoder: gat, decoder: rescal}\n"); },
          "model.decoder: 'rescal' is not one of: dot, distmult, complex, transe");
  refused([&] { parsed("data: {dataset: plain/edges.txt, format: edgelist, holdout: {test: 0.1}}\n"); },
          "data.holdout.test: holds out edges, for task: link_prediction only");
  refused([&] { parsed("task: link_prediction\n" + data + "model: {encoder: graphsage, layers: 3}\n"); },
          "sampling.fanouts: has 2 entries but model.layers is 3");
  refused([&] { parsed("task: link_prediction\n" + data + "model: {encoder: graphsage}\ntrain: {regularizer: n3}\n"); },
          "train.regularizer: 'n3' is not one of: none");
}

TEST(LinkMetricsTest, AucMrrAndHitsByHand) {
  // Three positives with two negatives each: scores (positive, negatives).
  const std::vector<float> rows = {0.9f, 0.1f, 0.95f,   // rank 2
                                   0.5f, 0.5f, 0.2f,    // a tie: rank 1.5
                                   0.3f, 0.4f, 0.35f};  // rank 3
  const LinkMetrics m = link_metrics(Span<const float>(rows), 2);
  EXPECT_EQ(m.positives, 3);
  // Pairs (positive > negative) over all 3 x 6: 0.9 beats 4 (0.1 0.5 0.2 0.4 0.35... ) by hand:
  // negatives {0.1, 0.95, 0.5, 0.2, 0.4, 0.35}; 0.9 > 5; 0.5 > 4 and ties 1; 0.3 > 2. (5 + 4.5 + 2) / 18.
  EXPECT_NEAR(m.auc, 11.5 / 18, 1e-9);
  EXPECT_NEAR(m.mrr, (1.0 / 2 + 1.0 / 1.5 + 1.0 / 3) / 3, 1e-9);
  EXPECT_NEAR(m.hits1, 0.0, 1e-12);
  EXPECT_NEAR(m.hits3, 1.0, 1e-12);
  const double softplus = std::log1p(std::exp(-0.9));
  EXPECT_GT(m.loss, softplus / 3);
  EXPECT_EQ(m.named("test").front().first, "test.auc");
  EXPECT_THROW(link_metrics(Span<const float>(rows.data(), 8), 2), Error);
  EXPECT_EQ(link_metrics(Span<const float>(), 2).auc, 0);
}

// Cora with 10% of its links held out for test and 5% for validation, GraphSAGE + dot
// product (examples/cora_link.yaml): the published GAE's test AUC (0.91), over 3 seeds.
TEST(CoraLinkQuality, GraphSageWithADotProductReachesGaeAuc) {
  testing::TempDir tmp;
  const std::string example = std::string(testing::kSourceDir) + "/examples/cora_link.yaml";
  double sum = 0;
  for (uint64_t seed : {1, 2, 3}) {
    JobConfig job = load_job(example);
    job.dataset = testing::dataset_path("cora");
    job.seed = seed;
    job.output = tmp / ("run-" + std::to_string(seed));
    const JobReport report = run_in_process(job);
    const double auc = report.epochs.back().ranking_metric("test.auc");
    std::printf("seed %llu: test AUC %.4f\n", static_cast<unsigned long long>(seed), auc);
    sum += auc;
  }
  EXPECT_GE(sum / 3, 0.90);
}

}  // namespace
}  // namespace partita
