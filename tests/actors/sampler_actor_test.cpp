// The sampler actor: the reference batches whatever its prefetch and wherever the other
// partitions live (in-process actors, another actor system over loopback); runs count what
// the reference samples; failures and misuse are error replies naming the problem.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "actors/sampler_actor.h"
#include "base/error.h"
#include "cluster.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "sampler_client.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;
using testing::ask;
using testing::error_of;

// In one process: no daemon addresses.
const std::vector<std::string> kNoAddresses;

// Stops the samplers it holds when it goes out of scope: declared after a cluster, before
// the cluster's actor system waits for every actor to end.
struct Samplers {
  std::vector<sampler_actor> actors;
  ~Samplers() {
    for (const auto& s : actors) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
};

class SamplerActorTest : public ::testing::Test {
 protected:
  SamplerActorTest() : dataset_(testing::sbm_graph()) {
    config_.fanouts = {{6, 4}};
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(dataset_, options, tmp_ / "parts");
    reference_ = std::make_unique<testing::ReferenceBatches>(dataset_, tmp_ / "parts", config_);
  }

  // A sampler of `part` in `cluster`'s system, reading that part directly.
  sampler_actor spawn(testing::Cluster& cluster, Samplers& samplers, int part, int prefetch = 2,
                      std::chrono::milliseconds deadline = 30s) {
    std::vector<PartitionRef> refs = cluster.refs({true, true});
    SamplerOptions options;
    options.config = config_;
    options.prefetch = prefetch;
    options.deadline = deadline;
    sampler_actor s = spawn_sampler_actor(cluster.system(), cluster.book(), part,
                                          {refs[part].topology, refs[part].features},
                                          reference_->train_seeds(part), options);
    samplers.actors.push_back(s);
    return s;
  }

  static std::vector<caf::actor> actors_of(const testing::Cluster& cluster) {
    std::vector<caf::actor> actors;
    for (int p = 0; p < cluster.num_parts(); ++p) actors.push_back(caf::actor_cast<caf::actor>(cluster.actor(p)));
    return actors;
  }

  testing::TempDir tmp_;
  Dataset dataset_;
  SamplerConfig config_;
  std::unique_ptr<testing::ReferenceBatches> reference_;
};

TEST_F(SamplerActorTest, InProcessGivesTheReferenceBatchesWhateverThePrefetch) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  for (int prefetch : {1, 3}) {
    for (int part : {0, 1}) {
      SCOPED_TRACE("part " + std::to_string(part) + ", prefetch " + std::to_string(prefetch));
      sampler_actor s = spawn(cluster, samplers, part, prefetch);
      Encoded wired = ask(cluster.system(), s, partitions_atom::value, actors_of(cluster), kNoAddresses);
      ASSERT_EQ(error_of(wired), "");
      testing::expect_reference_epoch(cluster.system(), s, part, *reference_, 7, 1, 32);
      // A second epoch reuses the batch buffers and gives that epoch's batches.
      testing::expect_reference_epoch(cluster.system(), s, part, *reference_, 7, 2, 24);
    }
  }
}

TEST_F(SamplerActorTest, ARunCountsWhatTheReferenceSamples) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 1, 2);
  ASSERT_EQ(error_of(ask(cluster.system(), s, partitions_atom::value, actors_of(cluster), kNoAddresses)), "");
  ASSERT_EQ(error_of(ask(cluster.system(), s, epoch_atom::value, uint64_t{3}, uint64_t{0}, int64_t{20})), "");
  const EpochPlan plan = plan_epoch(reference_->train_seeds(1), 20, 3, 0);
  ASSERT_GE(plan.num_batches(), 3);
  int64_t edges = 0, nodes = 0;
  for (int64_t b = 0; b < 3; ++b) {
    testing::OriginalBatch want = reference_->expected(plan, b);
    edges += static_cast<int64_t>(want.edges.size());
    nodes += static_cast<int64_t>(want.nodes.size());
  }
  // Two runs back to back (a warm-up and a measurement, as the benchmark does).
  RunReport total;
  for (int64_t count : {1, 2}) {
    Encoded reply = ask(cluster.system(), s, run_atom::value, count, int64_t{0});
    ASSERT_EQ(error_of(reply), "");
    RunReport report = decode_run_report(Span<const char>(reply.bytes));
    EXPECT_EQ(report.batches, count);
    EXPECT_GT(report.remote_feature_bytes, 0);  // part 0 owns some of the sampled nodes
    total.edges += report.edges;
    total.nodes += report.nodes;
  }
  EXPECT_EQ(total.edges, edges);
  EXPECT_EQ(total.nodes, nodes);
  // The run took those batches: the next one is batch 3.
  Encoded next = ask(cluster.system(), s, next_atom::value);
  ASSERT_EQ(error_of(next), "");
  MiniBatch got;
  SampleKey key;
  decode_mini_batch(Span<const char>(next.bytes), got, &key);
  EXPECT_EQ(key.batch, 3u);
  EXPECT_TRUE(reference_->original(got) == reference_->expected(plan, 3));
}

