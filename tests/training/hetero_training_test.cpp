// Heterogeneous node classification end to end: the relational models (R-GCN, hetero
// GraphSAGE) on the heterogeneous generator's graph give the same losses in one process and
// on two daemons, a job that names a missing node type or runs a relational model on a
// homogeneous graph fails naming the field, and R-GCN on AIFB (examples/aifb.yaml) reaches
// the R-GCN paper's accuracy.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "daemon_process.h"
#include "job_runs.h"
#include "partitioned_graph.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "runtime/runtime.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

using std::chrono::seconds;
using testing::run_in_process;

// The academic graph (papers, authors, venues; 5 edge types) in 2 METIS parts, balanced per
// node type.
class HeteroJobTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    HeteroOptions o;
    o.num_papers = 2000;
    o.num_authors = 1000;
    o.num_venues = 20;
    o.feature_dim = 16;
    o.threads = 1;
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(generate_hetero(o), options, tmp_ / "parts");
  }
  JobConfig job(const std::string& model) {
    return parse_job("data: {partitions: parts}\n"
                     "model: " + model + "\n"
                     "sampling: {fanouts: [4, 4], batch_size: 32}\n"
                     "train: {epochs: 4, learning_rate: 0.02, seed: 3}\n"
                     "output: run\n",
                     tmp_.path(), "hetero job");
  }
  std::string model() const {
    return "{kind: " + GetParam() + ", hidden: 16, layers: 2, dropout: 0.3, target_type: paper" +
           (GetParam() == "rgcn" ? ", decomposition: basis, bases: 2}" : "}");
  }
  testing::TempDir tmp_;
};

TEST_P(HeteroJobTest, TwoDaemonsGiveTheSameLossesAsOneProcess) {
  JobConfig j = job(model());
  j.output = tmp_ / "local";
  const JobReport local = run_in_process(j);
  ASSERT_EQ(local.epochs.size(), 4u);
  // It learns: the papers' fields are in their features, venues, authors and citations.
  EXPECT_LT(local.epochs.back().train_loss, local.epochs.front().step_losses.front());
  EXPECT_GT(local.epochs.back().test_accuracy, 0.5);  // chance: 0.2

  j.output = tmp_ / "remote";
  const JobReport remote = testing::run_on_two_daemons(j);
  ASSERT_EQ(remote.epochs.size(), local.epochs.size());
  for (size_t e = 0; e < local.epochs.size(); ++e) {
    EXPECT_EQ(remote.epochs[e].step_losses, local.epochs[e].step_losses) << "epoch " << e + 1;
    EXPECT_EQ(remote.epochs[e].step_hashes, local.epochs[e].step_hashes) << "epoch " << e + 1;
    EXPECT_EQ(remote.epochs[e].test_accuracy, local.epochs[e].test_accuracy);
  }
}

TEST_P(HeteroJobTest, AMissingTargetTypeOrAHomogeneousGraphIsANamedError) {
  JobConfig j = job("{kind: " + GetParam() + ", hidden: 16, target_type: person}");
  try {
    run_in_process(j);
    ADD_FAILURE() << "a job with target_type person ran";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "model.target_type: 'person' is not a node type of");
    EXPECT_CONTAINS(e.what(), "(its types: paper, author, venue)");
  }
  // Authors have no labels and are no seeds: a target type the splits do not have.
  j = job("{kind: " + GetParam() + ", hidden: 16, target_type: author}");
  try {
    run_in_process(j);
    ADD_FAILURE() << "a job with target_type author ran";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "model.target_type:");
    EXPECT_CONTAINS(e.what(), "are not of type 'author'");
  }
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(testing::sbm_graph(500), options, tmp_ / "homogeneous");
  j = parse_job("data: {partitions: homogeneous}\nmodel: {kind: " + GetParam() +
                    "}\nsampling: {fanouts: [4, 4]}\noutput: homogeneous-run\n",
                tmp_.path(), "homogeneous job");
  try {
    run_in_process(j);
    ADD_FAILURE() << "a " << GetParam() << " job on a homogeneous graph ran";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "model.kind: " + GetParam() + " needs a heterogeneous graph");
  }
}

// Fanouts per edge type reach the job's samplers: a job that leaves authorship out trains,
// and differently from one that samples it; one that names an edge type the graph lacks
// fails before any actor starts, naming it.
TEST_P(HeteroJobTest, FanoutsPerEdgeTypeReachTheSamplers) {
  JobConfig all = job(model());
  all.epochs = 1;
  all.output = tmp_ / "all";
  JobConfig typed = all;
  typed.fanouts_by_type = {{"writes", {0, 0}}};
  typed.output = tmp_ / "typed";
  const JobReport with_authors = run_in_process(all), without = run_in_process(typed);
  ASSERT_EQ(without.epochs.size(), 1u);
  EXPECT_NE(without.epochs[0].step_hashes, with_authors.epochs[0].step_hashes);
  typed.fanouts_by_type = {{"reads", {1, 1}}};
  typed.output = tmp_ / "unknown";
  try {
    run_in_process(typed);
    ADD_FAILURE() << "a job with fanouts for edge type 'reads' ran";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "sampling.fanouts of");
    EXPECT_CONTAINS(e.what(), "'reads' is not an edge type of the graph (author,writes,paper;");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, HeteroJobTest, ::testing::Values("rgcn", "hetero_sage"));

// examples/aifb.yaml as it is (2 partitions, R-GCN, 50 epochs) over 3 seeds: the R-GCN
// paper reports 95.83% test accuracy; every seed must reach 0.90 and their mean 0.92.
TEST(AifbQuality, RgcnReachesThePapersAccuracy) {
  std::ifstream in(std::string(testing::kSourceDir) + "/examples/aifb.yaml");
  std::stringstream yaml;
  yaml << in.rdbuf();
  ASSERT_FALSE(yaml.str().empty());
  testing::TempDir tmp;
  double sum = 0;
  for (uint64_t seed : {1, 2, 3}) {
    JobConfig job = parse_job(yaml.str(), std::string(testing::kSourceDir) + "/examples", "aifb.yaml");
    job.dataset = testing::dataset_path("aifb");
    job.seed = seed;
    job.output = tmp / ("run-" + std::to_string(seed));
    const JobReport report = run_in_process(job);
    const double accuracy = report.epochs.back().test_accuracy;
    std::printf("seed %llu: test accuracy %.4f\n", static_cast<unsigned long long>(seed), accuracy);
    EXPECT_GE(accuracy, 0.90) << "seed " << seed;
    sum += accuracy;
  }
  EXPECT_GE(sum / 3, 0.92);
}

}  // namespace
}  // namespace partita
