// Biased matrix factorisation (model.encoder: mf): on ratings drawn from a low-rank model
// (mu + b_u + b_i + <p_u, q_i> + noise) a rating-regression job recovers the held-out
// ratings to about the noise, far below the per-movie mean it reports beside them; the
// fields mf does not take are named, and a GNN encoder takes mf's biases alone and learns them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/random.h"
#include "expect_error.h"
#include "job_runs.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::run_in_process;

constexpr double kNoise = 0.1;

// 200 users and 150 movies, rank 2: user u rates 60 movies (drawn at random), each rating
// 2.5 + b_u + b_i + <p_u, q_i> + N(0, kNoise^2), with b_u ~ N(0, 0.3^2), b_i ~ N(0, 0.3^2)
// and factors ~ N(0, 0.5^2), kept in MovieLens' [0, 5] (about 5 standard deviations out:
// hardly ever cut). A movie's mean misses the users' biases and tastes (about 0.45 RMSE);
// the model's structure is all there is to learn beyond the noise.
void write_low_rank_movielens(const fs::path& dir) {
  fs::create_directories(dir);
  constexpr int kUsers = 200, kMovies = 150, kRank = 2, kPerUser = 60;
  Rng rng(11);
  std::vector<double> user_bias(kUsers), movie_bias(kMovies), p(kUsers * kRank), q(kMovies * kRank);
  for (double& b : user_bias) b = 0.3 * rng.normal();
  for (double& b : movie_bias) b = 0.3 * rng.normal();
  for (double& f : p) f = 0.5 * rng.normal();
  for (double& f : q) f = 0.5 * rng.normal();
  {
    std::ofstream movies(dir / "movies.csv");
    movies << "movieId,title,genres\n";
    for (int m = 0; m < kMovies; ++m) movies << m + 1 << ",Movie " << m << ",G" << m % 3 << "\n";
  }
  std::ofstream ratings(dir / "ratings.csv");
  ratings << "userId,movieId,rating,timestamp\n";
  for (int u = 0; u < kUsers; ++u) {
    std::vector<int> order(kMovies);
    for (int m = 0; m < kMovies; ++m) order[m] = m;
    for (int i = 0; i < kPerUser; ++i) std::swap(order[i], order[i + rng.below(kMovies - i)]);
    for (int i = 0; i < kPerUser; ++i) {
      const int m = order[i];
      double r = 2.5 + user_bias[u] + movie_bias[m] + kNoise * rng.normal();
      for (int k = 0; k < kRank; ++k) r += p[u * kRank + k] * q[m * kRank + k];
      ratings << u + 1 << "," << m + 1 << "," << std::clamp(r, 0.0, 5.0) << "," << 1000 + u * kPerUser + i << "\n";
    }
  }
}

std::string mf_job_text(const std::string& dataset, const std::string& model, const std::string& train,
                        const std::string& output) {
  return "task: link_prediction\n"
         "data: {dataset: " + dataset + ", format: movielens, num_partitions: 2,"
         " holdout: {val: 0.05, test: 0.15}}\n"
         "model: {encoder: mf, target_edge: [user, rates, movie], " + model + "}\n"
         "sampling: {batch_size: 256}\n"
         "train: {" + train + "}\n"
         "output: " + output + "\n";
}

TEST(MatrixFactorisationTest, RecoversALowRankRatingMatrixToTheNoise) {
  testing::TempDir tmp;
  write_low_rank_movielens(tmp / "low_rank");
  const JobConfig job = parse_job(mf_job_text("low_rank", "dim: 4",
                                              "loss: mse, regularizer: l2, regularization: 0.005, epochs: 25, "
                                              "learning_rate: 0.02, seed: 2",
                                              "mf"),
                                  tmp.path(), "mf job");
  const JobReport report = run_in_process(job);
  const EpochMetrics& last = report.epochs.back();
  const double rmse = last.ranking_metric("test.rmse"), per_movie = last.ranking_metric("test.rmse_destination_mean");
  std::printf("mf: test RMSE %.4f (noise %.2f), per-movie mean %.4f, training mean %.4f\n", rmse, kNoise, per_movie,
              last.ranking_metric("test.rmse_global_mean"));
  EXPECT_EQ(last.ranking_metric("test.edges"), 1800);  // 15% of 12000 ratings
  EXPECT_GT(per_movie, 0.35);                          // the users' biases and tastes matter
  EXPECT_LT(rmse, 1.5 * kNoise);
  EXPECT_LT(last.train_loss, report.epochs.front().train_loss);
}