TEST_F(SamplerActorTest, ATimedRunStopsStartingBatchesAndTheEpochGoesOnAfterIt) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 2);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), kNoAddresses)), "");
  ASSERT_EQ(error_of(ask(system, s, epoch_atom::value, uint64_t{3}, uint64_t{0}, int64_t{8})), "");
  const EpochPlan plan = plan_epoch(reference_->train_seeds(0), 8, 3, 0);
  ASSERT_GE(plan.num_batches(), 4);
  // A millisecond: at least the first batch, at most all of them.
  Encoded reply = ask(system, s, run_atom::value, plan.num_batches(), int64_t{1});
  ASSERT_EQ(error_of(reply), "");
  const RunReport report = decode_run_report(Span<const char>(reply.bytes));
  EXPECT_GE(report.batches, 1);
  EXPECT_LE(report.batches, plan.num_batches());
  if (report.batches < plan.num_batches()) {
    // The batches the run did not start come next, in plan order.
    Encoded next = ask(system, s, next_atom::value);
    ASSERT_EQ(error_of(next), "");
    MiniBatch got;
    SampleKey key;
    decode_mini_batch(Span<const char>(next.bytes), got, &key);
    EXPECT_EQ(key.batch, static_cast<uint64_t>(report.batches));
    EXPECT_TRUE(reference_->original(got) == reference_->expected(plan, report.batches));
  }
  EXPECT_NE(error_of(ask(system, s, run_atom::value, int64_t{1}, int64_t{-1})).find("run time"), std::string::npos);
}

TEST_F(SamplerActorTest, MisuseIsAnErrorReplyNamingTheProblem) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0);
  auto& system = cluster.system();
  EXPECT_NE(error_of(ask(system, s, next_atom::value)).find("next before an epoch"), std::string::npos);
  EXPECT_NE(error_of(ask(system, s, epoch_atom::value, uint64_t{1}, uint64_t{0}, int64_t{8})).find("partitions"),
            std::string::npos);
  std::vector<caf::actor> one{caf::actor_cast<caf::actor>(cluster.actor(0))};
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, one, kNoAddresses)).find("1 partition actors given for 2"),
            std::string::npos);
  std::vector<std::string> addresses{""};
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), addresses)).find("1 addresses given for 2"),
            std::string::npos);
  addresses = {"", "nowhere"};
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), addresses)).find("partition 1"),
            std::string::npos);
  addresses = {"", "127.0.0.1:4242"};  // this actor system has no networking to connect with
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), addresses)).find("no networking"),
            std::string::npos);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), kNoAddresses)), "");
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), kNoAddresses)).find("already"),
            std::string::npos);
  EXPECT_NE(error_of(ask(system, s, epoch_atom::value, uint64_t{1}, uint64_t{0}, int64_t{0})).find("batch size 0"),
            std::string::npos);
  EXPECT_NE(error_of(ask(system, s, run_atom::value, int64_t{2}, int64_t{0})).find("run before an epoch"),
            std::string::npos);

  std::vector<PartitionRef> refs = cluster.refs({true, true});
  SamplerOptions options;
  options.config = config_;
  std::vector<int64_t> foreign{cluster.book().begin(1)};
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 0, {refs[0].topology, refs[0].features}, foreign, options),
               UsageError);
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 1, {refs[0].topology, refs[0].features}, {}, options),
               UsageError);
  options.prefetch = 0;
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 0, {refs[0].topology, refs[0].features}, {}, options),
               UsageError);
}

TEST_F(SamplerActorTest, AKilledPartitionFailsTheBatchNamingIt) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 2, 5s);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors_of(cluster), kNoAddresses)), "");
  ASSERT_EQ(error_of(ask(system, s, epoch_atom::value, uint64_t{1}, uint64_t{0}, int64_t{16})), "");
  ASSERT_EQ(error_of(ask(system, s, next_atom::value)), "");
  {
    caf::scoped_actor self{system};
    self->monitor(cluster.actor(1));
    caf::anon_send_exit(cluster.actor(1), caf::exit_reason::kill);
    self->receive([](const caf::down_msg&) {},
                  caf::after(std::chrono::seconds(10)) >> [] { FAIL() << "the kill was not confirmed"; });
  }
  const auto start = std::chrono::steady_clock::now();
  std::string failure;
  for (int b = 1; b < 4 && failure.empty(); ++b) failure = error_of(ask(system, s, next_atom::value));
  EXPECT_NE(failure.find("partition 1"), std::string::npos) << failure;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "noticed only at the deadline";
  // And so does the next epoch, at once. Its error says "lost" once the down message has
  // come, or carries the failed request's reason if a request to the dead actor failed
  // first (under load either comes first); both name the partition.
  ASSERT_EQ(error_of(ask(system, s, epoch_atom::value, uint64_t{1}, uint64_t{1}, int64_t{16})), "");
  const std::string next_failure = error_of(ask(system, s, next_atom::value));
  EXPECT_NE(next_failure.find("partition 1"), std::string::npos) << next_failure;
}

// A partition actor that accepts requests and never answers them.
struct SilentState {
  std::vector<caf::typed_response_promise<Encoded>> pending;
};

