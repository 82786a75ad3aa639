// The sampler actor, the one sampling pipeline: the reference batches whatever its prefetch,
// the split and wherever the other partitions live (in-process actors, another actor system
// over loopback); never more than `prefetch` batches ahead; failures and misuse name the
// problem, the batch and the partition; a consumer blocked on it is released when it stops.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <stdlib.h>

#include <atomic>
#include <cstring>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/sampler_actor.h"
#include "actors/sampler_client.h"
#include "base/error.h"
#include "cluster.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/readers.h"
#include "reference_batches.h"
#include "runtime/client.h"
#include "runtime/tls/caf_gateway.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;
using testing::ask;
using testing::error_of;
using testing::next_of;
using testing::start_epoch;

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

// A sampler of `part` in `cluster`'s system, reading that part directly, serving the
// reference's seeds of every split.
sampler_actor spawn_sampler(testing::Cluster& cluster, Samplers& samplers, const testing::ReferenceBatches& reference,
                            const SamplerConfig& config, int part, int prefetch = 2,
                            std::chrono::milliseconds deadline = 30s, FeatureNames names = {}) {
  SamplerOptions options;
  options.config = config;
  options.prefetch = prefetch;
  options.deadline = deadline;
  options.names = std::move(names);
  SamplerSeeds seeds{reference.seeds(part, "train"), reference.seeds(part, "val"), reference.seeds(part, "test")};
  sampler_actor s = spawn_sampler_actor(cluster.system(), cluster.book(), part, cluster.stores(part), seeds, options);
  samplers.actors.push_back(s);
  return s;
}

// The partition actors as `client` sees them with partition 1 served by `server`'s actor
// system over loopback: another node, so its rows come over its feature channel.
std::vector<caf::actor> with_partition_1_remote(testing::Cluster& server, testing::Cluster& client) {
  auto port = runtime::tls::publish(server.system(), server.actor(1), runtime::Endpoint{"127.0.0.1", 0}, false);
  if (!port) throw Error("cannot publish partition 1: " + server.system().render(port.error()));
  runtime::PublishedActor remote =
      runtime::connect_published(client.system(), runtime::Endpoint{"127.0.0.1", *port}, 30s, "cannot reach partition 1 at");
  std::vector<caf::actor> actors = client.actors();
  actors[1] = caf::actor_cast<caf::actor>(std::move(remote.actor));
  return actors;
}

class SamplerActorTest : public ::testing::Test {
 protected:
  SamplerActorTest() : dataset_(testing::sbm_graph()) {
    config_.fanouts = {{6, 4}};
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(dataset_, options, tmp_ / "parts");
    reference_ = std::make_unique<testing::ReferenceBatches>(dataset_, tmp_ / "parts", config_);
  }

  sampler_actor spawn(testing::Cluster& cluster, Samplers& samplers, int part, int prefetch = 2,
                      std::chrono::milliseconds deadline = 30s, FeatureNames names = {}) {
    return spawn_sampler(cluster, samplers, *reference_, config_, part, prefetch, deadline, std::move(names));
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
      Encoded wired = ask(cluster.system(), s, partitions_atom::value, cluster.actors(), kNoAddresses);
      ASSERT_EQ(error_of(wired), "");
      testing::expect_reference_epoch(cluster.system(), s, part, *reference_, 7, 1, 32);
      // A second epoch gives that epoch's batches.
      testing::expect_reference_epoch(cluster.system(), s, part, *reference_, 7, 2, 24);
    }
  }
}

