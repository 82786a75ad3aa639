// Splits are data (data.split; JobConfig::split_seed): the node split of a format without
// one (LINQS), the held-out edges and the partitioning follow data.split, never
// train.seed; a job with another split prepares its data again rather than reusing the
// folder of the last; data.split_seed: N is {kind: random, seed: N}; data.holdout.val cuts
// validation nodes out of the training nodes, and RDF entity classification trains on the
// benchmark's whole training set unless asked for a cut.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "embeddings/kg_triples.h"
#include "expect_error.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

// The folder's training and validation nodes, held-out test edges (in original ids) and
// the partitioning (each original node's global id).
struct Splits {
  std::vector<int64_t> train, val;
  std::set<std::pair<int64_t, int64_t>> test_edges;
  std::vector<int64_t> global_of_original;
};

Splits splits_of(const std::string& dir) {
  const PartitionFolder folder(dir);
  const MappedArray map = folder.node_map();
  const Span<const int64_t> to_global = map.as<int64_t>();
  std::vector<int64_t> original(to_global.size());
  for (size_t o = 0; o < to_global.size(); ++o) original[to_global[o]] = static_cast<int64_t>(o);
  Splits s;
  s.global_of_original.assign(to_global.begin(), to_global.end());
  for (int p = 0; p < folder.meta().num_parts; ++p) {
    const PartitionData part = folder.load_part(p);  // owns the mapping the loop reads
    for (int64_t v : part.train_idx.as<int64_t>()) s.train.push_back(original[v]);
    for (int64_t v : part.val_idx.as<int64_t>()) s.val.push_back(original[v]);
  }
  std::sort(s.train.begin(), s.train.end());
  std::sort(s.val.begin(), s.val.end());
  if (folder.meta().has_edge_splits) {
    const KgTriples triples(folder);
    for (int p = 0; p < folder.meta().num_parts; ++p) {
      const TripleList t = triples.held_out("test", p);
      for (int64_t i = 0; i < t.size(); ++i) s.test_edges.insert({original[t.head[i]], original[t.tail[i]]});
    }
  }
  return s;
}

class DataSplitTest : public ::testing::Test {
 protected:
  // Cora prepared into `output` (2 parts), as a node classification or link job; `data`
  // adds fields to its data section.
  Splits prepare(bool link, const std::string& train_seed, const std::string& data, const std::string& output,
                 const std::string& dataset = "cora", const std::string& format = "linqs") {
    const std::string section = "data: {dataset: " + testing::dataset_path(dataset) + ", format: " + format +
                                ", num_partitions: 2" + (data.empty() ? "" : ", " + data) +
                                (link ? ", holdout: {val: 0.05, test: 0.1}}\n" : "}\n");
    const JobConfig job = parse_job((link ? "task: link_prediction\nmodel: {encoder: graphsage}\n" : "") + section +
                                        "train: {seed: " + train_seed + "}\noutput: " + output + "\n",
                                    tmp_.path(), "split job");
    prepare_data(job, 2);
    return splits_of(job.partition_dir());
  }
  testing::TempDir tmp_;
};

TEST_F(DataSplitTest, TrainSeedChangesNeitherTheSplitNorThePartitioning) {
  const Splits one = prepare(false, "1", "", "a");
  const Splits two = prepare(false, "2", "", "b");
  EXPECT_EQ(one.train.size(), 140u);  // 20 per class
  EXPECT_EQ(one.val.size(), 500u);
  EXPECT_EQ(two.train, one.train) << "train.seed drew another split";
  EXPECT_EQ(two.val, one.val);
  EXPECT_EQ(two.global_of_original, one.global_of_original) << "train.seed repartitioned the graph";
  // The standard split, whether said or not.
  EXPECT_EQ(prepare(false, "3", "split: {kind: standard}", "c").train, one.train);
}

