// Partition and sampler actors spawned on two `partita daemon` processes over loopback: the
// same batches as the single-partition reference, and a killed daemon named within the
// deadline.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <chrono>

#include "actors/distributed_sampler.h"
#include "base/error.h"
#include "cluster.h"
#include "daemon_process.h"
#include "graph/batch_features.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "runtime/client.h"
#include "sampler_client.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;

class TwoDaemonsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dataset_ = testing::sbm_graph();
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(dataset_, options, tmp_ / "parts");
    config_.fanouts = {{10, 5}};
    for (int p = 0; p < 2; ++p) {
      daemons_.push_back(testing::start_daemon({"--name", "node-" + std::to_string(p)}));
      ASSERT_FALSE(daemons_.back().address.empty());
      connections_.push_back(runtime::DaemonConnection::connect(client_, daemons_.back().address, 10s));
      runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", std::to_string(p)}, {"fanouts", "10,5"}};
      caf::actor actor = connections_.back().spawn("partition", settings, 30s);
      refs_.push_back(PartitionRef::remote(caf::actor_cast<partition_actor>(actor)));
    }
  }

  testing::TempDir tmp_;
  Dataset dataset_;
  SamplerConfig config_;
  runtime::ActorSystem client_{testing::actor_test_options(/*networking=*/true)};
  std::vector<testing::Daemon> daemons_;
  std::vector<runtime::DaemonConnection> connections_;
  std::vector<PartitionRef> refs_;
};

TEST_F(TwoDaemonsTest, SameBatchesAsTheSingleProcessReference) {
  testing::PartitionedGraph graph(tmp_ / "parts");
  DistributedSampler sampler(client_, graph.book(), refs_, config_, 20s);
  Topology whole = topology_from_dataset(dataset_);
  FeatureStore whole_features = features_from_dataset(dataset_);
  NeighborSampler reference(whole, config_);
  std::vector<int64_t> original_seeds, seeds;
  for (int64_t v = 0; v < 128; ++v) {
    original_seeds.push_back(v * 11);
    seeds.push_back(graph.global_of_original()[v * 11]);
  }
  for (uint64_t batch = 0; batch < 2; ++batch) {
    MiniBatch got = sampler.sample(seeds, {5, 0, batch});
    MiniBatch want = reference.sample(original_seeds, {5, 0, batch});
    attach_features(want, whole.book(), {&whole_features});
    ASSERT_FALSE(want.x.empty());
    EXPECT_TRUE(testing::to_original(got, [&](int64_t v) { return graph.original_of_global()[v]; },
                                     [&](int64_t e) { return graph.original_edge(e); }) ==
                testing::to_original(want, [](int64_t v) { return v; },
                                     [&](int64_t e) { return whole.original_edge_id(e); }))
        << "batch " << batch;
  }
}

TEST_F(TwoDaemonsTest, AKilledDaemonFailsTheBatchNamingItsPartition) {
  testing::PartitionedGraph graph(tmp_ / "parts");
  DistributedSampler sampler(client_, graph.book(), refs_, config_, 5s);
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 64; ++v) seeds.push_back(graph.global_of_original()[v * 13]);
  EXPECT_NO_THROW(sampler.sample(seeds, {5, 0, 0}));
  daemons_[1].process->kill();
  daemons_[1].process->wait(10);
  auto start = std::chrono::steady_clock::now();
  try {
    sampler.sample(seeds, {5, 0, 1});
    FAIL() << "sampling with a killed daemon succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("partition 1"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "noticed only after the deadline";
}

