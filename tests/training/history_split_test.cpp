// A time split that keeps its held-out links in the graph as history (data.holdout.history:
// keep, the streaming protocol of TGN and TGB): the job trains and evaluates, and on every
// batch of its own plans (training, validation and test, each trainer's, sampled by the
// partition and sampler actors in this process and on two daemons) no seed's tree holds an
// edge at or after its positive's time, nor an edge between its positive's two ends, and no
// training batch holds a held-out link. With the bound at the positive's time instead (the
// protocol without history), evaluation batches do hold later edges: the check can fail.
// Fields and folders that do not fit are named.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/actor_types.h"
#include "actors/cluster.h"
#include "actors/sampler_client.h"
#include "base/error.h"
#include "base/random.h"
#include "connected_daemons.h"
#include "expect_error.h"
#include "job_runs.h"
#include "partitioned_graph.h"
#include "partitioner/readers.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/gnn_link_plan.h"
#include "training/gnn_link_trainer.h"

namespace partita {
namespace {

using namespace std::chrono_literals;
using Pair = std::pair<int64_t, int64_t>;  // a link's ends, original ids, smaller first

Pair pair_of(int64_t a, int64_t b) { return {std::min(a, b), std::max(a, b)}; }

class HistorySplitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = testing::sbm_graph(1500, 4);
    // One time per link (both directions share it), as history: keep requires.
    for (int64_t e = 0; e < graph_.num_edges(); ++e) {
      const Pair p = pair_of(graph_.edges.src[e], graph_.edges.dst[e]);
      graph_.edge_time.push_back(static_cast<int64_t>(mix64(p.first, p.second) % 1000));
      time_of_[p] = graph_.edge_time.back();
    }
    write_npy_folder(graph_, tmp_ / "timed");
  }
  JobConfig job(const std::string& holdout, const std::string& temporal, const std::string& output) {
    return parse_job("task: link_prediction\n"
                     "data: {dataset: timed, format: npy, num_partitions: 2, holdout: " + holdout + "}\n"
                     "model: {encoder: graphsage, dim: 16, hidden: 16, layers: 2, dropout: 0.0}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 256, temporal: " + temporal + "}\n"
                     "train: {epochs: 1, seed: 3}\neval: {negatives: 2}\noutput: " + output + "\n",
                     tmp_.path(), "history job");
  }
  JobConfig history_job(const std::string& output) {
    return job("{val: 0.05, test: 0.1, by: time, history: keep}", "{time: edge}", output);
  }
  Dataset graph_;
  std::map<Pair, int64_t> time_of_;
  testing::TempDir tmp_;
};

// What the batches of one plan break.
struct Breaches {
  int64_t edges = 0;      // sampled edges checked
  int64_t not_before = 0; // at or after their positive's time
  int64_t own_link = 0;   // between their positive's two ends
  int64_t held_out = 0;   // a held-out link (training plans)
};

