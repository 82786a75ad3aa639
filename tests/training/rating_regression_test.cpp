// Rating regression (task: link_prediction, train.loss: mse): a heterogeneous GraphSAGE
// learns the ratings of a small MovieLens-format graph in which a user's taste shows in what
// it rates, and beats predicting the training mean on held-out ratings; the held-out ratings
// travel with the held-out edges into the partition folder; a regression job on edges
// without a rating, or without a GNN encoder, is named.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/random.h"
#include "embeddings/kg_triples.h"
#include "expect_error.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "test_util.h"
#include "training/gnn_link_trainer.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/rating_metrics.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::run_in_process;

// 300 users and 120 movies of 4 genres (30 each). User u likes genre u % 4: of its 16
// ratings, 12 are movies of that genre rated 4.5 and 4 of the others rated 1.5 (+- 0.5
// noise). So what a user rates tells its taste, and a movie's genre (its features) whether
// a user likes it; a movie's mean rating does not (each is rated by fans and others alike).
void write_taste_movielens(const fs::path& dir) {
  fs::create_directories(dir);
  constexpr int kUsers = 300, kMovies = 120, kGenres = 4;
  {
    std::ofstream movies(dir / "movies.csv");
    movies << "movieId,title,genres\n";
    for (int m = 0; m < kMovies; ++m) movies << m + 1 << ",Movie " << m << ",G" << m % kGenres << "\n";
  }
  std::ofstream ratings(dir / "ratings.csv");
  ratings << "userId,movieId,rating,timestamp\n";
  Rng rng(7);
  for (int u = 0; u < kUsers; ++u) {
    const int liked = u % kGenres;
    for (int i = 0; i < 16; ++i) {
      const bool likes = i < 12;
      // A movie of the liked genre (m % 4 == liked) or of another, distinct per i.
      const int slot = static_cast<int>((u * 7 + i * 11) % (kMovies / kGenres));
      const int genre = likes ? liked : (liked + 1 + i % (kGenres - 1)) % kGenres;
      const int movie = slot * kGenres + genre;
      const double noise = static_cast<double>(rng.below(3)) * 0.5 - 0.5;  // -0.5, 0, 0.5
      ratings << u + 1 << "," << movie + 1 << "," << (likes ? 4.5 : 1.5) + noise << "," << 1000 + u * 16 + i << "\n";
    }
  }
}

JobConfig rating_job(const std::string& dir, const std::string& dataset, const std::string& train,
                     const std::string& output) {
  return parse_job("task: link_prediction\n"
                   "data: {dataset: " + dataset + ", format: movielens, num_partitions: 2,"
                   " holdout: {val: 0.05, test: 0.15}}\n"
                   "model: {encoder: hetero_sage, target_edge: [user, rates, movie], dim: 16, hidden: 16, layers: 2,"
                   " dropout: 0.0}\n"
                   "sampling: {fanouts: [10, 10], batch_size: 64}\n"
                   "train: {" + train + "}\n"
                   "output: " + output + "\n",
                   dir, "rating job");
}

// Measured: test RMSE about 0.6 after 8 epochs where both baselines are about 1.3.
TEST(RatingRegressionTest, HeteroSageBeatsTheTrainingMeanOnHeldOutRatings) {
  testing::TempDir tmp;
  write_taste_movielens(tmp / "taste");
  const JobConfig job =
      rating_job(tmp.path(), "taste", "loss: mse, epochs: 8, learning_rate: 0.01, seed: 3", "regression");
  const JobReport report = run_in_process(job);
  const EpochMetrics& last = report.epochs.back();
  const double rmse = last.ranking_metric("test.rmse"), global = last.ranking_metric("test.rmse_global_mean"),
               per_movie = last.ranking_metric("test.rmse_destination_mean");
  std::printf("rating regression: test RMSE %.4f, training mean %.4f, per-movie mean %.4f, over %.0f ratings\n", rmse,
              global, per_movie, last.ranking_metric("test.edges"));
  EXPECT_EQ(last.ranking_metric("test.edges"), 720);  // 15% of 4800 ratings
  EXPECT_GT(global, 1.0);  // the split's ratings do vary
  EXPECT_LT(rmse, 0.8 * global);
  EXPECT_LT(last.train_loss, report.epochs.front().train_loss);

  // The held-out ratings are the ones the data had: every one 1 or 1.5 or 2, or 4 or 4.5 or 5.
  const PartitionFolder folder(job.partition_dir());
  EXPECT_TRUE(folder.meta().has_edge_split_attr);
  const KgTriples triples(folder);
  int64_t held = 0;
  for (int p = 0; p < 2; ++p) {
    const TripleList test = triples.held_out("test", p);
    ASSERT_EQ(test.value.size(), static_cast<size_t>(test.size()));
    for (float v : test.value) EXPECT_TRUE((v >= 1.0f && v <= 2.0f) || (v >= 4.0f && v <= 5.0f)) << v;
    held += test.size();
  }
  EXPECT_EQ(held, 720);
}