TEST_F(DataSplitTest, ARandomSplitHasItsOwnSeedAndSplitSeedIsItsShortForm) {
  const Splits standard = prepare(false, "1", "", "a");
  const Splits random = prepare(false, "1", "split: {kind: random, seed: 7}", "b");
  EXPECT_NE(random.train, standard.train) << "the split seed did not reach the LINQS split";
  EXPECT_NE(random.global_of_original, standard.global_of_original) << "the split seed did not seed the partitioner";
  // Into b's folder: another split must not reuse what b prepared; split_seed: 7 is the same split.
  EXPECT_EQ(prepare(false, "1", "split_seed: 7", "c").train, random.train);
  EXPECT_EQ(prepare(false, "5", "split: {kind: random, seed: 7}", "c").train, random.train);
  EXPECT_EQ(prepare(false, "1", "", "b").train, standard.train);
}

TEST_F(DataSplitTest, TheHeldOutEdgesFollowTheSplitNotTheTrainingSeed) {
  const Splits one = prepare(true, "1", "", "a");
  const Splits two = prepare(true, "2", "", "b");
  ASSERT_GT(one.test_edges.size(), 400u);
  EXPECT_EQ(two.test_edges, one.test_edges);
  const Splits random = prepare(true, "1", "split: {kind: random, seed: 2}", "c");
  EXPECT_NE(random.test_edges, one.test_edges);
  EXPECT_EQ(prepare(true, "9", "split_seed: 2", "d").test_edges, random.test_edges);
}

TEST_F(DataSplitTest, HoldoutValCutsValidationNodesFromTheTrainingNodes) {
  const Splits whole = prepare(false, "1", "", "a");
  const Splits cut = prepare(false, "1", "holdout: {val: 0.5}", "b");
  ASSERT_EQ(cut.train.size(), 70u);
  EXPECT_EQ(cut.val.size(), 570u);  // the standard 500 and 70 of the 140
  std::vector<int64_t> moved;
  std::set_difference(whole.train.begin(), whole.train.end(), cut.train.begin(), cut.train.end(),
                      std::back_inserter(moved));
  EXPECT_EQ(moved.size(), 70u);
  EXPECT_TRUE(std::includes(cut.val.begin(), cut.val.end(), moved.begin(), moved.end()));
  EXPECT_EQ(prepare(false, "4", "holdout: {val: 0.5}", "c").train, cut.train);
}

TEST_F(DataSplitTest, RdfEntityClassificationTrainsOnTheWholeTrainingSetUnlessAsked) {
  const Splits whole = prepare(false, "1", "", "a", "aifb", "ntriples");
  EXPECT_EQ(whole.train.size(), 140u);  // AIFB's trainingSet.tsv
  EXPECT_TRUE(whole.val.empty());
  const Splits cut = prepare(false, "1", "holdout: {val: 0.2}", "b", "aifb", "ntriples");
  EXPECT_EQ(cut.train.size(), 112u);
  EXPECT_EQ(cut.val.size(), 28u);
}

TEST_F(DataSplitTest, SplitFieldsAreChecked) {
  const auto parse = [&](const std::string& data) {
    parse_job("data: {dataset: " + testing::dataset_path("cora") + ", format: linqs, " + data + "}\n", tmp_.path(),
              "job.yaml");
  };
  testing::expect_usage_error([&] { parse("split: {kind: fixed}"); }, "data.split.kind: 'fixed' is not one of: standard, random");
  testing::expect_usage_error([&] { parse("split: {kind: random}"); }, "data.split.seed: missing");
  testing::expect_usage_error([&] { parse("split: {seed: 3}"); }, "data.split.seed: applies to kind random");
  testing::expect_usage_error([&] { parse("split: {kind: random, seed: 3}, split_seed: 3"); },
                              "data.split_seed: give data.split only (split_seed: N is split: {kind: random, seed: N})");
  testing::expect_usage_error([&] { parse("holdout: {val: 0.1, test: 0.1}"); },
                              "data.holdout.test: holds out edges, for task: link_prediction only");
  testing::expect_usage_error([&] { parse("holdout: {val: 0.9}"); }, "data.holdout.val: must be in [0, 0.5]");
}

}  // namespace
}  // namespace partita
