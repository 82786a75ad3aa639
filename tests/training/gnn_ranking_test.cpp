// Filtered ranking against every entity for link prediction with a GNN encoder
// (eval.negatives: all with encoder: rgcn on a knowledge graph; training/gnn_link_trainer.h):
// the metrics equal those computed by brute force from the trained encoder's outputs
// (every entity scored); 1 and 2 partitions, and one process and two daemons, give the same
// metrics; the combinations that still make no sense are named. The ranking kernel itself
// is encoder: none's (training/triple_ranking.h; its hand-computed ranks:
// tests/torch/kg_ranking_test.cpp).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "actors/actor_types.h"
#include "base/random.h"
#include "daemon_process.h"
#include "embeddings/kg_triples.h"
#include "expect_error.h"
#include "graph/neighbor_sampler.h"
#include "job_runs.h"
#include "models/batch_tensors.h"
#include "models/checkpoint.h"
#include "models/gnn_model.h"
#include "models/optimizer.h"
#include "partitioner/partition_format.h"
#include "partitioner/partition_stores.h"
#include "runtime/runtime.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/relational_encoder.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::run_in_process;

// A toy multi-relational graph: 60 entities, 3 relations, 240 training triples; 15 valid
// and 30 test triples that are not training triples.
class GnnRankingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::set<std::tuple<int, int, int>> seen;
    std::vector<std::tuple<int, int, int>> all;
    for (int e = 0; e < 60; ++e) {  // every entity and relation in training
      all.emplace_back(e, e % 3, (e * 7 + 3) % 60);
      seen.insert(all.back());
    }
    Rng rng(11);
    while (all.size() < 285) {
      const auto t = std::make_tuple(static_cast<int>(rng.below(60)), static_cast<int>(rng.below(3)),
                                     static_cast<int>(rng.below(60)));
      if (std::get<0>(t) != std::get<2>(t) && seen.insert(t).second) all.push_back(t);
    }
    fs::create_directories(tmp_ / "kg");
    const auto write = [&](const char* name, size_t begin, size_t end) {
      std::ofstream out(tmp_ / ("kg/" + std::string(name)));
      for (size_t i = begin; i < end; ++i) {
        const auto& [h, r, t] = all[i];
        out << "e" << h << "\tr" << r << "\te" << t << "\n";
      }
    };
    write("train.txt", 0, 240);
    write("valid.txt", 240, 255);
    write("test.txt", 255, 285);
  }
  // R-GCN (basis decomposition, a learnt input row per entity) + DistMult, 2 epochs.
  JobConfig job(int parts, const std::string& fanout, const std::string& output) {
    return parse_job("task: link_prediction\n"
                     "data: {dataset: kg, format: triples, num_partitions: " + std::to_string(parts) + "}\n"
                     "model: {encoder: rgcn, decoder: distmult, dim: 8, hidden: 8, layers: 1, decomposition: basis,\n"
                     "        bases: 2, input: learnt, dropout: 0.0}\n"
                     "negatives: {k: 4, chunk_size: 1}\n"
                     "sampling: {fanouts: [" + fanout + "], batch_size: 32}\n"
                     "train: {epochs: 2, learning_rate: 0.05, seed: 3, eval_batch_size: 16}\n"
                     "eval: {negatives: all, block: 7}\n"
                     "output: " + output + "\n",
                     tmp_.path(), "gnn ranking job");
  }
  testing::TempDir tmp_;
};

const char* const kMetrics[] = {"mrr", "hits@1", "hits@3", "hits@10", "raw_mrr", "raw_hits@1", "raw_hits@3",
                                "raw_hits@10", "queries"};

void expect_same_metrics(const EpochMetrics& a, const EpochMetrics& b, double tolerance) {
  for (const char* split : {"valid", "test"}) {
    for (const char* metric : kMetrics) {
      const std::string name = std::string(split) + "." + metric;
      EXPECT_NEAR(a.ranking_metric(name), b.ranking_metric(name), tolerance) << name;
    }
  }
}

// 1 / rank, with rank = 1 + (candidates scoring higher) + (ties) / 2 over every entity but
// the answer, less the filtered ones when `filter` (models/kg_ranking.h's convention).
double reciprocal_rank(const at::Tensor& scores, int64_t answer, Span<const int64_t> filter, bool filtered) {
  const float truth = scores[answer].item<float>();
  double greater = 0, equal = 0;
  const auto s = scores.accessor<float, 1>();
  for (int64_t e = 0; e < scores.size(0); ++e) {
    if (e == answer) continue;
    if (filtered && std::find(filter.begin(), filter.end(), e) != filter.end()) continue;
    greater += s[e] > truth;
    equal += s[e] == truth;
  }
  return 1.0 / (1.0 + greater + equal / 2.0);
}

