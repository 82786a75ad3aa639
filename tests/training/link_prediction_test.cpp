// Link-prediction jobs (task: link_prediction) through the job driver, on a small random
// knowledge graph written as triples: true triples rank first after training; the same
// losses on 1 and 2 partitions and in one process and on two daemons; resuming ends in the
// same state; one sharded step equals the dense computation; strict negatives; bad input
// named (a relation outside the training set: the triples reader's tests). The
// determinism, resume and dense-step tests run with each row optimiser (train.optimizer:
// adagrad, sparse_adam).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>

#include "actors/protocol.h"
#include "base/error.h"
#include "base/random.h"
#include "daemon_process.h"
#include "embeddings/kg_triples.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "runtime/runtime.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_actor_types.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

using testing::expect_identical_training;
using testing::run_in_process;

// `count` distinct random triples over `entities` entities and `relations` relations, with
// names e<i> and r<j>; entity 0..entities-1 and every relation appear in the first lines.
std::vector<std::tuple<int, int, int>> random_triples(int entities, int relations, int count, uint64_t seed) {
  std::set<std::tuple<int, int, int>> seen;
  std::vector<std::tuple<int, int, int>> out;
  for (int e = 0; e < entities; ++e) {
    auto t = std::make_tuple(e, e % relations, (e * 7 + 3) % entities);
    if (seen.insert(t).second) out.push_back(t);
  }
  Rng rng(seed);
  while (static_cast<int>(out.size()) < count) {
    auto t = std::make_tuple(static_cast<int>(rng.below(entities)), static_cast<int>(rng.below(relations)),
                             static_cast<int>(rng.below(entities)));
    if (std::get<0>(t) != std::get<2>(t) && seen.insert(t).second) out.push_back(t);
  }
  return out;
}

void write_triples(const std::string& path, const std::vector<std::tuple<int, int, int>>& triples) {
  std::ofstream out(path);
  for (const auto& [h, r, t] : triples) out << "e" << h << "\tr" << r << "\te" << t << "\n";
}

class LinkJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    triples_ = random_triples(40, 2, 160, 7);
    fs::create_directories(tmp_ / "kg");
    write_triples(tmp_ / "kg/train.txt", triples_);
    // Held out: training triples again, so a model that learnt them must rank them first.
    write_triples(tmp_ / "kg/valid.txt", {triples_.begin(), triples_.begin() + 10});
    write_triples(tmp_ / "kg/test.txt", {triples_.begin() + 10, triples_.begin() + 30});
  }
  JobConfig job(int parts, const std::string& model, const std::string& negatives, const std::string& train,
                const std::string& output) {
    return parse_job("task: link_prediction\n"
                     "data: {dataset: kg, format: triples, num_partitions: " + std::to_string(parts) + "}\n"
                     "model: " + model + "\n"
                     "negatives: " + negatives + "\n"
                     "sampling: {batch_size: 32}\n"
                     "train: " + train + "\n"
                     "output: " + output + "\n",
                     tmp_.path(), "link job");
  }
  JobConfig small_job(int parts, const std::string& output, const std::string& optimizer = "adagrad") {
    const std::string rate = optimizer == "adagrad" ? "0.2" : "0.05";
    return job(parts, "{encoder: none, decoder: distmult, dim: 16, init_std: 0.1}",
               "{k: 12, chunk_size: 8, degree_fraction: 0.5}",
               "{epochs: 2, optimizer: " + optimizer + ", learning_rate: " + rate + ", seed: 3}", output);
  }
  static constexpr const char* kOptimizers[] = {"adagrad", "sparse_adam"};
  std::vector<std::tuple<int, int, int>> triples_;
  testing::TempDir tmp_;
};