// A trainer's own plan (link prediction): each batch samples around the seeds given (any
// partition's nodes), and none of its hops holds an excluded edge in either direction,
// though the same seeds sampled without the exclusion do draw some of them.
TEST_F(SamplerActorTest, ALinkPlanLeavesItsExcludedEdgesOutOfEveryHop) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  const std::vector<int64_t>& global = reference_->graph().global_of_original();
  EpochPlan plan;
  plan.job_seed = 3;
  plan.epoch = 1;
  plan.offsets = {0};
  plan.excluded_offsets = {0};
  std::vector<std::set<std::pair<int64_t, int64_t>>> excluded;  // per batch, both directions
  const int64_t m = dataset_.num_edges();
  for (int64_t b = 0; b < 3; ++b) {
    excluded.emplace_back();
    for (int64_t i = 0; i < 40; ++i) {
      const int64_t e = (b * 40 + i) * 37 % m;
      const int64_t src = global[dataset_.edges.src[e]], dst = global[dataset_.edges.dst[e]];
      plan.order.push_back(src);
      plan.order.push_back(dst);
      plan.excluded_src.push_back(src);
      plan.excluded_dst.push_back(dst);
      excluded.back().insert({src, dst});
      excluded.back().insert({dst, src});
    }
    plan.offsets.push_back(static_cast<int64_t>(plan.order.size()));
    plan.excluded_offsets.push_back(static_cast<int64_t>(plan.excluded_src.size()));
  }
  const auto excluded_edges_drawn = [&](const EpochPlan& p) {
    Encoded message;
    Encoder().link_plan(p, message.bytes);
    const Encoded ack = ask(system, s, link_plan_atom::value, message);
    EXPECT_EQ(error_of(ack), "");
    EXPECT_EQ(decode_sampler_ack(Span<const char>(ack.bytes)), 3);
    int64_t drawn = 0;
    for (int64_t b = 0; b < 3; ++b) {
      const SampledBatch reply = next_of(system, s);
      EXPECT_TRUE(reply.ok()) << reply.error;
      if (!reply.ok()) return int64_t{-1};
      const MiniBatch& batch = *reply.batch;
      const Span<const int64_t> seeds = p.batch(b);
      EXPECT_EQ(batch.input_ids, std::vector<int64_t>(seeds.begin(), seeds.end()));
      EXPECT_EQ(reply.key.batch, static_cast<uint64_t>(b));
      for (size_t k = 0; k < batch.row.size(); ++k) {
        drawn += excluded[b].count({batch.node_ids[batch.row[k]], batch.node_ids[batch.col[k]]});
      }
    }
    return drawn;
  };
  EpochPlan without = plan;
  without.excluded_src.clear();
  without.excluded_dst.clear();
  without.excluded_offsets.clear();
  EXPECT_GT(excluded_edges_drawn(without), 0);
  EXPECT_EQ(excluded_edges_drawn(plan), 0);
  // A node outside the graph is refused, naming it.
  plan.order[5] = cluster.book().num_nodes();
  Encoded bad;
  Encoder().link_plan(plan, bad.bytes);
  EXPECT_CONTAINS(error_of(ask(system, s, link_plan_atom::value, bad)),
                  "node " + std::to_string(cluster.book().num_nodes()) + " is outside the graph");
}

TEST_F(SamplerActorTest, EvaluationSplitsComeInTheirOwnOrderUnshuffled) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 1);
  ASSERT_EQ(error_of(ask(cluster.system(), s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  for (const char* split : {"val", "test"}) {
    SCOPED_TRACE(split);
    testing::expect_reference_epoch(cluster.system(), s, 1, *reference_, 9, ~uint64_t{0}, 40, split, false);
  }
  // And training again after them.
  testing::expect_reference_epoch(cluster.system(), s, 1, *reference_, 9, 3, 32);
}

TEST_F(SamplerActorTest, ANewEpochSupersedesTheLastOneMidWay) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 3);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  ASSERT_EQ(error_of(start_epoch(system, s, 5, 0, 16)), "");
  ASSERT_TRUE(next_of(system, s).ok());
  // Two batches of epoch 0 taken, the rest in flight or ready: the new epoch starts afresh.
  ASSERT_TRUE(next_of(system, s).ok());
  testing::expect_reference_epoch(system, s, 0, *reference_, 5, 1, 16);
}

TEST_F(SamplerActorTest, FeatureBuffersGivenBackAreFilledAgainWithTheRightRows) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 1);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  SamplerClient client(system, s, 30s, "the sampler");
  const int64_t batches = client.start_epoch("train", 4, 0, 8, true);
  ASSERT_GE(batches, 4);
  const EpochPlan plan = plan_epoch(reference_->train_seeds(0), 8, 4, 0);
  std::set<const float*> given_back;
  int reused = 0;
  for (int64_t b = 0; b < batches; ++b) {
    SampleKey key;
    MiniBatch batch = client.next(key);
    ASSERT_EQ(key.batch, static_cast<uint64_t>(b));
    reused += given_back.count(batch.x.data()) > 0;
    EXPECT_TRUE(reference_->original(batch) == reference_->expected(plan, b)) << "batch " << b;
    given_back.insert(batch.x.data());
    client.give_back(std::move(batch.x));
  }
  // With one batch in flight, every batch after the first two fills a buffer given back.
  EXPECT_GE(reused, batches - 2);
}