TEST(RatingRegressionTest, ARegressionWithoutRatingsOrEncoderIsNamed) {
  testing::TempDir tmp;
  const auto& refused = testing::expect_usage_error;
  // The heterogeneous generator's edges carry no features: nothing to regress.
  refused(
      [&] {
        run_in_process(parse_job("task: link_prediction\n"
                                 "data: {generate: {kind: hetero, nodes: 500, classes: 4, features: 8, seed: 2},\n"
                                 "       num_partitions: 1, holdout: {test: 0.1}}\n"
                                 "model: {encoder: hetero_sage, target_edge: [author, writes, paper]}\n"
                                 "sampling: {fanouts: [5, 5]}\ntrain: {loss: mse}\noutput: unrated\n",
                                 tmp.path(), "regression without ratings"));
      },
      "train.loss: mse regresses each edge's value (one edge feature, as a MovieLens rating), but the "
      "[author, writes, paper] edges of " +
          (tmp / "unrated/partitions") + " have 0 edge features");
  refused(
      [&] {
        parse_job("task: link_prediction\ndata: {generate: {kind: hetero, nodes: 500, classes: 4, features: 8}}\n"
                  "model: {decoder: distmult}\ntrain: {loss: mse}\n",
                  tmp.path(), "regression with learnt embeddings");
      },
      "train.loss: mse (rating regression) scores an edge from its ends' GNN encodings: it needs model.encoder");
}

// A folder partitioned before held-out edges kept their features (META.json without
// has_edge_split_attr) reads as having none, and a regression job that evaluates on it is
// told to partition again; training alone still may.
TEST(RatingRegressionTest, AFolderWhoseHeldOutRatingsWereNotKeptIsNamed) {
  testing::TempDir tmp;
  write_taste_movielens(tmp / "taste");
  const JobConfig job = rating_job(tmp.path(), "taste", "loss: mse, epochs: 1", "old");
  prepare_data(job, 1);
  const std::string meta_file = job.partition_dir() + "/" + kMetaFile;
  nlohmann::json meta = nlohmann::json::parse(testing::read_text(meta_file));
  ASSERT_TRUE(meta.at("has_edge_split_attr").get<bool>());
  check_rating_target(job, PartitionFolder(job.partition_dir()).meta(), job.partition_dir(), true);
  meta.erase("has_edge_split_attr");
  std::ofstream(meta_file) << meta.dump(2);
  const PartitionMeta old = PartitionFolder(job.partition_dir()).meta();
  EXPECT_FALSE(old.has_edge_split_attr);
  try {
    check_rating_target(job, old, job.partition_dir(), true);
    ADD_FAILURE() << "accepted a folder whose held-out edges have no ratings";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "the held-out [user, rates, movie] edges of " + job.partition_dir() +
                                  " have none (partitioned before held-out edges kept their features: partition again)");
  }
  check_rating_target(job, old, job.partition_dir(), false);
}

// The metrics of rows (prediction, value, training mean, destination mean) by hand.
TEST(RatingMetricsTest, RmseMaeAndBaselinesByHand) {
  const std::vector<float> rows{4, 5, 3, 4,   // errors: 1, 2, 1
                                2, 1, 3, 2};  //         1, 2, 1
  const RatingMetrics m = rating_metrics(Span<const float>(rows));
  EXPECT_EQ(m.edges, 2);
  EXPECT_DOUBLE_EQ(m.rmse, 1.0);
  EXPECT_DOUBLE_EQ(m.mae, 1.0);
  EXPECT_DOUBLE_EQ(m.rmse_global_mean, 2.0);
  EXPECT_DOUBLE_EQ(m.rmse_destination_mean, 1.0);
  EXPECT_EQ(m.named("test").front(), std::make_pair(std::string("test.rmse"), 1.0));
  EXPECT_EQ(rating_metrics(Span<const float>()).edges, 0);
  try {
    rating_metrics(Span<const float>(rows.data(), 7));
    ADD_FAILURE() << "7 floats taken as rows of 4";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "7 floats are not rows of 4");
  }
}

}  // namespace
}  // namespace partita