// model.node_bias gives a GNN encoder mf's per-node biases: on the low-rank ratings a small
// encoder (a dot product of width 2) with them comes near the noise, as mf does; the same
// job, same seeds, without them has to spend its two dimensions on the users' and movies'
// offsets and ends far from it.
TEST(MatrixFactorisationTest, NodeBiasesBringAGnnEncoderCloserToTheRatings) {
  testing::TempDir tmp;
  write_low_rank_movielens(tmp / "low_rank");
  const auto rmse_of = [&](const std::string& bias) {
    const std::string text =
        "task: link_prediction\n"
        "data: {dataset: low_rank, format: movielens, num_partitions: 2, holdout: {val: 0.05, test: 0.15}}\n"
        "model: {encoder: hetero_sage, target_edge: [user, rates, movie], decoder: dot, dim: 2, hidden: 8,"
        " layers: 1, dropout: 0, input: learnt, node_bias: " + bias + "}\n"
        "sampling: {fanouts: [5], batch_size: 256}\n"
        "train: {epochs: 15, loss: mse, optimizer: adam, learning_rate: 0.02, seed: 2}\n"
        "output: gnn_" + bias + "\n";
    const JobReport report = run_in_process(parse_job(text, tmp.path(), "gnn job"));
    return report.epochs.back().ranking_metric("test.rmse");
  };
  const double with_bias = rmse_of("true"), without = rmse_of("false");
  std::printf("hetero_sage dim 2: test RMSE %.4f with node biases, %.4f without\n", with_bias, without);
  EXPECT_LT(with_bias, 2 * kNoise);
  EXPECT_LT(with_bias, without);
}

TEST(MatrixFactorisationTest, FieldsMfDoesNotTakeAreNamed) {
  testing::TempDir tmp;
  write_low_rank_movielens(tmp / "low_rank");
  const auto& refused = testing::expect_usage_error;
  const auto parse = [&](const std::string& model, const std::string& rest) {
    parse_job(mf_job_text("low_rank", model, "loss: mse", "mf") + rest, tmp.path(), "mf job");
  };
  refused([&] { parse("decoder: distmult", ""); }, "model.decoder: mf scores an edge as the dot product");
  refused([&] { parse("input: learnt", ""); }, "model.input: mf reads its own learnt row per node");
  refused([&] { parse("dim: 8", "eval: {negatives: all}\n"); }, "eval.negatives: 'all'");
  // L2 is on mf's rows or on node biases: a GNN encoder without them has none to regularise.
  refused(
      [&] {
        parse_job("task: link_prediction\ndata: {dataset: low_rank, format: movielens, holdout: {test: 0.1}}\n"
                  "model: {encoder: hetero_sage, target_edge: [user, rates, movie]}\n"
                  "train: {loss: mse, regularizer: l2}\noutput: gnn\n",
                  tmp.path(), "gnn job");
      },
      "train.regularizer");
  // What an mf job reads of its file.
  const JobConfig job = parse_job(mf_job_text("low_rank", "dim: 8, init_std: 0.05", "loss: mse, regularizer: l2, "
                                              "regularization: 0.02", "mf"), tmp.path(), "mf job");
  EXPECT_TRUE(job.model.matrix_factorisation());
  EXPECT_EQ(job.link.dim, 8);
  EXPECT_DOUBLE_EQ(job.link.init_std, 0.05);
  EXPECT_EQ(job.link.regularizer, Regularizer::kL2);
  EXPECT_DOUBLE_EQ(job.link.regularization, 0.02);
  EXPECT_DOUBLE_EQ(parse_job(mf_job_text("low_rank", "dim: 8", "loss: mse", "mf"), tmp.path(), "mf job").link.init_std,
                   0.1);
  // A GNN encoder takes mf's biases alone (model.node_bias), and l2 on them.
  const std::string gnn = "task: link_prediction\ndata: {dataset: low_rank, format: movielens, holdout: {test: 0.1}}\n"
                          "model: {encoder: hetero_sage, target_edge: [user, rates, movie], input: learnt, ";
  const JobConfig biased =
      parse_job(gnn + "node_bias: true}\ntrain: {loss: mse, regularizer: l2, regularization: 0.1}\noutput: gnn\n",
                tmp.path(), "gnn job");
  EXPECT_TRUE(biased.link.node_bias);
  EXPECT_EQ(biased.link.regularizer, Regularizer::kL2);
  EXPECT_NE(job_to_yaml(biased).find("node_bias: true"), std::string::npos);
  refused([&] { parse("node_bias: true", ""); }, "model.node_bias: mf's rows carry a bias each already");
}

}  // namespace
}  // namespace partita
