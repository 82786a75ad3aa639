// Evaluation's negatives are non-edges (training/gnn_link_plan.h plan_evaluation): on a graph
// where 40% of all pairs are linked, so that uniformly drawn negatives would be true edges
// of their source about that often, no validation or test negative of any trainer makes an
// edge of the graph with its positive's source, in any split; every held-out edge still has
// its eval.negatives; and each held-out edge meets the same negatives (as original ids)
// with the graph in 1 or 2 partitions.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/random.h"
#include "partitioned_graph.h"
#include "partitioner/readers.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/gnn_link_plan.h"

namespace partita {
namespace {

using Pair = std::pair<int64_t, int64_t>;  // (source, destination), original ids

class EvalNegativesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dense_.name = "dense";
    dense_.num_nodes = 60;
    Rng rng(11);
    for (int64_t a = 0; a < dense_.num_nodes; ++a) {
      for (int64_t b = a + 1; b < dense_.num_nodes; ++b) {
        if (rng.uniform() >= 0.4) continue;
        for (const auto& [s, d] : {Pair{a, b}, Pair{b, a}}) {
          dense_.edges.src.push_back(s);
          dense_.edges.dst.push_back(d);
          edges_.insert({s, d});
        }
      }
    }
    dense_.feature_dim = 4;
    for (int64_t i = 0; i < dense_.num_nodes * dense_.feature_dim; ++i) dense_.x.push_back(static_cast<float>(rng.normal()));
    write_npy_folder(dense_, tmp_ / "dense");
  }

  // Each held-out edge's negatives (original ids), by split and edge, over every trainer of
  // the job on `parts` partitions; counts the negatives that are edges of their source.
  std::map<std::pair<std::string, Pair>, std::vector<int64_t>> negatives(int parts, int64_t& true_edges) {
    const std::string output = "p" + std::to_string(parts);
    const JobConfig job = parse_job("task: link_prediction\n"
                                    "data: {dataset: dense, format: npy, num_partitions: " + std::to_string(parts) +
                                        ", holdout: {val: 0.1, test: 0.2}}\n"
                                    "model: {encoder: graphsage, dim: 8, hidden: 8, layers: 1}\n"
                                    "sampling: {fanouts: [3], batch_size: 16}\n"
                                    "train: {epochs: 1, seed: 2}\neval: {negatives: 10}\noutput: " + output + "\n",
                                    tmp_.path(), "dense job");
    prepare_data(job, 1);
    const testing::PartitionedGraph graph(job.partition_dir());
    const auto original = [&](int64_t global) { return graph.original_of_global()[global]; };
    std::map<std::pair<std::string, Pair>, std::vector<int64_t>> out;
    for (int t = 0; t < parts; ++t) {
      LinkPlanner p;
      JobConfig from_folder = job;
      from_folder.partitions = job.partition_dir();
      open_link_plan(p, from_folder, t);
      for (const std::string split : {"valid", "test"}) {
        plan_evaluation(p, split);
        for (const LinkStep& step : p.steps) {
          for (int64_t i = 0; i < step.size(); ++i) {
            const Pair positive{original(step.src[i]), original(step.dst[i])};
            std::vector<int64_t>& mine = out[{split, positive}];
            for (int64_t j = 0; j < job.link.eval_negatives; ++j) {
              mine.push_back(original(step.negatives[static_cast<size_t>(i * job.link.eval_negatives + j)]));
              true_edges += edges_.count({positive.first, mine.back()});
            }
          }
        }
      }
    }
    return out;
  }

  Dataset dense_;
  std::set<Pair> edges_;  // every edge of the graph, held-out ones included
  testing::TempDir tmp_;
};

TEST_F(EvalNegativesTest, NoNegativeIsAnEdgeOfItsSourceAndTheyAreTheSameOnOneOrTwoPartitions) {
  ASSERT_GT(edges_.size(), 1200u);  // 40% of the 1,770 pairs, both directions
  int64_t true_one = 0, true_two = 0;
  const auto one = negatives(1, true_one);
  const auto two = negatives(2, true_two);
  // 10% and 20% of the ~700 links held out: over 200 edges, ten negatives each.
  ASSERT_GT(one.size(), 200u);
  EXPECT_EQ(true_one, 0);
  EXPECT_EQ(true_two, 0);
  EXPECT_EQ(one, two);
  std::set<int64_t> distinct;
  for (const auto& [edge, drawn] : one) {
    EXPECT_EQ(drawn.size(), 10u);
    distinct.insert(drawn.begin(), drawn.end());
  }
  EXPECT_GT(distinct.size(), 50u);  // drawn across the graph, not from a few nodes
}

}  // namespace
}  // namespace partita