// Each daemon runs the sampler of the trainer placed with its partition, as `partita bench
// loader` (c) does: its own partition by direct call, the other through the other daemon.
TEST_F(TwoDaemonsTest, SamplerActorsOnBothDaemonsGiveTheReferenceBatches) {
  std::vector<sampler_actor> samplers;
  std::vector<caf::actor> partitions;
  std::vector<std::string> addresses;
  for (const PartitionRef& ref : refs_) partitions.push_back(caf::actor_cast<caf::actor>(ref.actor));
  for (const auto& d : daemons_) addresses.push_back(d.address);
  for (int p = 0; p < 2; ++p) {
    runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", std::to_string(p)}, {"fanouts", "10,5"},
                               {"prefetch", "2"}, {"deadline_ms", "20000"}};
    samplers.push_back(caf::actor_cast<sampler_actor>(connections_[p].spawn("sampler", settings, 30s)));
    Encoded wired = testing::ask(client_, samplers.back(), partitions_atom::value, partitions, addresses);
    ASSERT_EQ(testing::error_of(wired), "");
  }
  testing::ReferenceBatches reference(dataset_, tmp_ / "parts", config_);
  for (int p = 0; p < 2; ++p) {
    SCOPED_TRACE("the sampler of partition " + std::to_string(p));
    testing::expect_reference_epoch(client_, samplers[p], p, reference, 5, 0, 32);
  }
  // Both at once, as the benchmark runs them: every batch of the epoch, counted.
  caf::scoped_actor self{client_};
  std::vector<RunReport> reports(2);
  for (int p = 0; p < 2; ++p) {
    Encoded started = testing::ask(client_, samplers[p], epoch_atom::value, uint64_t{5}, uint64_t{1}, int64_t{16});
    ASSERT_EQ(testing::error_of(started), "");
  }
  std::vector<std::string> failures(2);
  // Both requests are out before either reply is awaited.
  auto run0 = self->request(samplers[0], 60s, run_atom::value, int64_t{1000}, int64_t{0});
  auto run1 = self->request(samplers[1], 60s, run_atom::value, int64_t{1000}, int64_t{0});
  auto receive = [&](auto& handle, int p) {
    handle.receive([&](Encoded& r) { reports[p] = decode_run_report(Span<const char>(r.bytes)); },
                   [&](caf::error& e) { failures[p] = client_.get().render(e); });
  };
  receive(run0, 0);
  receive(run1, 1);
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(failures[p], "");
    const EpochPlan plan = plan_epoch(reference.train_seeds(p), 16, 5, 1);
    EXPECT_EQ(reports[p].batches, plan.num_batches()) << "partition " << p;
    int64_t edges = 0;
    for (int64_t b = 0; b < plan.num_batches(); ++b) edges += static_cast<int64_t>(reference.expected(plan, b).edges.size());
    EXPECT_EQ(reports[p].edges, edges) << "partition " << p;
    EXPECT_GT(reports[p].remote_feature_bytes, 0);
  }
}

TEST_F(TwoDaemonsTest, AKilledDaemonFailsTheSamplerActorsBatchNamingItsPartition) {
  runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", "0"}, {"fanouts", "10,5"}, {"deadline_ms", "5000"}};
  auto sampler = caf::actor_cast<sampler_actor>(connections_[0].spawn("sampler", settings, 30s));
  std::vector<caf::actor> partitions;
  std::vector<std::string> addresses;
  for (const PartitionRef& ref : refs_) partitions.push_back(caf::actor_cast<caf::actor>(ref.actor));
  for (const auto& d : daemons_) addresses.push_back(d.address);
  ASSERT_EQ(testing::error_of(testing::ask(client_, sampler, partitions_atom::value, partitions, addresses)), "");
  ASSERT_EQ(testing::error_of(testing::ask(client_, sampler, epoch_atom::value, uint64_t{5}, uint64_t{0}, int64_t{16})),
            "");
  ASSERT_EQ(testing::error_of(testing::ask(client_, sampler, next_atom::value)), "");
  daemons_[1].process->kill();
  daemons_[1].process->wait(10);
  const auto start = std::chrono::steady_clock::now();
  std::string failure;
  for (int b = 1; b < 6 && failure.empty(); ++b) failure = testing::error_of(testing::ask(client_, sampler, next_atom::value));
  EXPECT_NE(failure.find("partition 1"), std::string::npos) << failure;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << "noticed only after the deadline";
}

TEST_F(TwoDaemonsTest, BadSettingsAreAnErrorNamingTheSetting) {
  runtime::Settings missing{{"dir", tmp_ / "parts"}, {"fanouts", "10,5"}};
  try {
    connections_[0].spawn("partition", missing, 30s);
    FAIL() << "spawned without a part";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("part"), std::string::npos) << e.what();
  }
  runtime::Settings bad_fanouts{{"dir", tmp_ / "parts"}, {"part", "0"}, {"fanouts", "10,x"}};
  EXPECT_THROW(connections_[0].spawn("partition", bad_fanouts, 30s), Error);
  runtime::Settings no_folder{{"dir", tmp_ / "nope"}, {"part", "0"}, {"fanouts", "10"}};
  EXPECT_THROW(connections_[0].spawn("partition", no_folder, 30s), Error);
  EXPECT_NO_THROW(connections_[0].ping(10s)) << "the daemon must keep serving";
}

}  // namespace
}  // namespace partita