TEST_F(GnnRankingTest, MetricsEqualBruteForceOverTheEncodersOutputs) {
  // Full neighbourhoods (fanout -1): an entity's encoding does not depend on its batch, so
  // one forward pass over the whole graph gives the encodings the job ranked with.
  const JobConfig j = job(1, "-1", "full");
  const JobReport report = run_in_process(j);
  const EpochMetrics& last = report.epochs.back();

  const PartitionFolder folder(tmp_ / "full/partitions");
  const PartitionMeta& meta = folder.meta();
  ModelConfig config;
  config.kind = name_of(j.model.kind);
  config.in_dim = 0;
  config.hidden_dim = j.model.hidden;
  config.out_dim = j.link.dim;
  config.num_layers = j.model.layers;
  config.dropout = j.model.dropout;
  config.trim = j.model.trim;
  set_relations(config, meta);
  config.decomposition = j.model.decomposition;
  config.num_bases = j.model.bases;
  config.num_blocks = j.model.blocks;
  std::shared_ptr<GnnModel> model = make_model(config, j.seed);
  const int64_t num_relations = static_cast<int64_t>(meta.edge_types.size());
  at::Tensor relations = model->register_parameter("decoder_relations", torch::zeros({num_relations, j.link.dim}));
  auto optimizer = make_optimizer(name_of(j.optimizer), model->parameters(), j.learning_rate, j.weight_decay, j.momentum);
  load_training_state(*model, *optimizer, report.final_state);

  const Topology topology = load_topology(folder, 0);
  NeighborSampler sampler(topology, sampler_config_from({{"fanouts", "-1"}, {"hop_independent", "true"}}, topology));
  std::vector<int64_t> every(static_cast<size_t>(meta.num_nodes));
  std::iota(every.begin(), every.end(), int64_t{0});
  MiniBatch sampled = sampler.sample(Span<const int64_t>(every), {j.seed, 0, 0});
  const at::Tensor local = torch::tensor(sampled.input_local, torch::kLong);
  const std::vector<int32_t> node_type = global_node_types(folder);
  torch::NoGradGuard no_grad;
  const GraphBatch batch = to_graph_batch(std::move(sampled), {}, HeteroLayout{config.num_relations, &node_type});
  const at::Tensor encoding = model->forward(batch, false, 0).index_select(0, local);  // [entities, dim]

  const KgTriples kg(folder);
  for (const char* split : {"valid", "test"}) {
    SCOPED_TRACE(split);
    const TripleList held = kg.held_out(split, 0);
    double filtered = 0, raw = 0, hits10 = 0, queries = 0;
    for (int64_t i = 0; i < held.size(); ++i) {
      const at::Tensor r = relations[held.relation[i]];
      // Tail prediction scores <h * r, e>, head prediction <r * t, e>, for every entity e.
      const at::Tensor tails = torch::mv(encoding, encoding[held.head[i]] * r);
      const at::Tensor heads = torch::mv(encoding, encoding[held.tail[i]] * r);
      for (const auto& [scores, answer, truth] :
           {std::make_tuple(tails, held.tail[i], kg.true_tails(held.head[i], held.relation[i])),
            std::make_tuple(heads, held.head[i], kg.true_heads(held.relation[i], held.tail[i]))}) {
        const double f = reciprocal_rank(scores, answer, truth, true);
        filtered += f;
        raw += reciprocal_rank(scores, answer, truth, false);
        hits10 += f >= 0.1;
        queries += 1;
      }
    }
    const std::string prefix = std::string(split) + ".";
    EXPECT_EQ(last.ranking_metric(prefix + "queries"), queries);
    EXPECT_NEAR(last.ranking_metric(prefix + "mrr"), filtered / queries, 1e-6);
    EXPECT_NEAR(last.ranking_metric(prefix + "raw_mrr"), raw / queries, 1e-6);
    EXPECT_NEAR(last.ranking_metric(prefix + "hits@10"), hits10 / queries, 1e-6);
    // Filtering only removes competitors.
    EXPECT_GE(last.ranking_metric(prefix + "mrr"), last.ranking_metric(prefix + "raw_mrr"));
  }
}

// GraphSAGE + dot product on a homogeneous SBM graph with features (GnnLinkJobTest's):
// its training gives the same step losses on 1 and 2 partitions, so its metrics must match.
// (R-GCN's featureless input is a learnt row per *global* id, which the partitioning
// relabels: its training differs with the partitioning before any ranking does.)
JobConfig sbm_job(const std::string& dir, int parts, const std::string& output) {
  return parse_job("task: link_prediction\n"
                   "data: {generate: {kind: sbm, nodes: 300, classes: 4, features: 16, avg_degree: 8, seed: 2},\n"
                   "       num_partitions: " + std::to_string(parts) + ", holdout: {val: 0.05, test: 0.1}}\n"
                   "model: {encoder: graphsage, dim: 16, hidden: 16, layers: 2, dropout: 0.0}\n"
                   "negatives: {k: 2, chunk_size: 1}\n"
                   "sampling: {fanouts: [3, 3], batch_size: 128}\n"
                   "train: {epochs: 2, learning_rate: 0.01, seed: 3, eval_batch_size: 50}\n"
                   "eval: {negatives: all, block: 64}\n"
                   "output: " + output + "\n",
                   dir, "sbm ranking job");
}