TEST_F(LinkJobTest, TrueTriplesRankFirstAfterTraining) {
  JobConfig j = job(2, "{encoder: none, decoder: complex, dim: 32, init_std: 0.1}",
                    "{k: 39, chunk_size: 16, strict: true}", "{epochs: 60, learning_rate: 0.5, seed: 1}", "run");
  RunOptions options;
  const JobReport report = run_in_process(j, options);
  const EpochMetrics& first = report.epochs.front();
  const EpochMetrics& last = report.epochs.back();
  EXPECT_LT(last.train_loss, first.train_loss / 4);
  EXPECT_EQ(last.ranking_metric("test.queries"), 40);  // 20 triples, both directions
  EXPECT_EQ(last.ranking_metric("test.hits@1"), 1.0);
  EXPECT_EQ(last.ranking_metric("test.mrr"), 1.0);
  EXPECT_EQ(last.ranking_metric("valid.mrr"), 1.0);
  // Raw ranking counts the other true answers: never better than filtered.
  EXPECT_LE(last.ranking_metric("test.raw_mrr"), last.ranking_metric("test.mrr"));
  std::ifstream metrics(tmp_ / "run/metrics.jsonl");
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) {
    ++lines;
    EXPECT_NE(line.find("\"test.mrr\""), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 60);
}

TEST_F(LinkJobTest, OneAndTwoPartitionsAndTrainersGiveTheSameLosses) {
  for (const std::string optimizer : kOptimizers) {
    SCOPED_TRACE(optimizer);
    const JobReport one = run_in_process(small_job(1, "one-" + optimizer, optimizer));
    JobConfig four_trainers = small_job(2, "four-" + optimizer, optimizer);
    four_trainers.trainers_per_partition = 2;
    for (const JobConfig& j : {small_job(2, "two-" + optimizer, optimizer), four_trainers}) {
      SCOPED_TRACE(std::to_string(j.num_trainers()) + " trainers");
      const JobReport other = run_in_process(j);
      ASSERT_EQ(one.epochs.size(), other.epochs.size());
      for (size_t e = 0; e < one.epochs.size(); ++e) {
        ASSERT_EQ(one.epochs[e].step_losses.size(), other.epochs[e].step_losses.size());
        for (size_t s = 0; s < one.epochs[e].step_losses.size(); ++s) {
          // The same positives meet the same negatives; only the order of float sums differs.
          EXPECT_NEAR(one.epochs[e].step_losses[s], other.epochs[e].step_losses[s],
                      1e-5 * one.epochs[e].step_losses[s])
              << "epoch " << e + 1 << " step " << s;
        }
        EXPECT_NEAR(one.epochs[e].ranking_metric("test.mrr"), other.epochs[e].ranking_metric("test.mrr"), 1e-3);
        EXPECT_EQ(one.epochs[e].ranking_metric("test.queries"), other.epochs[e].ranking_metric("test.queries"));
      }
    }
  }
}

// The row optimisers train differently (a test that the job field reaches the owners), and
// SparseAdam lowers the loss too.
TEST_F(LinkJobTest, SparseAdamIsTheOptimiserTheOwnersApply) {
  RunOptions options;
  options.evaluate = false;
  const JobReport adagrad = run_in_process(small_job(2, "adagrad"), options);
  JobConfig j = small_job(2, "sparse_adam", "sparse_adam");
  j.epochs = 6;
  const JobReport adam = run_in_process(j, options);
  ASSERT_EQ(adam.epochs.size(), 6u);
  EXPECT_EQ(adam.epochs[0].step_losses[0], adagrad.epochs[0].step_losses[0]);  // the same start
  EXPECT_NE(adam.epochs[0].step_losses[1], adagrad.epochs[0].step_losses[1]);
  EXPECT_LT(adam.epochs[5].train_loss, 0.8 * adam.epochs[0].train_loss);
}

