// Partition and sampler actors spawned on two `partita daemon` processes over loopback, as a
// job places them: the same batches as the single-partition reference (every batch crossing
// to this process as Cap'n Proto), both samplers at once, and a killed daemon named within
// the deadline.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <chrono>
#include <thread>

#include "actors/actor_types.h"
#include "actors/sampler_client.h"
#include "base/random.h"
#include "base/error.h"
#include "cluster.h"
#include "connected_daemons.h"
#include "graph/batch_features.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "reference_batches.h"
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
    nodes_ = testing::start_connected_daemons(client_, 2);
    for (int p = 0; p < 2; ++p) {
      runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", std::to_string(p)}, {"fanouts", "10,5"}};
      partitions_.push_back(nodes_.connections[p].spawn("partition", settings, 30s));
    }
  }

  testing::TempDir tmp_;
  Dataset dataset_;
  SamplerConfig config_;
  runtime::ActorSystem client_{testing::actor_test_options(/*networking=*/true)};
  testing::ConnectedDaemons nodes_;
  std::vector<caf::actor> partitions_;
};

// Each daemon runs the sampler of the trainer placed with its partition: its own partition
// by direct call, the other through the other daemon.
TEST_F(TwoDaemonsTest, SamplerActorsOnBothDaemonsGiveTheReferenceBatches) {
  std::vector<sampler_actor> samplers;
  for (int p = 0; p < 2; ++p) {
    runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", std::to_string(p)}, {"fanouts", "10,5"},
                               {"prefetch", "2"}, {"deadline_ms", "20000"}};
    samplers.push_back(caf::actor_cast<sampler_actor>(nodes_.connections[p].spawn("sampler", settings, 30s)));
    Encoded wired = testing::ask(client_, samplers.back(), partitions_atom::value, partitions_, nodes_.addresses);
    ASSERT_EQ(testing::error_of(wired), "");
  }
  testing::ReferenceBatches reference(dataset_, tmp_ / "parts", config_);
  for (int p = 0; p < 2; ++p) {
    SCOPED_TRACE("the sampler of partition " + std::to_string(p));
    testing::expect_reference_epoch(client_, samplers[p], p, reference, 5, 0, 32);
    testing::expect_reference_epoch(client_, samplers[p], p, reference, 5, 0, 48, "test", false);
  }
  // Both at once, as two trainers take them: every batch of the epoch, each on its thread
  // (compared afterwards: the reference sampler is not thread-safe).
  std::vector<std::string> failures(2);
  std::vector<std::vector<MiniBatch>> got(2);
  std::vector<std::thread> consumers;
  for (int p = 0; p < 2; ++p) {
    consumers.emplace_back([&, p] {
      try {
        SamplerClient client(client_, samplers[p], 60s, "the sampler of partition " + std::to_string(p));
        const int64_t batches = client.start_epoch("train", 5, 1, 16, true);
        for (int64_t b = 0; b < batches; ++b) got[p].push_back(client.next());
      } catch (const Error& e) {
        failures[p] = e.what();
      }
    });
  }
  for (auto& c : consumers) c.join();
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(failures[p], "");
    const EpochPlan plan = plan_epoch(reference.train_seeds(p), 16, 5, 1);
    ASSERT_EQ(static_cast<int64_t>(got[p].size()), plan.num_batches());
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      EXPECT_TRUE(reference.original(got[p][b]) == reference.expected(plan, b)) << "partition " << p << ", batch " << b;
    }
  }
}