// Forwards a partition's requests to it, recording which batches its hop requests are for:
// what the sampler has started.
struct CountingState {
  partition_actor target;
  std::shared_ptr<std::mutex> mutex;
  std::shared_ptr<std::set<uint64_t>> batches;
};

partition_actor::behavior_type counting(partition_actor::stateful_pointer<CountingState> self, partition_actor target,
                                        std::shared_ptr<std::mutex> mutex, std::shared_ptr<std::set<uint64_t>> batches) {
  self->state = {std::move(target), std::move(mutex), std::move(batches)};
  return {
      [self](hop_atom, Encoded& request) {
        {
          std::lock_guard<std::mutex> lock(*self->state.mutex);
          self->state.batches->insert(decode_hop_request(Span<const char>(request.bytes)).key.batch);
        }
        return self->delegate(self->state.target, hop_atom::value, std::move(request));
      },
      [self](feature_atom, Encoded& request) {
        return self->delegate(self->state.target, feature_atom::value, std::move(request));
      },
      [self](channel_atom) { return self->delegate(self->state.target, channel_atom::value); },
  };
}

TEST_F(SamplerActorTest, NeverSamplesMoreThanPrefetchAheadOfTheConsumer) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  auto& system = cluster.system();
  auto mutex = std::make_shared<std::mutex>();
  auto batches = std::make_shared<std::set<uint64_t>>();
  partition_actor counter = system.spawn(counting, cluster.actor(1), mutex, batches);
  std::vector<caf::actor> actors = cluster.actors();
  actors[1] = caf::actor_cast<caf::actor>(counter);
  constexpr int kPrefetch = 2;
  sampler_actor s = spawn(cluster, samplers, 0, kPrefetch);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors, kNoAddresses)), "");
  Encoded started = start_epoch(system, s, 3, 0, 8);
  ASSERT_EQ(error_of(started), "");
  const int64_t num_batches = decode_sampler_ack(Span<const char>(started.bytes));
  ASSERT_GE(num_batches, 6);
  const auto highest_started = [&] {
    std::lock_guard<std::mutex> lock(*mutex);
    return batches->empty() ? int64_t{-1} : static_cast<int64_t>(*batches->rbegin());
  };
  // A slow consumer: however long it dawdles, the sampler stays within prefetch of it.
  for (int64_t taken = 0; taken < 4; ++taken) {
    std::this_thread::sleep_for(150ms);
    EXPECT_LT(highest_started(), taken + kPrefetch) << "after " << taken << " batches taken";
    ASSERT_TRUE(next_of(system, s).ok());
  }
  EXPECT_GE(highest_started(), 3);  // it did sample ahead, through the counter
  caf::anon_send_exit(counter, caf::exit_reason::user_shutdown);
}

TEST_F(SamplerActorTest, MisuseIsAnErrorReplyNamingTheProblem) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0);
  auto& system = cluster.system();
  EXPECT_NE(next_of(system, s).error.find("next before an epoch"), std::string::npos);
  EXPECT_NE(error_of(start_epoch(system, s, 1, 0, 8)).find("partitions"), std::string::npos);
  std::vector<caf::actor> one{caf::actor_cast<caf::actor>(cluster.actor(0))};
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, one, kNoAddresses)).find("1 partition actors given for 2"),
            std::string::npos);
  std::vector<std::string> addresses{""};
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, cluster.actors(), addresses)).find("1 addresses given for 2"),
            std::string::npos);
  addresses = {"", "nowhere"};
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, cluster.actors(), addresses)).find("partition 1"),
            std::string::npos);
  addresses = {"", "127.0.0.1:4242"};  // this actor system has no networking to connect with
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, cluster.actors(), addresses)).find("no networking"),
            std::string::npos);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  EXPECT_NE(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)).find("already"),
            std::string::npos);
  EXPECT_NE(error_of(start_epoch(system, s, 1, 0, 0)).find("batch size 0"), std::string::npos);
  EXPECT_NE(error_of(start_epoch(system, s, 1, 0, 8, "training")).find("no split 'training'"), std::string::npos);

  SamplerOptions options;
  options.config = config_;
  SamplerSeeds foreign{{cluster.book().begin(1)}, {}, {}};
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 0, cluster.stores(0), foreign, options), UsageError);
  SamplerSeeds foreign_test{{}, {}, {cluster.book().begin(1)}};
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 0, cluster.stores(0), foreign_test, options), UsageError);
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 1, cluster.stores(0), {}, options), UsageError);
  options.prefetch = 0;
  EXPECT_THROW(spawn_sampler_actor(system, cluster.book(), 0, cluster.stores(0), {}, options), UsageError);
}