// Ranking against K sampled entities: a subset of every entity, so no rank can be worse
// than against all of them, and some are better.
TEST_F(LinkJobTest, SampledEvaluationRanksAgainstASubsetOfTheEntities) {
  const JobReport all = run_in_process(small_job(2, "all"));
  JobConfig j = small_job(2, "sampled");
  j.link.eval_negatives = 5;
  const JobReport sampled = run_in_process(j);
  const EpochMetrics& a = all.epochs.back();
  const EpochMetrics& s = sampled.epochs.back();
  EXPECT_EQ(s.step_losses, a.step_losses);  // the same training
  EXPECT_EQ(s.ranking_metric("test.queries"), a.ranking_metric("test.queries"));
  EXPECT_GT(s.ranking_metric("test.raw_mrr"), a.ranking_metric("test.raw_mrr"));
  EXPECT_GE(s.ranking_metric("test.mrr"), a.ranking_metric("test.mrr"));
  EXPECT_GE(s.ranking_metric("test.hits@1"), a.ranking_metric("test.hits@1"));
}

TEST_F(LinkJobTest, TwoDaemonsGiveTheSameLossesAndStateAsOneProcess) {
  const testing::TwoDaemons two = testing::start_two_daemons();
  for (const std::string optimizer : kOptimizers) {
    SCOPED_TRACE(optimizer);
    JobConfig j = small_job(2, "local-" + optimizer, optimizer);
    const JobReport local = run_in_process(j);
    j.output = tmp_ / ("remote-" + optimizer);
    j.partitions = tmp_ / ("local-" + optimizer + "/partitions");  // the folder the local run wrote
    const JobReport remote = run_job(*two.runtime, j, {});
    expect_identical_training(local, remote);
  }
}

TEST_F(LinkJobTest, AKilledDaemonFailsTheJobNamingIt) {
  prepare_data(small_job(2, "local"), 2);
  JobConfig j = small_job(2, "remote");
  j.partitions = tmp_ / "local/partitions";
  j.epochs = 100000;
  testing::expect_a_killed_daemon_fails_the_job_naming_it(j);
}

// A cancel stops the trainers' allreduce group while they are in a step: they end the epoch
// as stopped, logged at info, not as a failure.
TEST_F(LinkJobTest, ACancelledJobsTrainersStopWithoutAnError) {
  JobConfig j = small_job(2, "cancelled");
  j.epochs = 1000;
  j.trainers_per_partition = 2;
  testing::expect_cancel_mid_epoch_logs_no_error(j);
}

// Every decoder with every loss trains: the loss falls from the first epoch to the third.
TEST_F(LinkJobTest, EveryDecoderAndLossTrains) {
  const char* const cases[][2] = {{"transe, transe_norm: 1", "margin, margin: 2.0"},
                                  {"transe, transe_norm: 2", "bce"},
                                  {"complex", "bce, regularizer: l2, regularization: 0.001"},
                                  {"distmult", "margin, regularizer: n3, regularization: 0.001"}};
  int run = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c[0]) + " / " + c[1]);
    const JobConfig j = job(2, std::string("{encoder: none, decoder: ") + c[0] + ", dim: 16, init_std: 0.1}",
                            "{k: 12, chunk_size: 1}",
                            std::string("{epochs: 3, learning_rate: 0.2, seed: 2, loss: ") + c[1] + "}",
                            "run-" + std::to_string(run++));
    RunOptions options;
    options.evaluate = false;
    const JobReport report = run_in_process(j, options);
    ASSERT_EQ(report.epochs.size(), 3u);
    EXPECT_LT(report.epochs[2].train_loss, report.epochs[0].train_loss);
  }
}

