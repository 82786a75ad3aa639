// Link prediction with relational encoders on heterogeneous graphs (task: link_prediction,
// encoder: rgcn | hetero_sage, model.target_edge): R-GCN with basis decomposition and a
// DistMult decoder learns held-out authorships of the heterogeneous generator's graph
// (ranking the true paper above sampled ones far beyond chance); heterogeneous GraphSAGE on
// MovieLens (examples/movielens_link.yaml) learns who rates what, and the time split its job
// prepares holds no held-out rating in either edge type; an encoder that does not fit the
// graph, or a target edge type it does not have, is named.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "base/error.h"
#include "embeddings/kg_triples.h"
#include "expect_error.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::run_in_process;

// The academic graph (papers with features, authors and venues without; 5 edge types with
// their reverses), 10% of the authorships held out for test.
JobConfig authorship_job(const std::string& dir, const std::string& model, const std::string& output) {
  return parse_job("task: link_prediction\n"
                   "data: {generate: {kind: hetero, nodes: 2000, classes: 4, features: 16, seed: 2},\n"
                   "       num_partitions: 2, holdout: {val: 0.05, test: 0.1}}\n"
                   "model: " + model + "\n"
                   "negatives: {k: 3, chunk_size: 1}\n"
                   "sampling: {fanouts: [5, 5], batch_size: 128}\n"
                   "train: {epochs: 10, learning_rate: 0.01, seed: 3}\n"
                   "eval: {negatives: 10}\n"
                   "output: " + output + "\n",
                   dir, "authorship job");
}

// An author writes papers of its own field 80% of the time, and a paper's features tell its
// field: an encoder that reads an author's papers (rated through written_by) and a paper's
// features ranks the held-out paper above 10 random ones. Chance: AUC 0.5, MRR 0.27; the
// fields alone allow about 0.78 (a fifth of authorships cross fields, a quarter of random
// papers share the author's); measured 0.77 / 0.47 after 8 epochs, 0.68 / 0.40 after 4.
TEST(HeteroLinkTest, RgcnWithDistMultLearnsHeldOutAuthorships) {
  testing::TempDir tmp;
  const JobReport report = run_in_process(authorship_job(
      tmp.path(),
      "{encoder: rgcn, decomposition: basis, bases: 2, decoder: distmult, dim: 16, hidden: 16, layers: 2, "
      "dropout: 0.0, target_edge: [author, writes, paper]}",
      "rgcn"));
  const EpochMetrics& last = report.epochs.back();
  std::printf("R-GCN + DistMult: test AUC %.4f, MRR %.4f, Hits@1 %.4f\n", last.ranking_metric("test.auc"),
              last.ranking_metric("test.mrr"), last.ranking_metric("test.hits@1"));
  EXPECT_LT(last.train_loss, report.epochs.front().train_loss);
  EXPECT_GE(last.ranking_metric("test.auc"), 0.74);
  EXPECT_GE(last.ranking_metric("test.mrr"), 0.43);
  // Every held-out edge is an authorship: 10% of them.
  EXPECT_GT(last.ranking_metric("test.edges"), 500);
}

TEST(HeteroLinkTest, AnEncoderOrTargetThatDoesNotFitTheGraphIsNamed) {
  testing::TempDir tmp;
  const auto& refused = testing::expect_usage_error;
  fs::create_directories(tmp / "plain");
  {
    std::ofstream edges(tmp / "plain/edges.txt");
    for (int i = 0; i < 50; ++i) edges << i << " " << (i + 1) % 50 << "\n" << (i + 1) % 50 << " " << i << "\n";
  }
  refused(
      [&] {
        run_in_process(parse_job("task: link_prediction\n"
                                 "data: {dataset: plain/edges.txt, format: edgelist, num_partitions: 1,"
                                 " holdout: {test: 0.1}}\n"
                                 "model: {encoder: rgcn}\nsampling: {fanouts: [5, 5]}\noutput: homogeneous\n",
                                 tmp.path(), "rgcn on a homogeneous graph"));
      },
      "model.encoder: rgcn needs a heterogeneous graph");
  refused(
      [&] {
        run_in_process(authorship_job(tmp.path(), "{encoder: hetero_sage, target_edge: [author, reads, paper]}",
                                      "no-such-type"));
      },
      "model.target_edge: [author, reads, paper] is not an edge type of dataset");
  refused([&] { authorship_job(tmp.path(), "{encoder: rgcn, target_edge: [author, writes]}", "short"); },
          "model.target_edge: expected [source type, relation, destination type]");
  refused([&] { authorship_job(tmp.path(), "{encoder: hetero_sage, decomposition: basis, bases: 2}", "sage"); },
          "model.decomposition: applies to encoder: rgcn only");
  refused(
      [&] {
        JobConfig j = authorship_job(tmp.path(), "{encoder: rgcn, target_edge: [author, writes, paper]}", "big-k");
        j.link.negatives = 2001;
        run_in_process(j);
      },
      "negatives.k: 2001 is more than the 2000 'paper' nodes of model.target_edge");
}