TEST_F(SamplerActorTest, AKilledPartitionFailsTheBatchNamingIt) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 2, 5s);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  ASSERT_EQ(error_of(start_epoch(system, s, 1, 0, 16)), "");
  ASSERT_TRUE(next_of(system, s).ok());
  {
    caf::scoped_actor self{system};
    self->monitor(cluster.actor(1));
    caf::anon_send_exit(cluster.actor(1), caf::exit_reason::kill);
    self->receive([](const caf::down_msg&) {},
                  caf::after(std::chrono::seconds(10)) >> [] { FAIL() << "the kill was not confirmed"; });
  }
  std::string failure;
  for (int b = 1; b < 4 && failure.empty(); ++b) failure = next_of(system, s).error;
  EXPECT_NE(failure.find("partition 1"), std::string::npos) << failure;
  EXPECT_NE(failure.find("of epoch 0"), std::string::npos) << failure;
  // Noticed from the loss itself, not by a request running out its deadline.
  EXPECT_EQ(failure.find("no reply within"), std::string::npos) << failure;
  // And so does the next epoch, at once. Its error says "lost" once the down message has
  // come, or carries the failed request's reason if a request to the dead actor failed
  // first (under load either comes first); both name the partition.
  ASSERT_EQ(error_of(start_epoch(system, s, 1, 1, 16)), "");
  const std::string next_failure = next_of(system, s).error;
  EXPECT_NE(next_failure.find("partition 1"), std::string::npos) << next_failure;
}

TEST_F(SamplerActorTest, AnErrorReplyFailsTheBatchNamingThePartitionAndTheRemoteError) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  FeatureNames names;
  names.x = "no_such_x";
  // Partition 1's store lacks the attribute: its actor answers with an error reply. (The
  // sampler's own partition 0 is checked when the batch gathers it: name it too.)
  sampler_actor s = spawn(cluster, samplers, 0, 2, 30s, names);
  auto& system = cluster.system();
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
  ASSERT_EQ(error_of(start_epoch(system, s, 1, 0, 16)), "");
  const std::string failure = next_of(system, s).error;
  EXPECT_NE(failure.find("batch 0 of epoch 0"), std::string::npos) << failure;
  EXPECT_NE(failure.find("partition "), std::string::npos) << failure;
  EXPECT_NE(failure.find("no_such_x"), std::string::npos) << failure;
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
  std::vector<caf::actor> actors = cluster.actors();
  actors[1] = caf::actor_cast<caf::actor>(mute);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors, kNoAddresses)), "");
  ASSERT_EQ(error_of(start_epoch(system, s, 1, 0, 16)), "");
  std::string failure = next_of(system, s).error;
  EXPECT_NE(failure.find("batch 0 of epoch 0: partition 1: hop request failed: no reply within 300 ms"),
            std::string::npos)
      << failure;
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
}

TEST_F(SamplerActorTest, AConsumerWaitsNoLongerThanItsDeadline) {
  testing::Cluster cluster(tmp_ / "parts", config_);
  Samplers samplers;
  sampler_actor s = spawn(cluster, samplers, 0, 2, 60s);  // the sampler itself would wait a minute
  auto& system = cluster.system();
  partition_actor mute = system.spawn(silent);
  std::vector<caf::actor> actors = cluster.actors();
  actors[1] = caf::actor_cast<caf::actor>(mute);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors, kNoAddresses)), "");
  SamplerClient client(system, s, 300ms, "trainer 0's sampler");
  EXPECT_GT(client.start_epoch("train", 1, 0, 16, true), 1);
  try {
    client.next();
    FAIL() << "a batch that never comes was waited for";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trainer 0's sampler: no answer within 300 ms"), std::string::npos)
        << e.what();
  }
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
}