TEST_F(HistorySplitTest, NoBatchSeesItsLinksTimeOrLaterAndTrainingSeesNoHeldOutLink) {
  const JobConfig history = history_job("history");
  const JobReport report = testing::run_in_process(history);
  ASSERT_EQ(report.epochs.size(), 1u);
  EXPECT_TRUE(std::isfinite(report.epochs.back().train_loss));
  EXPECT_GT(report.epochs.back().ranking_metric("test.auc"), 0.5);

  const std::string dir = history.partition_dir();
  const testing::PartitionedGraph graph(dir);
  const auto original = [&](int64_t global) { return graph.original_of_global()[global]; };
  // The job's own plans, each trainer's: one training epoch, validation and test.
  std::vector<LinkPlanner> planners(2);
  std::set<Pair> held_out;
  for (int t = 0; t < 2; ++t) {
    JobConfig from_folder = history;
    from_folder.partitions = dir;
    open_link_plan(planners[t], from_folder, t);
    for (const auto& [split, edges] : planners[t].held_out) {
      for (int64_t i = 0; i < edges.size(); ++i) held_out.insert(pair_of(original(edges.head[i]), original(edges.tail[i])));
    }
  }
  ASSERT_GT(held_out.size(), 100u);
  const PartitionFolder folder(dir);
  const int64_t steps = (link_training_edges(history, folder) + history.batch_size - 1) / history.batch_size;

  runtime::ActorSystem client{testing::actor_test_options(/*networking=*/true)};
  testing::ConnectedDaemons nodes = testing::start_connected_daemons(client, 2);
  runtime::ActorTypeRegistry local;
  register_actor_types(local);
  // Runs `plan` (trainer t's; `step` its steps) through trainer t's sampler, as the job's
  // driver sets the actors up, and counts what its batches break.
  const auto check = [&](int t, const EpochPlan& plan, const std::vector<LinkStep>& step, bool training,
                         bool on_daemons) -> Breaches {
    const runtime::Settings settings{{"dir", dir},           {"fanouts", "5,5"},      {"hop_independent", "true"},
                                     {"disjoint", "true"},   {"temporal", "edge"},    {"temporal_strategy", "uniform"},
                                     {"deadline_ms", "120000"}};
    std::vector<caf::actor> partitions, spawned;
    const auto spawn = [&](int p, const std::string& type) {
      runtime::Settings s = settings;
      s["part"] = std::to_string(p);
      caf::actor a = on_daemons ? nodes.connections[p].spawn(type, s, 30s) : (*local.find(type))(client, s);
      spawned.push_back(a);
      return a;
    };
    for (int p = 0; p < 2; ++p) partitions.push_back(spawn(p, "partition"));
    const auto sampler = caf::actor_cast<sampler_actor>(spawn(t, "sampler"));
    Breaches breaches;
    {
      wire_sampler(client, sampler, partitions, on_daemons ? nodes.addresses : std::vector<std::string>{}, 30s);
      SamplerClient consumer(client, sampler, 60s, "the sampler of trainer " + std::to_string(t));
      const int64_t batches = consumer.start_link_plan(plan);
      EXPECT_EQ(batches, static_cast<int64_t>(step.size()));
      for (int64_t b = 0; b < batches; ++b) {
        const MiniBatch batch = consumer.next();
        const LinkStep& s = step[static_cast<size_t>(b)];
        const int64_t positives = s.size();
        const int64_t k = positives == 0 ? 0 : static_cast<int64_t>(s.negatives.size()) / positives;
        EXPECT_EQ(static_cast<int64_t>(batch.input_ids.size()), positives * (2 + k));
        if (static_cast<int64_t>(batch.input_ids.size()) != positives * (2 + k)) continue;
        for (size_t i = 0; i < batch.row.size(); ++i) {
          // Disjoint: the column's tree is its seed's position; the seed's positive, by
          // add_batch's layout (sources, destinations, then k negatives per positive).
          const int64_t tree = batch.batch[batch.col[i]];
          const int64_t j = tree < positives ? tree : tree < 2 * positives ? tree - positives : (tree - 2 * positives) / k;
          const Pair positive = pair_of(original(s.src[j]), original(s.dst[j]));
          const int64_t e = graph.original_edge(batch.edge_ids[i]);
          const Pair sampled = pair_of(graph_.edges.src[e], graph_.edges.dst[e]);
          ++breaches.edges;
          breaches.not_before += graph_.edge_time[e] >= time_of_.at(positive);
          breaches.own_link += sampled == positive;
          breaches.held_out += training && held_out.count(sampled) > 0;
        }
      }
    }
    for (const auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return breaches;
  };
  for (bool on_daemons : {false, true}) {
    SCOPED_TRACE(on_daemons ? "on daemons" : "in one process");
    for (int t = 0; t < 2; ++t) {
      SCOPED_TRACE("trainer " + std::to_string(t));
      LinkPlanner& p = planners[t];
      const EpochPlan training = plan_training(p, 1, steps);
      const Breaches trained = check(t, training, p.steps, true, on_daemons);
      EXPECT_GT(trained.edges, 10000);
      EXPECT_EQ(trained.not_before, 0);
      EXPECT_EQ(trained.own_link, 0);
      EXPECT_EQ(trained.held_out, 0);
      for (const std::string split : {"valid", "test"}) {
        const EpochPlan evaluation = plan_evaluation(p, split);
        const Breaches evaluated = check(t, evaluation, p.steps, false, on_daemons);
        EXPECT_GT(evaluated.edges, 1000) << split;
        EXPECT_EQ(evaluated.not_before, 0) << split;
        EXPECT_EQ(evaluated.own_link, 0) << split;
      }
    }
  }
  // Bounded at the positive's time, as without history (and by no time in evaluation):
  // test seeds see their own link and the test links after them.
  LinkPlanner& p = planners[0];
  p.history = false;
  const EpochPlan leaky = plan_evaluation(p, "test");
  const Breaches leaked = check(0, leaky, p.steps, false, false);
  EXPECT_GT(leaked.not_before, 0);
  EXPECT_GT(leaked.own_link, 0);
}

TEST_F(HistorySplitTest, FieldsAndFoldersThatDoNotFitAreNamed) {
  const auto& refused = testing::expect_usage_error;
  const std::string words = "data.holdout.history: keep keeps the held-out links in the graph as history, for a time "
                            "split (data.holdout.by: time) with sampling.temporal: {time: edge}";
  refused([&] { job("{test: 0.1, history: keep}", "{time: edge}", "x"); }, words);
  refused([&] { job("{test: 0.1, by: time, history: keep}", "{time: node}", "x"); }, words);
  refused([&] { job("{test: 0.1, by: time, history: later}", "{time: edge}", "x"); },
          "data.holdout.history: 'later' is not one of: drop, keep");
  // A folder that keeps its held-out links, read by a job that would not hide them.
  const JobConfig history = history_job("kept");
  testing::run_in_process(history);
  for (const std::string& reader : {std::string("model: {encoder: graphsage, dim: 16, hidden: 16, layers: 2}\n"
                                                "sampling: {fanouts: [5, 5], temporal: {time: node}}\n"),
                                    std::string("model: {encoder: graphsage, dim: 16, hidden: 16, layers: 2}\n"
                                                "sampling: {fanouts: [5, 5]}\n"),
                                    std::string("model: {encoder: none, decoder: distmult, dim: 16}\nnegatives: {k: 4, chunk_size: 4}\n")}) {
    refused(
        [&] {
          testing::run_in_process(parse_job("task: link_prediction\ndata: {partitions: " + history.partition_dir() +
                                                "}\n" + reader + "train: {epochs: 1}\noutput: reader\n",
                                            tmp_.path(), "reader job"));
        },
        history.partition_dir() + " keeps its held-out edges in the graph as history (data.holdout.history: keep): a "
                                  "link job reads it only with a GNN encoder and sampling.temporal: {time: edge}");
  }
}

}  // namespace
}  // namespace partita