partition_actor::behavior_type silent(partition_actor::stateful_pointer<SilentState> self) {
  auto hold = [self]() -> caf::result<Encoded> {
    self->state.pending.push_back(self->make_response_promise<Encoded>());
    return caf::delegated<Encoded>();
  };
  return {
      [hold](hop_atom, const Encoded&) { return hold(); },
      [hold](feature_atom, const Encoded&) { return hold(); },
      [hold](channel_atom) { return hold(); },
  };
}

TEST_F(SamplerActorTest, ASilentPartitionFailsTheBatchAtTheDeadline) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 2, 300ms);
  auto& system = cluster.system();
  partition_actor mute = system.spawn(silent);
  std::vector<caf::actor> actors = actors_of(cluster);
  actors[1] = caf::actor_cast<caf::actor>(mute);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors, kNoAddresses)), "");
  ASSERT_EQ(error_of(ask(system, s, epoch_atom::value, uint64_t{1}, uint64_t{0}, int64_t{16})), "");
  std::string failure = error_of(ask(system, s, next_atom::value));
  EXPECT_NE(failure.find("batch 0 of epoch 0: partition 1: hop request failed: no reply within 300 ms"),
            std::string::npos)
      << failure;
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
}

// Partition 1 served by another actor system over loopback: the sampler fetches its rows
// over the partition's feature channel.
TEST_F(SamplerActorTest, APartitionInAnotherProcessGivesTheReferenceBatchesOverItsChannel) {
  testing::Cluster server(tmp_ / "parts", config_, /*networking=*/true);
  auto port = server.system().middleman().publish(server.actor(1), 0, "127.0.0.1");
  ASSERT_TRUE(port) << server.system().render(port.error());
  testing::Cluster client(tmp_ / "parts", config_, /*networking=*/true);
  Samplers samplers;
  auto remote = client.system().middleman().remote_actor<partition_actor>("127.0.0.1", *port);
  ASSERT_TRUE(remote) << client.system().render(remote.error());
  sampler_actor s = spawn(client, samplers, 0, 2);
  std::vector<caf::actor> actors = actors_of(client);
  actors[1] = caf::actor_cast<caf::actor>(*remote);
  ASSERT_EQ(error_of(ask(client.system(), s, partitions_atom::value, actors, kNoAddresses)), "");
  testing::expect_reference_epoch(client.system(), s, 0, *reference_, 11, 0, 32);
}

// Rows of 384 bytes and batches of several MB: the rows travel the paths wide features
// take (a channel body in pieces, streaming stores into the batch) and still land where the
// reference has them.
TEST(SamplerActorWideRowsTest, WideRowsOverAChannelGiveTheReferenceBatches) {
  SbmOptions sbm;
  sbm.num_nodes = 20000;
  sbm.num_classes = 4;
  sbm.avg_degree = 12;
  sbm.feature_dim = 96;
  sbm.seed = 9;
  const Dataset dataset = generate_sbm(sbm);
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(dataset, options, tmp / "parts");
  SamplerConfig config;
  config.fanouts = {{10, 5}};
  testing::ReferenceBatches reference(dataset, tmp / "parts", config);

  testing::Cluster server(tmp / "parts", config, /*networking=*/true);
  auto port = server.system().middleman().publish(server.actor(1), 0, "127.0.0.1");
  ASSERT_TRUE(port) << server.system().render(port.error());
  testing::Cluster client(tmp / "parts", config, /*networking=*/true);
  auto remote = client.system().middleman().remote_actor<partition_actor>("127.0.0.1", *port);
  ASSERT_TRUE(remote) << client.system().render(remote.error());
  Samplers samplers;
  std::vector<PartitionRef> refs = client.refs({true, true});
  SamplerOptions sampler_options;
  sampler_options.config = config;
  sampler_actor s = spawn_sampler_actor(client.system(), client.book(), 0, {refs[0].topology, refs[0].features},
                                        reference.train_seeds(0), sampler_options);
  samplers.actors.push_back(s);
  std::vector<caf::actor> actors{caf::actor_cast<caf::actor>(client.actor(0)), caf::actor_cast<caf::actor>(*remote)};
  ASSERT_EQ(error_of(ask(client.system(), s, partitions_atom::value, actors, kNoAddresses)), "");
  testing::expect_reference_epoch(client.system(), s, 0, reference, 3, 0, 256);

  // The trainer's path too: a DistributedSampler with partition 1 over its channel.
  DistributedSampler sampler(client.system(), client.book(), {refs[0], PartitionRef::remote(*remote)}, config, 30s);
  const EpochPlan plan = plan_epoch(reference.train_seeds(0), 256, 3, 1);
  MiniBatch batch;  // reused, as a training loop does
  for (int64_t b = 0; b < std::min<int64_t>(plan.num_batches(), 3); ++b) {
    sampler.sample_into(plan.batch(b), plan.key(b), batch);
    ASSERT_GT(batch.x.size() * sizeof(float), size_t{1} << 20) << "not wide enough to stream";
    EXPECT_TRUE(reference.original(batch) == reference.expected(plan, b)) << "batch " << b;
  }
}

}  // namespace
}  // namespace partita