TEST_F(SamplerActorTest, StoppingMidEpochReleasesTheConsumerAtOnce) {
  auto cluster = std::make_unique<testing::Cluster>(tmp_ / "parts", config_);
  auto& system = cluster->system();
  Samplers samplers;
  sampler_actor s = spawn(*cluster, samplers, 0, 3, 60s);
  partition_actor mute = system.spawn(silent);  // so that batches stay in flight
  std::vector<caf::actor> actors = cluster->actors();
  actors[1] = caf::actor_cast<caf::actor>(mute);
  ASSERT_EQ(error_of(ask(system, s, partitions_atom::value, actors, kNoAddresses)), "");
  std::atomic<bool> released{false};
  std::string failure;
  {
    // A client is an actor of the system: it must be gone before the system ends.
    SamplerClient client(system, s, 60s, "trainer 0's sampler");
    client.start_epoch("train", 1, 0, 16, true);
    std::thread consumer([&] {
      try {
        client.next();
      } catch (const Error& e) {
        failure = e.what();
      }
      released = true;
    });
    std::this_thread::sleep_for(100ms);
    caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
    consumer.join();
  }
  EXPECT_TRUE(released);
  // Released by the stop itself, not by its own 60 s deadline ("no answer within").
  EXPECT_NE(failure.find("trainer 0's sampler: sampler of partition 0: stopped"), std::string::npos) << failure;
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
  cluster.reset();  // the actor system ends: every actor and thread stopped
}

// Partition 1 served by another actor system over loopback: the sampler fetches its rows
// over the partition's feature channel.
TEST_F(SamplerActorTest, APartitionInAnotherProcessGivesTheReferenceBatchesOverItsChannel) {
  testing::Cluster server(tmp_ / "parts", config_, /*networking=*/true);
  testing::Cluster client(tmp_ / "parts", config_, /*networking=*/true);
  Samplers samplers;
  const std::vector<caf::actor> actors = with_partition_1_remote(server, client);
  sampler_actor s = spawn(client, samplers, 0, 2);
  ASSERT_EQ(error_of(ask(client.system(), s, partitions_atom::value, actors, kNoAddresses)), "");
  testing::expect_reference_epoch(client.system(), s, 0, *reference_, 11, 0, 32);
}

