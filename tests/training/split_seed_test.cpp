// The seed of the splits a job draws when it prepares a dataset (data.split_seed, else
// train.seed; JobConfig::split_seed): the node split of a format without one (LINQS) and
// the held-out edges both follow it, a job with another split seed prepares its data again
// rather than reusing the folder of the last, and an explicit data.split_seed keeps the
// split while train.seed changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "embeddings/kg_triples.h"
#include "job_runs.h"
#include "partitioner/partition_format.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

// The folder's training nodes and held-out test edges, in original ids.
struct Splits {
  std::vector<int64_t> train;
  std::set<std::pair<int64_t, int64_t>> test_edges;
};

Splits splits_of(const std::string& dir) {
  const PartitionFolder folder(dir);
  const MappedArray map = folder.node_map();
  const Span<const int64_t> to_global = map.as<int64_t>();
  std::vector<int64_t> original(to_global.size());
  for (size_t o = 0; o < to_global.size(); ++o) original[to_global[o]] = static_cast<int64_t>(o);
  Splits s;
  for (int p = 0; p < folder.meta().num_parts; ++p) {
    const PartitionData part = folder.load_part(p);  // owns the mapping the loop reads
    for (int64_t v : part.train_idx.as<int64_t>()) s.train.push_back(original[v]);
  }
  std::sort(s.train.begin(), s.train.end());
  if (folder.meta().has_edge_splits) {
    const KgTriples triples(folder);
    for (int p = 0; p < folder.meta().num_parts; ++p) {
      const TripleList t = triples.held_out("test", p);
      for (int64_t i = 0; i < t.size(); ++i) s.test_edges.insert({original[t.head[i]], original[t.tail[i]]});
    }
  }
  return s;
}

class SplitSeedTest : public ::testing::Test {
 protected:
  // Cora prepared into `output` (2 parts), as a node classification or link job.
  Splits prepare(bool link, const std::string& train_seed, const std::string& split_seed, const std::string& output) {
    const std::string data = "data: {dataset: " + testing::dataset_path("cora") + ", format: linqs, num_partitions: 2" +
                             (split_seed.empty() ? "" : ", split_seed: " + split_seed) +
                             (link ? ", holdout: {val: 0.05, test: 0.1}}\n" : "}\n");
    const JobConfig job = parse_job((link ? "task: link_prediction\nmodel: {encoder: graphsage}\n" : "") + data +
                                        "train: {seed: " + train_seed + "}\noutput: " + output + "\n",
                                    tmp_.path(), "split seed job");
    prepare_data(job, 2);
    return splits_of(job.partition_dir());
  }
  testing::TempDir tmp_;
};

TEST_F(SplitSeedTest, TheNodeSplitFollowsTrainSeedUnlessDataSplitSeedIsGiven) {
  const Splits one = prepare(false, "1", "", "a");
  const Splits two = prepare(false, "2", "", "b");
  EXPECT_EQ(one.train.size(), 140u);  // 20 per class
  EXPECT_NE(one.train, two.train) << "train.seed did not reach the LINQS split";
  // Into b's folder: another split seed must not reuse what b prepared.
  EXPECT_EQ(prepare(false, "2", "1", "b").train, one.train);
  EXPECT_EQ(prepare(false, "7", "1", "c").train, one.train);
}

TEST_F(SplitSeedTest, TheHeldOutEdgesFollowTheSameSeed) {
  const Splits one = prepare(true, "1", "", "a");
  const Splits two = prepare(true, "2", "", "b");
  ASSERT_GT(one.test_edges.size(), 400u);
  EXPECT_NE(one.test_edges, two.test_edges);
  const Splits again = prepare(true, "2", "1", "b");
  EXPECT_EQ(again.test_edges, one.test_edges);
  EXPECT_EQ(again.train, one.train);
}

}  // namespace
}  // namespace partita