TEST_F(LinkJobTest, ResumingFromACheckpointEndsInTheSameState) {
  for (const std::string optimizer : kOptimizers) {
    SCOPED_TRACE(optimizer);
    const JobReport whole = run_in_process(small_job(2, "whole-" + optimizer, optimizer));
    JobConfig j = small_job(2, "parts-" + optimizer, optimizer);
    RunOptions first;
    first.stop_after_epoch = 1;
    run_in_process(j, first);
    RunOptions rest;
    rest.resume = true;
    const JobReport resumed = run_in_process(j, rest);
    ASSERT_EQ(resumed.first_epoch, 2);
    EXPECT_EQ(resumed.epochs[0].step_losses, whole.epochs[1].step_losses);
    // Every shard's rows, optimiser state and (SparseAdam) step count are in the hash.
    EXPECT_EQ(resumed.parameter_hash, whole.parameter_hash);
  }
  // A checkpoint of the other optimiser is named, not loaded.
  JobConfig other = small_job(2, "parts-adagrad", "sparse_adam");
  RunOptions rest;
  rest.resume = true;
  try {
    run_in_process(other, rest);
    ADD_FAILURE() << "resumed an Adagrad checkpoint with sparse_adam";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another optimiser than the job's sparse_adam"), std::string::npos)
        << e.what();
  }
  // A damaged shard file is named, not loaded.
  JobConfig j = small_job(2, "parts-adagrad");
  const std::string shard = tmp_ / "parts-adagrad/checkpoints/epoch-2-shard1.bin";
  ASSERT_TRUE(fs::exists(shard));
  { std::ofstream(shard, std::ios::binary | std::ios::app) << "x"; }
  try {
    run_in_process(j, rest);
    ADD_FAILURE() << "resumed from a damaged checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("epoch-2-shard1.bin"), std::string::npos) << e.what();
  }
}

TEST_F(LinkJobTest, StrictNegativesNeverKeepATrueTriple) {
  run_in_process(small_job(2, "strict"), [] {
    RunOptions o;
    o.stop_after_epoch = 1;
    o.evaluate = false;
    return o;
  }());
  const KgTriples kg{PartitionFolder(tmp_ / "strict/partitions")};
  const TripleList& train = kg.train();
  ASSERT_EQ(train.size(), 160);
  for (int64_t i = 0; i < train.size(); ++i) {
    EXPECT_FALSE(kg.keeps_negative(true, train.head[i], train.relation[i], train.tail[i], train.tail[i]));
    EXPECT_FALSE(kg.keeps_negative(false, train.head[i], train.relation[i], train.tail[i], train.head[i]));
  }
  // Every negative that makes a false triple is kept.
  int64_t kept = 0;
  for (int64_t n = 0; n < kg.num_entities(); ++n) {
    const bool is_true = kg.is_train_triple(train.head[0], train.relation[0], n);
    EXPECT_EQ(kg.keeps_negative(true, train.head[0], train.relation[0], train.tail[0], n), !is_true);
    kept += !is_true;
  }
  EXPECT_GT(kept, 30);
}