// Partition 1 over its channel, with the node's cache of its rows: for each policy, the
// same bytes in every batch as a sampler without cache over three epochs (the later ones
// served largely from the cache), fewer rows requested, and the cache within its budget.
TEST_F(SamplerActorTest, ACacheOfRemoteRowsChangesNoBatchAndOnlyMissesCross) {
  testing::Cluster server(tmp_ / "parts", config_, /*networking=*/true);
  testing::Cluster client(tmp_ / "parts", config_, /*networking=*/true);
  const std::vector<caf::actor> actors = with_partition_1_remote(server, client);
  const PartitionStores stores = client.stores(0);
  const size_t x_bytes = stores.features->get("node", "x")->row_bytes();
  // A third of partition 1's rows: SIEVE has to evict.
  const uint64_t budget = RowCache::budget_for(static_cast<size_t>(client.book().size(1) / 3), x_bytes + 8);
  Samplers samplers;
  const SamplerSeeds seeds{reference_->seeds(0, "train"), reference_->seeds(0, "val"), reference_->seeds(0, "test")};
  const auto spawn_with = [&](std::shared_ptr<RowCache> cache, std::shared_ptr<RemoteRowCounts> counts) {
    SamplerOptions options;
    options.config = config_;
    options.cache = std::move(cache);
    options.remote_counts = std::move(counts);
    sampler_actor s = spawn_sampler_actor(client.system(), client.book(), 0, stores, seeds, options);
    samplers.actors.push_back(s);
    EXPECT_EQ(error_of(ask(client.system(), s, partitions_atom::value, actors, kNoAddresses)), "");
    return s;
  };
  const auto epochs = [&](sampler_actor s) {
    std::vector<MiniBatch> batches;
    SamplerClient consumer(client.system(), s, 30s, "sampler");
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      const int64_t n = consumer.start_epoch("train", 7, epoch, 8, true);
      for (int64_t b = 0; b < n; ++b) batches.push_back(consumer.next());
    }
    return batches;
  };
  auto plain_counts = std::make_shared<RemoteRowCounts>();
  const std::vector<MiniBatch> plain = epochs(spawn_with(nullptr, plain_counts));
  // More batches than the frequency policy counts before it caches.
  ASSERT_GT(plain.size(), static_cast<size_t>(RowCache::kCountedLookups) + 8);
  for (CachePolicy policy : {CachePolicy::kDegree, CachePolicy::kFrequency, CachePolicy::kSieve}) {
    SCOPED_TRACE(cache_policy_name(policy));
    auto cache = make_remote_row_cache(policy, budget, {x_bytes, 8}, *stores.topology);
    auto counts = std::make_shared<RemoteRowCounts>();
    const std::vector<MiniBatch> cached = epochs(spawn_with(cache, counts));
    ASSERT_EQ(cached.size(), plain.size());
    for (size_t b = 0; b < plain.size(); ++b) {
      EXPECT_EQ(cached[b].node_ids, plain[b].node_ids);
      ASSERT_EQ(cached[b].x.size(), plain[b].x.size()) << "batch " << b;
      EXPECT_EQ(std::memcmp(cached[b].x.data(), plain[b].x.data(), plain[b].x.size() * sizeof(float)), 0)
          << "batch " << b << ": features differ";
      EXPECT_EQ(cached[b].y, plain[b].y) << "batch " << b;
    }
    const RowCacheCounts c = cache->counts();
    EXPECT_GT(c.hits, 0u);
    EXPECT_EQ(c.lookups, plain_counts->rows.load()) << "every remote row is looked up";
    EXPECT_EQ(counts->rows.load(), c.lookups - c.hits) << "only the misses are requested";
    EXPECT_LT(counts->bytes.load(), plain_counts->bytes.load());
    EXPECT_LE(cache->memory_bytes(), budget);
    if (policy == CachePolicy::kSieve) {
      EXPECT_GT(c.evicted, 0u);
    }
  }
  // A cache whose rows are not the batch's is refused when the sampler is spawned.
  SamplerOptions wrong;
  wrong.config = config_;
  wrong.cache = std::make_shared<RowCache>(CachePolicy::kSieve, budget, std::vector<size_t>{x_bytes});
  EXPECT_THROW(spawn_sampler_actor(client.system(), client.book(), 0, stores, seeds, wrong), UsageError);
}

