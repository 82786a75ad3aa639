// Jobs with temporal sampling (sampling.temporal): node classification and link prediction
// with a GNN encoder train on a graph with node and edge times, with batches cut in time
// order and a time split of the links; the same losses in one process and on two daemons;
// a temporal job on a graph without times, and fields that do not fit, are named. (That no
// batch holds an edge later than its seed: the sampler actors' tests,
// TemporalSamplingTest.NoBatchHoldsAnEdgeLaterThanItsSeedInOneProcessOrOnDaemons.)
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/random.h"
#include "daemon_process.h"
#include "job_runs.h"
#include "partitioned_graph.h"
#include "partitioner/readers.h"
#include "runtime/runtime.h"
#include "expect_error.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"

namespace partita {
namespace {

using testing::run_in_process;

class TemporalJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Dataset d = testing::sbm_graph(1500, 4);
    for (int64_t v = 0; v < d.num_nodes; ++v) d.node_time.push_back(static_cast<int64_t>(mix64(v) % 1000));
    for (int64_t e = 0; e < d.num_edges(); ++e) d.edge_time.push_back(static_cast<int64_t>(mix64(e, 3) % 1000));
    write_npy_folder(d, tmp_ / "timed");
  }
  JobConfig node_job(const std::string& temporal, const std::string& output) {
    return parse_job("data: {dataset: timed, format: npy, num_partitions: 2}\n"
                     "model: {kind: graphsage, hidden: 16, layers: 2, dropout: 0.2}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 64, temporal: " + temporal + "}\n"
                     "train: {epochs: 2, seed: 3}\noutput: " + output + "\n",
                     tmp_.path(), "temporal job");
  }
  JobConfig link_job(const std::string& output) {
    return parse_job("task: link_prediction\n"
                     "data: {dataset: timed, format: npy, num_partitions: 2, holdout: {val: 0.05, test: 0.1, by: time}}\n"
                     "model: {encoder: graphsage, dim: 16, hidden: 16, layers: 2, dropout: 0.0}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 256, temporal: {time: edge, strategy: last, batches: time}}\n"
                     "train: {epochs: 2, seed: 3}\neval: {negatives: 2}\noutput: " + output + "\n",
                     tmp_.path(), "temporal link job");
  }
  testing::TempDir tmp_;
};

TEST_F(TemporalJobTest, NodeAndLinkJobsTrainInTimeAndTheSameOnDaemons) {
  const JobConfig node = node_job("{time: edge, strategy: uniform, batches: time}", "node");
  const JobReport local = run_in_process(node);
  ASSERT_EQ(local.epochs.size(), 2u);
  EXPECT_GT(local.epochs.back().test_accuracy, 0.35);  // 4 classes: chance is 0.25
  const JobReport link = run_in_process(link_job("link"));
  ASSERT_EQ(link.epochs.size(), 2u);
  EXPECT_TRUE(std::isfinite(link.epochs.back().train_loss));
  EXPECT_GT(link.epochs.back().ranking_metric("test.edges"), 0);

  const testing::TwoDaemons two = testing::start_two_daemons();
  for (const auto& [job, report] : {std::make_pair(node, local), std::make_pair(link_job("link"), link)}) {
    JobConfig remote_job = job;
    remote_job.partitions = job.partition_dir();  // as the local run prepared it
    remote_job.output = tmp_ / ("remote-" + std::to_string(job.link_prediction()));
    const JobReport remote = run_job(*two.runtime, remote_job, {});
    ASSERT_EQ(remote.epochs.size(), report.epochs.size());
    for (size_t e = 0; e < report.epochs.size(); ++e) {
      EXPECT_EQ(remote.epochs[e].step_losses, report.epochs[e].step_losses) << "epoch " << e + 1;
      EXPECT_EQ(remote.epochs[e].step_hashes, report.epochs[e].step_hashes) << "epoch " << e + 1;
    }
  }
}

TEST_F(TemporalJobTest, AGraphWithoutTimesAndFieldsThatDoNotFitAreNamed) {
  const auto& refused = testing::expect_usage_error;
  refused(
      [&] {
        run_in_process(parse_job("data: {generate: {kind: sbm, nodes: 400, classes: 4, features: 8}}\n"
                                 "sampling: {temporal: {time: edge}}\noutput: untimed\n",
                                 tmp_.path(), "untimed job"));
      },
      "sampling.temporal: " + (tmp_ / "untimed/partitions") + " has no edge times");
  refused([&] { node_job("{strategy: last}", "x"); }, "sampling.temporal.time: missing");
  refused([&] { node_job("{time: wall}", "x"); }, "sampling.temporal.time: 'wall' is not one of: node, edge");
  refused([&] { node_job("{time: node, batches: sorted}", "x"); }, "sampling.temporal.batches");
  refused(
      [&] {
        parse_job("task: link_prediction\ndata: {dataset: timed, format: npy}\nsampling: {temporal: {time: edge}}\n",
                  tmp_.path(), "kg job");
      },
      "sampling.temporal: bounds the sampled neighbourhoods of a GNN encoder");
  refused(
      [&] {
        parse_job("task: link_prediction\ndata: {dataset: timed, format: npy, holdout: {test: 0.1, by: time}}\n"
                  "model: {encoder: graphsage}\nsampling: {fanouts: [5, 5]}\n",
                  tmp_.path(), "untimed split");
      },
      "data.holdout.by: time holds out the latest links, for jobs with sampling.temporal");
}

}  // namespace
}  // namespace partita