TEST_F(GnnRankingTest, OneAndTwoPartitionsGiveTheSameMetrics) {
  // Sampled neighbourhoods: the encodings' draws are keyed by batches cut from all entities
  // in original-id order, the same however the entities are partitioned.
  const JobReport one = run_in_process(sbm_job(tmp_.path(), 1, "one"));
  EXPECT_GT(one.epochs.back().ranking_metric("test.queries"), 0);
  JobConfig four = sbm_job(tmp_.path(), 2, "four");
  four.trainers_per_partition = 2;
  for (const JobConfig& j : {sbm_job(tmp_.path(), 2, "two"), four}) {
    SCOPED_TRACE(std::to_string(j.num_trainers()) + " trainers");
    const JobReport other = run_in_process(j);
    ASSERT_EQ(other.epochs.size(), one.epochs.size());
    for (size_t e = 0; e < one.epochs.size(); ++e) {
      ASSERT_EQ(one.epochs[e].step_losses.size(), other.epochs[e].step_losses.size());
      for (size_t s = 0; s < one.epochs[e].step_losses.size(); ++s) {
        EXPECT_NEAR(one.epochs[e].step_losses[s], other.epochs[e].step_losses[s], 1e-4 * one.epochs[e].step_losses[s])
            << "epoch " << e + 1 << " step " << s;
      }
      expect_same_metrics(one.epochs[e], other.epochs[e], 1e-6);
    }
  }
}

TEST_F(GnnRankingTest, TwoDaemonsGiveTheSameMetricsAsOneProcess) {
  JobConfig j = job(2, "3", "local");
  const JobReport local = run_in_process(j);
  j.output = tmp_ / "remote";
  j.partitions = tmp_ / "local/partitions";  // as prepared by the local run
  const JobReport remote = testing::run_on_two_daemons(j);
  ASSERT_EQ(remote.epochs.size(), local.epochs.size());
  for (size_t e = 0; e < local.epochs.size(); ++e) {
    EXPECT_EQ(remote.epochs[e].step_losses, local.epochs[e].step_losses) << "epoch " << e + 1;
    expect_same_metrics(local.epochs[e], remote.epochs[e], 0.0);
  }
}

TEST_F(GnnRankingTest, CombinationsThatCannotRankAgainstEveryEntityAreNamed) {
  const auto& refused = testing::expect_usage_error;
  const auto parsed = [&](const std::string& text) { parse_job(text, tmp_.path(), "bad job"); };
  refused(
      [&] {
        parsed("task: link_prediction\ndata: {dataset: kg, format: triples}\n"
               "model: {encoder: hetero_sage, target_edge: [user, rates, movie]}\neval: {negatives: all}\n");
      },
      "eval.negatives: 'all' ranks against every node of the graph, and model.target_edge's destinations are of "
      "one type");
  refused(
      [&] {
        parsed("task: link_prediction\ndata: {dataset: kg, format: triples}\n"
               "model: {encoder: rgcn}\neval: {negatives: all}\ntrain: {loss: mse}\n");
      },
      "eval.negatives: 'all' ranks each held-out edge against every entity, and train.loss: mse predicts edge values");
  refused(
      [&] {
        parsed("task: link_prediction\ndata: {dataset: kg, format: triples, holdout: {test: 0.1, by: time, "
               "history: keep}}\nmodel: {encoder: rgcn}\nsampling: {temporal: {time: edge}}\neval: {negatives: all}\n");
      },
      "eval.negatives: 'all' ranks against one encoding of every entity");
}

// The example job (BENCHMARKS.md's R-GCN run) is a valid job for the shared data.
TEST(GnnRankingExampleTest, TheFb15k237RgcnExampleLoads) {
  const JobConfig j = load_job(std::string(testing::kSourceDir) + "/examples/fb15k237_rgcn.yaml");
  EXPECT_TRUE(j.link_gnn());
  EXPECT_EQ(j.model.kind, ModelKind::kRgcn);
  EXPECT_EQ(j.link.decoder, LinkDecoder::kDistMult);
  EXPECT_EQ(j.link.eval_negatives, 0);
  EXPECT_EQ(fs::path(j.dataset).filename(), "fb15k-237");
  EXPECT_EQ(j.num_partitions, 2);
}

}  // namespace
}  // namespace partita