TEST_F(LinkJobTest, BadInputIsNamed) {
  // More negatives than entities.
  JobConfig many = job(2, "{encoder: none, decoder: distmult, dim: 8}", "{k: 41}", "{epochs: 1}", "many");
  try {
    run_in_process(many);
    ADD_FAILURE() << "k > entities was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("negatives.k"), std::string::npos) << e.what();
  }
  // An encoder that does not fit: a GNN reads node features, which triples do not have.
  try {
    run_in_process(job(2, "{encoder: graphsage}", "{k: 4}", "{epochs: 1}", "gnn"));
    ADD_FAILURE() << "a GNN encoder was accepted on a graph without features";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("model.encoder: graphsage reads node features"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(job(2, "{encoder: none, decoder: complex, dim: 7}", "{k: 4}", "{epochs: 1}", "x"), UsageError);
  EXPECT_THROW(job(2, "{encoder: none, decoder: distmult}", "{k: 4}", "{epochs: 1, optimizer: adam}", "x"), UsageError);
  EXPECT_THROW(job(2, "{encoder: none, decoder: distmult}", "{k: 0}", "{epochs: 1}", "x"), UsageError);
}

// A shard file's table, optimiser state ([slots x rows, dim]) and optimiser step count
// (embeddings/embedding_shard.cpp's layout: magic, checksum, begin, end, dim, optimiser kind,
// steps, rows, state).
struct ShardFile {
  at::Tensor table, state;
  int64_t steps = 0;
};
ShardFile read_shard(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int64_t header[5];
  std::memcpy(header, bytes.data() + 16, sizeof(header));
  const int64_t rows = header[1] - header[0], dim = header[2];
  const int64_t slots = header[3] == 0 ? 1 : 2;
  const float* data = reinterpret_cast<const float*>(bytes.data() + 16 + sizeof(header));
  EXPECT_EQ(bytes.size(), 16 + sizeof(header) + static_cast<size_t>((1 + slots) * rows * dim) * sizeof(float));
  return {torch::from_blob(const_cast<float*>(data), {rows, dim}).clone(),
          torch::from_blob(const_cast<float*>(data + rows * dim), {slots * rows, dim}).clone(), header[4]};
}

// One step of the sharded job (rows read from the owner, their gradient pushed back and
// applied there by sparse Adagrad or SparseAdam) equals the dense computation: the whole
// table as one tensor, the same step's loss, its dense gradient, and the optimiser's dense
// formula on every row (rows without gradient: Adagrad leaves them, SparseAdam skips them).
TEST_F(LinkJobTest, AShardedStepEqualsTheDenseComputation) {
  for (const std::string optimizer : kOptimizers) {
  SCOPED_TRACE(optimizer);
  JobConfig j = small_job(1, "dense-" + optimizer, optimizer);
  j.epochs = 2;
  RunOptions first;
  first.stop_after_epoch = 1;
  first.evaluate = false;
  run_in_process(j, first);
  const std::string dir = tmp_ / ("dense-" + optimizer + "/checkpoints");
  const ShardFile before = read_shard(dir + "/epoch-1-shard0.bin");
  const at::Tensor& table = before.table;
  const at::Tensor& state = before.state;
  std::ifstream replica_file(dir + "/epoch-1-replica.bin", std::ios::binary);
  std::vector<char> replica((std::istreambuf_iterator<char>(replica_file)), std::istreambuf_iterator<char>());
  torch::serialize::InputArchive archive;
  archive.load_from(replica.data(), replica.size());
  at::Tensor relations;
  archive.read("relations", relations);

  RunOptions one_step;
  one_step.resume = true;
  one_step.max_steps = 1;
  one_step.evaluate = false;
  run_in_process(j, one_step);
  const ShardFile after = read_shard(dir + "/epoch-2-shard0.bin");
  const at::Tensor& sharded = after.table;

  // The dense step: epoch 2, step 0 of the job's plan, chunks of its negatives.
  const KgTriples kg{PartitionFolder(tmp_ / ("dense-" + optimizer + "/partitions"))};
  const std::vector<int64_t> order = kg.epoch_order(j.seed, 2);
  KgNegatives negatives;
  negatives.k = j.link.negatives;
  negatives.chunk_size = j.link.chunk_size;
  negatives.degree_fraction = j.link.degree_fraction;
  const int64_t positives = std::min<int64_t>(j.batch_size, kg.train().size());
  at::Tensor dense = table.clone().set_requires_grad(true);
  at::Tensor loss = torch::zeros({});
  for (int64_t begin = 0; begin < positives; begin += negatives.chunk_size) {
    const int64_t end = std::min(positives, begin + negatives.chunk_size);
    std::vector<int64_t> h, r, t;
    for (int64_t i = begin; i < end; ++i) {
      h.push_back(kg.train().head[order[i]]);
      r.push_back(kg.train().relation[order[i]]);
      t.push_back(kg.train().tail[order[i]]);
    }
    std::vector<int64_t> n = kg.draw_negatives(negatives, j.seed, 2, 0, static_cast<uint64_t>(begin / negatives.chunk_size));
    auto rows = [&](const std::vector<int64_t>& ids) { return dense.index_select(0, torch::tensor(ids)); };
    const at::Tensor rel = relations.index_select(0, torch::tensor(r));
    const at::Tensor head = rows(h), tail = rows(t), neg = rows(n);
    const at::Tensor pos = (head * rel * tail).sum(1);
    for (const at::Tensor& q : {head * rel, tail * rel}) {
      const at::Tensor scores = torch::mm(q, neg.t());
      loss = loss + (torch::logsumexp(torch::cat({pos.unsqueeze(1), scores}, 1), 1) - pos).sum();
    }
  }
  (loss / static_cast<double>(positives)).backward();
  const at::Tensor g = dense.grad();
  at::Tensor expected;
  if (optimizer == "adagrad") {
    const at::Tensor new_state = state + g * g;
    expected = table - j.learning_rate * g / (new_state.sqrt() + 1e-10);
  } else {
    // torch.optim.SparseAdam, densely: the rows with a gradient only, corrected as the
    // table's step (every step of epoch 1, then this one).
    const int64_t rows = table.size(0);
    const int64_t steps_per_epoch = (kg.train().size() + j.batch_size - 1) / j.batch_size;
    EXPECT_EQ(before.steps, steps_per_epoch);
    EXPECT_EQ(after.steps, steps_per_epoch + 1);
    const double t = static_cast<double>(before.steps + 1);
    const at::Tensor touched = (g.abs().sum(1, true) > 0);
    const at::Tensor m = state.narrow(0, 0, rows), v = state.narrow(0, rows, rows);
    const at::Tensor new_m = m + (g - m) * 0.1, new_v = v + (g * g - v) * 0.001;
    const double step_size = j.learning_rate * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
    expected = torch::where(touched, table - step_size * new_m / (new_v.sqrt() + 1e-8), table);
    EXPECT_TRUE(torch::allclose(after.state.narrow(0, 0, rows), torch::where(touched, new_m, m), 1e-5, 1e-7));
    EXPECT_TRUE(torch::equal(after.state.narrow(0, 0, rows).masked_select(~touched.expand_as(m)),
                             m.masked_select(~touched.expand_as(m))));
  }
  EXPECT_GT((expected - table).abs().max().item<float>(), 0);  // the step moved rows
  EXPECT_TRUE(torch::allclose(sharded, expected, 1e-5, 1e-6)) << (sharded - expected).abs().max();
  }
}

// The example job (BENCHMARKS.md's quality run) is a valid job for the shared data.
TEST(LinkExampleTest, TheFb15k237ExampleLoads) {
  const JobConfig j = load_job(std::string(testing::kSourceDir) + "/examples/fb15k237.yaml");
  EXPECT_TRUE(j.link_prediction());
  EXPECT_EQ(j.format, "triples");
  EXPECT_EQ(fs::path(j.dataset).filename(), "fb15k-237");
  EXPECT_EQ(j.link.decoder, LinkDecoder::kDistMult);
  EXPECT_EQ(j.num_partitions, 2);
}

TEST(LinkExampleTest, TheFb15k237ComplexExampleLoads) {
  const JobConfig j = load_job(std::string(testing::kSourceDir) + "/examples/fb15k237_complex.yaml");
  EXPECT_EQ(j.link.decoder, LinkDecoder::kComplEx);
  EXPECT_EQ(j.link.dim, 512);
  EXPECT_EQ(j.num_partitions, 2);
}

}  // namespace
}  // namespace partita

namespace partita {
namespace {

// A link-prediction job run by a head's driver: it names the key of its actors (how the
// head matches them to the job) and refuses a placement that does not fit, naming it.
TEST_F(LinkJobTest, TellsItsOwnerKeyAndRefusesABadPlacement) {
  RunOptions options;
  std::string owner;
  options.on_owner = [&](const std::string& key) { owner = key; };
  run_in_process(small_job(2, "owned"), options);
  EXPECT_FALSE(owner.empty());
  RunOptions bad;
  bad.placement = {0, 3};
  try {
    run_in_process(small_job(2, "misplaced"), bad);
    ADD_FAILURE() << "ran on node 3 of 1";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(std::string(e.what()), "a placement on node 3 of 1");
  }
}

}  // namespace
}  // namespace partita