// The job's `sampling.feature_cache_mb`: each daemon's sampler keeps a cache of the other
// partition's rows; over two epochs (the second served from it) the batches are still the
// reference's, for each policy.
TEST_F(TwoDaemonsTest, SamplersWithACacheOfRemoteRowsGiveTheReferenceBatches) {
  testing::ReferenceBatches reference(dataset_, tmp_ / "parts", config_);
  for (const char* policy : {"degree", "frequency", "sieve"}) {
    SCOPED_TRACE(policy);
    std::vector<sampler_actor> samplers;
    for (int p = 0; p < 2; ++p) {
      runtime::Settings settings{{"dir", tmp_ / "parts"},     {"part", std::to_string(p)},
                                 {"fanouts", "10,5"},         {"deadline_ms", "20000"},
                                 {"feature_cache_mb", "1"},   {"feature_cache_policy", policy},
                                 {"features", "memory"}};
      samplers.push_back(caf::actor_cast<sampler_actor>(nodes_.connections[p].spawn("sampler", settings, 30s)));
      ASSERT_EQ(testing::error_of(testing::ask(client_, samplers.back(), partitions_atom::value, partitions_, nodes_.addresses)),
                "");
    }
    for (int p = 0; p < 2; ++p) {
      SCOPED_TRACE("the sampler of partition " + std::to_string(p));
      testing::expect_reference_epoch(client_, samplers[p], p, reference, 5, 0, 32);
      testing::expect_reference_epoch(client_, samplers[p], p, reference, 5, 1, 32);
    }
    for (const auto& s : samplers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  }
}

TEST_F(TwoDaemonsTest, AKilledDaemonFailsTheSamplerActorsBatchNamingItsPartition) {
  runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", "0"}, {"fanouts", "10,5"}, {"deadline_ms", "5000"}};
  auto sampler = caf::actor_cast<sampler_actor>(nodes_.connections[0].spawn("sampler", settings, 30s));
  ASSERT_EQ(testing::error_of(testing::ask(client_, sampler, partitions_atom::value, partitions_, nodes_.addresses)), "");
  ASSERT_EQ(testing::error_of(testing::start_epoch(client_, sampler, 5, 0, 16)), "");
  ASSERT_TRUE(testing::next_of(client_, sampler).ok());
  nodes_.daemons[1].process->kill();
  nodes_.daemons[1].process->wait(10);
  std::string failure;
  for (int b = 1; b < 6 && failure.empty(); ++b) failure = testing::next_of(client_, sampler).error;
  EXPECT_NE(failure.find("partition 1"), std::string::npos) << failure;
  // Noticed from the loss itself, not by a request running out its deadline.
  EXPECT_EQ(failure.find("no reply within"), std::string::npos) << failure;
}

TEST_F(TwoDaemonsTest, BadSettingsAreAnErrorNamingTheSetting) {
  runtime::Settings missing{{"dir", tmp_ / "parts"}, {"fanouts", "10,5"}};
  try {
    nodes_.connections[0].spawn("partition", missing, 30s);
    FAIL() << "spawned without a part";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("part"), std::string::npos) << e.what();
  }
  runtime::Settings bad_fanouts{{"dir", tmp_ / "parts"}, {"part", "0"}, {"fanouts", "10,x"}};
  EXPECT_THROW(nodes_.connections[0].spawn("partition", bad_fanouts, 30s), Error);
  runtime::Settings no_folder{{"dir", tmp_ / "nope"}, {"part", "0"}, {"fanouts", "10"}};
  EXPECT_THROW(nodes_.connections[0].spawn("partition", no_folder, 30s), Error);
  for (const char* part : {"0abc", "-1", " 0", ""}) {
    runtime::Settings bad_part{{"dir", tmp_ / "parts"}, {"part", part}, {"fanouts", "10"}};
    try {
      nodes_.connections[0].spawn("sampler", bad_part, 30s);
      FAIL() << "spawned a sampler of part '" << part << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("setting 'part'"), std::string::npos) << e.what();
    }
  }
  runtime::Settings bad_share{{"dir", tmp_ / "parts"}, {"part", "0"}, {"fanouts", "10"}, {"share", "2"}, {"shares", "2"}};
  try {
    nodes_.connections[0].spawn("sampler", bad_share, 30s);
    FAIL() << "spawned a sampler of share 2 of 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("setting 'share'"), std::string::npos) << e.what();
  }
  // The cache and storage settings, each bad value named.
  const std::vector<std::pair<runtime::Settings, std::string>> bad_cache{
      {{{"feature_cache_mb", "-1"}}, "setting 'feature_cache_mb'"},
      {{{"feature_cache_mb", "lots"}}, "setting 'feature_cache_mb'"},
      {{{"feature_cache_mb", "2"}, {"feature_cache_policy", "lru"}}, "setting 'feature_cache_policy': 'lru'"},
      {{{"features", "ram"}}, "setting 'features': 'ram'"}};
  for (const auto& [extra, named] : bad_cache) {
    runtime::Settings settings{{"dir", tmp_ / "parts"}, {"part", "0"}, {"fanouts", "10"}};
    settings.insert(extra.begin(), extra.end());
    try {
      nodes_.connections[0].spawn("sampler", settings, 30s);
      FAIL() << "spawned with " << named;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(nodes_.connections[0].ping(10s)) << "the daemon must keep serving";
}

// Temporal sampling as a job asks for it (settings temporal, temporal_strategy, disjoint):
// on every batch of an epoch, no sampled edge is later than the time of the seed whose
// tree it is in (edge times; with node times, no sampled neighbour is later), with the
// partition and sampler actors in this process and on two daemons. Without the setting,
// the same epoch does sample later edges: the check can fail.
TEST(TemporalSamplingTest, NoBatchHoldsAnEdgeLaterThanItsSeedInOneProcessOrOnDaemons) {
  testing::TempDir tmp;
  Dataset dataset = testing::sbm_graph();
  for (int64_t v = 0; v < dataset.num_nodes; ++v) dataset.node_time.push_back(static_cast<int64_t>(mix64(v) % 1000));
  for (int64_t e = 0; e < dataset.num_edges(); ++e) {
    dataset.edge_time.push_back(static_cast<int64_t>(mix64(e, 7) % 1000));
  }
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(dataset, options, tmp / "parts");
  const testing::PartitionedGraph graph(tmp / "parts");

  runtime::ActorSystem client{testing::actor_test_options(/*networking=*/true)};
  testing::ConnectedDaemons nodes = testing::start_connected_daemons(client, 2);
  runtime::ActorTypeRegistry local;
  register_actor_types(local);
  // Later edges (or neighbours) drawn over one training epoch of each partition's sampler;
  // -1 when a batch failed.
  const auto later_than_seed = [&](const std::string& temporal, const std::string& strategy, bool on_daemons) {
    runtime::Settings settings{{"dir", tmp / "parts"},           {"fanouts", "10,5"},
                               {"disjoint", "true"},             {"temporal", temporal},
                               {"temporal_strategy", strategy},  {"deadline_ms", "20000"}};
    if (temporal == "none") settings["disjoint"] = "false";
    std::vector<caf::actor> partitions, spawned;
    std::vector<sampler_actor> samplers;
    const auto spawn = [&](int p, const std::string& type) {
      runtime::Settings s = settings;
      s["part"] = std::to_string(p);
      caf::actor a = on_daemons ? nodes.connections[p].spawn(type, s, 30s) : (*local.find(type))(client, s);
      spawned.push_back(a);
      return a;
    };
    for (int p = 0; p < 2; ++p) partitions.push_back(spawn(p, "partition"));
    for (int p = 0; p < 2; ++p) samplers.push_back(caf::actor_cast<sampler_actor>(spawn(p, "sampler")));
    int64_t later = 0, edges = 0;
    for (int p = 0; p < 2 && later >= 0; ++p) {
      const Encoded wired =
          testing::ask(client, samplers[p], partitions_atom::value, partitions,
                       on_daemons ? nodes.addresses : std::vector<std::string>{});
      EXPECT_EQ(testing::error_of(wired), "");
      SamplerClient consumer(client, samplers[p], 60s, "the sampler of partition " + std::to_string(p));
      const int64_t batches = consumer.start_epoch("train", 5, 1, 32, true);
      for (int64_t b = 0; b < batches; ++b) {
        const MiniBatch batch = consumer.next();
        for (size_t k = 0; k < batch.row.size(); ++k) {
          const int64_t col = batch.col[k];
          // Disjoint: the root of col's tree; otherwise only the seeds' own edges are read.
          if (temporal == "none" && col >= batch.batch_size) continue;
          const int64_t root = temporal == "none" ? batch.node_ids[col] : batch.input_ids[batch.batch[col]];
          const int64_t seed = graph.original_of_global()[root];
          const int64_t bound = dataset.node_time[seed];
          const int64_t time = temporal == "node"
                                   ? dataset.node_time[graph.original_of_global()[batch.node_ids[batch.row[k]]]]
                                   : dataset.edge_time[graph.original_edge(batch.edge_ids[k])];
          later += time > bound;
          ++edges;
        }
      }
    }
    for (const auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    EXPECT_GT(edges, 1000);
    return later;
  };
  for (bool on_daemons : {false, true}) {
    SCOPED_TRACE(on_daemons ? "on daemons" : "in one process");
    EXPECT_EQ(later_than_seed("edge", "uniform", on_daemons), 0);
    EXPECT_EQ(later_than_seed("node", "last", on_daemons), 0);
  }
  // Without the setting (and not disjoint): the seeds' own edges include later ones.
  EXPECT_GT(later_than_seed("none", "uniform", false), 0);
}

// A spawn request's folder must be absolute and climb nowhere, and whatever is not a
// partition folder gets one error: it does not tell a remote caller which files exist.
TEST_F(TwoDaemonsTest, FoldersThatAreNotPartitionFoldersGetOneErrorThatRevealsNothing) {
  const std::string parts = tmp_ / "parts";
  const auto error_of = [&](const std::string& type, const std::string& dir) -> std::string {
    runtime::Settings settings{{"dir", dir}, {"part", "0"}, {"fanouts", "10"}};
    try {
      nodes_.connections[0].spawn(type, settings, 30s);
    } catch (const Error& e) {
      return e.what();
    }
    return "spawned";
  };
  for (const std::string type : {"partition", "sampler"}) {
    EXPECT_CONTAINS(error_of(type, "parts"), "setting 'dir': 'parts' is not an absolute path");
    EXPECT_CONTAINS(error_of(type, parts + "/../parts"), "has a '..' component");
    EXPECT_CONTAINS(error_of(type, parts + "/./"), "has a '.' component");
    EXPECT_CONTAINS(error_of(type, "/" + parts), "has an empty component");
    // Missing, a file, a folder without META.json, a folder without read permission: the
    // same words, the path aside.
    const std::string missing = error_of(type, "/no/such/folder");
    EXPECT_CONTAINS(missing, "setting 'dir': '/no/such/folder' is not a partition folder on this node");
    for (const std::string& existing : {std::string("/etc/passwd"), std::string("/etc"), std::string("/root"),
                                        parts + "/part-0"}) {
      std::string error = error_of(type, existing);
      const size_t at = error.find(existing);
      ASSERT_NE(at, std::string::npos) << error;
      error.replace(at, existing.size(), "/no/such/folder");
      EXPECT_EQ(error, missing);
    }
  }
  EXPECT_EQ(error_of("partition", parts + "/"), "spawned");  // a trailing slash is fine
  EXPECT_NO_THROW(nodes_.connections[0].ping(10s)) << "the daemon must keep serving";
}

}  // namespace
}  // namespace partita