// Features on disk (`features: {storage: disk}`): the same bytes in every batch as with
// features in memory, over two epochs, whether partition 1's rows are read in this process
// (a sampler of partition 0 with both partitions local) or served from disk by partition 1
// in another actor system over its channel; and once more with io_uring off (pread).
TEST_F(SamplerActorTest, FeaturesOnDiskGiveTheBatchesOfFeaturesInMemory) {
  const SamplerSeeds seeds{reference_->seeds(0, "train"), reference_->seeds(0, "val"), reference_->seeds(0, "test")};
  const auto batches_of = [&](testing::Cluster& local, const std::vector<caf::actor>& actors) {
    SamplerOptions options;
    options.config = config_;
    options.names = {"x", "y"};
    Samplers samplers;
    sampler_actor s = spawn_sampler_actor(local.system(), local.book(), 0, local.stores(0), seeds, options);
    samplers.actors.push_back(s);
    EXPECT_EQ(error_of(ask(local.system(), s, partitions_atom::value, actors, kNoAddresses)), "");
    std::vector<MiniBatch> batches;
    SamplerClient consumer(local.system(), s, 30s, "sampler");
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      const int64_t n = consumer.start_epoch("train", 5, epoch, 16, true);
      for (int64_t b = 0; b < n; ++b) batches.push_back(consumer.next());
    }
    return batches;
  };
  const auto expect_same = [](const std::vector<MiniBatch>& got, const std::vector<MiniBatch>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t b = 0; b < want.size(); ++b) {
      EXPECT_EQ(got[b].node_ids, want[b].node_ids) << "batch " << b;
      ASSERT_EQ(got[b].x.size(), want[b].x.size()) << "batch " << b;
      ASSERT_FALSE(want[b].x.empty());
      EXPECT_EQ(std::memcmp(got[b].x.data(), want[b].x.data(), want[b].x.size() * sizeof(float)), 0)
          << "batch " << b << ": features differ";
      EXPECT_EQ(got[b].y, want[b].y) << "batch " << b;
    }
  };
  testing::Cluster memory(tmp_ / "parts", config_, false, FeatureStorage::kMemory);
  const std::vector<MiniBatch> want = batches_of(memory, memory.actors());
  ASSERT_GT(want.size(), 4u);
  {
    SCOPED_TRACE("both partitions on disk, in this process");
    testing::Cluster disk(tmp_ / "parts", config_, false, FeatureStorage::kDisk);
    ASSERT_NE(disk.stores(1).features->disk_rows("node", "x"), nullptr);
    expect_same(batches_of(disk, disk.actors()), want);
  }
  {
    SCOPED_TRACE("partition 1 on disk in another actor system, over its channel");
    testing::Cluster server(tmp_ / "parts", config_, true, FeatureStorage::kDisk);
    testing::Cluster client(tmp_ / "parts", config_, true, FeatureStorage::kDisk);
    expect_same(batches_of(client, with_partition_1_remote(server, client)), want);
  }
  {
    SCOPED_TRACE("on disk, read with pread");
    ::setenv("PARTITA_NO_IO_URING", "1", 1);
    testing::Cluster disk(tmp_ / "parts", config_, false, FeatureStorage::kDisk);
    ::unsetenv("PARTITA_NO_IO_URING");
    EXPECT_EQ(disk.stores(0).features->disk_rows("node", "x")->backend(), DiskBackend::kPread);
    expect_same(batches_of(disk, disk.actors()), want);
  }
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
  testing::Cluster client(tmp / "parts", config, /*networking=*/true);
  const std::vector<caf::actor> actors = with_partition_1_remote(server, client);
  Samplers samplers;
  sampler_actor s = spawn_sampler(client, samplers, reference, config, 0);
  ASSERT_EQ(error_of(ask(client.system(), s, partitions_atom::value, actors, kNoAddresses)), "");
  testing::expect_reference_epoch(client.system(), s, 0, reference, 3, 0, 256);
  // Batches big enough to take the streaming paths.
  ASSERT_EQ(error_of(start_epoch(client.system(), s, 3, 1, 256)), "");
  SampledBatch first = next_of(client.system(), s);
  ASSERT_TRUE(first.ok()) << first.error;
  EXPECT_GT(first.batch->x.size() * sizeof(float), size_t{1} << 20) << "not wide enough to stream";
}

// Every partition's sampler gives the reference epoch, for 2 and 4 partitions of Cora and
// of the synthetic graph, three hops and disjoint trees included.
struct Equivalence {
  std::string name;
  int parts;
  SamplerConfig config;
  int64_t batch_size;
};

void expect_every_sampler_gives_the_reference(const Dataset& dataset, const Equivalence& e) {
  SCOPED_TRACE(e.name);
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = e.parts;
  partition_dataset(dataset, options, tmp / "parts");
  testing::ReferenceBatches reference(dataset, tmp / "parts", e.config);
  testing::Cluster cluster(tmp / "parts", e.config);
  Samplers samplers;
  for (int part = 0; part < e.parts; ++part) {
    SCOPED_TRACE("the sampler of partition " + std::to_string(part));
    sampler_actor s = spawn_sampler(cluster, samplers, reference, e.config, part);
    ASSERT_EQ(error_of(ask(cluster.system(), s, partitions_atom::value, cluster.actors(), kNoAddresses)), "");
    testing::expect_reference_epoch(cluster.system(), s, part, reference, 17, 3, e.batch_size);
  }
}

SamplerConfig fanouts(std::vector<int> f, bool disjoint = false) {
  SamplerConfig c;
  c.fanouts = {std::move(f)};
  c.disjoint = disjoint;
  return c;
}

TEST(SamplerActorEquivalenceTest, CoraIn2And4Partitions) {
  const Dataset cora = read_linqs(testing::dataset_path("cora"));
  for (int parts : {2, 4}) {
    expect_every_sampler_gives_the_reference(cora, {"cora " + std::to_string(parts), parts, fanouts({10, 10}), 16});
  }
}

TEST(SamplerActorEquivalenceTest, SyntheticGraphThreeHopsAndDisjointTreesIn4Partitions) {
  const Dataset d = testing::sbm_graph();
  expect_every_sampler_gives_the_reference(d, {"3 hops", 4, fanouts({10, 5, 3}), 16});
  expect_every_sampler_gives_the_reference(d, {"disjoint", 4, fanouts({4, 4}, true), 16});
}

}  // namespace
}  // namespace partita