// Every (user, movie) pair of the training graph, in either edge type, against the held-out
// ones: none may be in both.
void expect_no_held_out_rating_in_the_graph(const std::string& partitions) {
  const PartitionFolder folder(partitions);
  const KgTriples triples(folder);
  std::set<std::pair<int64_t, int64_t>> graph;
  const TripleList& train = triples.train();
  for (int64_t e = 0; e < train.size(); ++e) {
    graph.insert({std::min(train.head[e], train.tail[e]), std::max(train.head[e], train.tail[e])});
  }
  int64_t held = 0, leaked = 0;
  for (const char* split : {"valid", "test"}) {
    for (int p = 0; p < folder.meta().num_parts; ++p) {
      const TripleList out = triples.held_out(split, p);
      for (int64_t i = 0; i < out.size(); ++i) {
        ++held;
        leaked += graph.count({std::min(out.head[i], out.tail[i]), std::max(out.head[i], out.tail[i])});
      }
    }
  }
  EXPECT_GT(held, 10000);
  EXPECT_EQ(leaked, 0) << "held-out ratings still in the graph the job trains on";
}

JobConfig movielens_job(const std::string& output) {
  JobConfig job = load_job(std::string(testing::kSourceDir) + "/examples/movielens_link.yaml");
  job.dataset = testing::dataset_path("movielens-small");
  job.output = output;
  return job;
}

// The example's time split (the last 10% of ratings by time for test, 5% before them for
// validation), as the job prepares it: no held-out rating is left in the graph as `rates`
// or as `rated_by`.
TEST(MovieLensLinkTest, TheTimeSplitLeavesNoHeldOutRatingInTheGraph) {
  testing::TempDir tmp;
  const JobConfig job = movielens_job(tmp / "run");
  prepare_data(job, 2);
  expect_no_held_out_rating_in_the_graph(job.partition_dir());
}

// Heterogeneous GraphSAGE with a learnt input row per node (examples/movielens_link.yaml) on
// a random split, one epoch: test AUC >= 0.85 (popularity alone, a movie's training
// ratings, gives 0.83 on such a split; PyG's tutorial about 0.93 after 5 epochs).
// BENCHMARKS.md has the time split's figures, where 88% of the test ratings are by users
// with no rating before them.
TEST(MovieLensLinkQuality, HeteroSageLearnsWhoRatesWhatOnARandomSplit) {
  testing::TempDir tmp;
  JobConfig job = movielens_job(tmp / "run");
  job.holdout_by_time = false;
  job.temporal_time.clear();
  job.epochs = 1;
  const JobReport report = run_in_process(job);
  const EpochMetrics& last = report.epochs.back();
  std::printf("MovieLens (random split, 1 epoch): test AUC %.4f, MRR %.4f over %.0f ratings\n",
              last.ranking_metric("test.auc"), last.ranking_metric("test.mrr"), last.ranking_metric("test.edges"));
  EXPECT_GE(last.ranking_metric("test.auc"), 0.85);
}

// The goal job of heterogeneous link prediction (examples/movielens_link_history.yaml: the time split with its
// held-out ratings kept as history, users shared, movies from their genres and decade plus a
// learnt row, 2 epochs) on 2 partitions: test AUC >= 0.895 against negatives that are movies
// the user never rated (training/gnn_link_plan.h). Seed 1 gives 0.901 (3 seeds: BENCHMARKS.md,
// "Heterogeneous link prediction"); with negatives drawn among every movie, rated ones
// included, 0.886.
TEST(MovieLensLinkQuality, TheHistoryExampleRanksTheNextRatingAboveUnratedMovies) {
  testing::TempDir tmp;
  JobConfig job = load_job(std::string(testing::kSourceDir) + "/examples/movielens_link_history.yaml");
  job.dataset = testing::dataset_path("movielens-small");
  job.output = tmp / "run";
  const JobReport report = run_in_process(job);
  const EpochMetrics& last = report.epochs.back();
  std::printf("MovieLens (time split, history kept, 2 epochs): test AUC %.4f, MRR %.4f over %.0f ratings\n",
              last.ranking_metric("test.auc"), last.ranking_metric("test.mrr"), last.ranking_metric("test.edges"));
  EXPECT_GE(last.ranking_metric("test.auc"), 0.895);
}

}  // namespace
}  // namespace partita
