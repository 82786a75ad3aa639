// The distributed sampler: the same batches as the single-partition reference, whichever
// partitions are actors and which are co-located; failures name the partition.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "actors/distributed_sampler.h"
#include "base/error.h"
#include "cluster.h"
#include "graph/batch_features.h"
#include "partitioner/partition.h"
#include "partitioner/readers.h"
#include "partitioned_graph.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;
using testing::Cluster;
using testing::TempDir;

using testing::OriginalBatch;
using testing::to_original;

SamplerConfig homogeneous(std::vector<int> fanouts) {
  SamplerConfig c;
  c.fanouts = {std::move(fanouts)};
  return c;
}

// The keys and seed slices of the batches compared: several, so that a sampler that gets
// one batch right by accident is still caught.
struct Batch {
  SampleKey key;
  std::vector<int64_t> seeds;  // original ids
};

std::vector<Batch> batches_of(const std::vector<int64_t>& seeds, size_t batch_size) {
  std::vector<Batch> batches;
  for (size_t begin = 0, b = 0; begin < seeds.size() && b < 3; begin += batch_size, ++b) {
    size_t end = std::min(seeds.size(), begin + batch_size);
    batches.push_back({{17, 3, b}, std::vector<int64_t>(seeds.begin() + begin, seeds.begin() + end)});
  }
  return batches;
}

std::vector<OriginalBatch> reference(const Dataset& d, const SamplerConfig& config, const std::vector<Batch>& batches) {
  Topology t = topology_from_dataset(d);
  FeatureStore store = features_from_dataset(d);
  NeighborSampler sampler(t, config);
  PartitionBook whole({0, d.num_nodes});
  std::vector<OriginalBatch> out;
  for (const Batch& b : batches) {
    MiniBatch batch = sampler.sample(b.seeds, b.key);
    attach_features(batch, whole, {&store});
    out.push_back(to_original(batch, [](int64_t v) { return v; }, [&](int64_t e) { return t.original_edge_id(e); }));
  }
  return out;
}

// Partitions `d` into `parts` and samples every batch with partitions [0, local.size())
// co-located where local[p] and the rest behind actors.
void expect_same_batches(const Dataset& d, const SamplerConfig& config, const std::vector<Batch>& batches,
                         int parts, const std::vector<bool>& local) {
  const std::vector<OriginalBatch> expected = reference(d, config, batches);
  ASSERT_GT(expected[0].feature_dim, 0);
  ASSERT_EQ(expected[0].x.size(), expected[0].nodes.size() * static_cast<size_t>(expected[0].feature_dim));
  ASSERT_EQ(expected[0].y.size(), expected[0].nodes.size());

  TempDir tmp;
  PartitionOptions options;
  options.num_parts = parts;
  partition_dataset(d, options, tmp / "parts");
  testing::PartitionedGraph graph(tmp / "parts");
  Cluster cluster(tmp / "parts", config);
  DistributedSampler sampler(cluster.system(), cluster.book(), cluster.refs(local), config, 30s);
  for (size_t i = 0; i < batches.size(); ++i) {
    std::vector<int64_t> seeds;
    for (int64_t v : batches[i].seeds) seeds.push_back(graph.global_of_original()[v]);
    MiniBatch batch = sampler.sample(seeds, batches[i].key);
    OriginalBatch got = to_original(
        batch, [&](int64_t g) { return graph.original_of_global()[g]; },
        [&](int64_t e) { return graph.original_edge(e); });
    EXPECT_EQ(got.nodes, expected[i].nodes) << "batch " << i;
    EXPECT_EQ(got.edges, expected[i].edges) << "batch " << i;
    EXPECT_TRUE(got == expected[i]) << parts << " parts, batch " << i;
  }
}

void expect_same_batches_everywhere(const Dataset& d, const SamplerConfig& config, const std::vector<Batch>& batches) {
  {
    SCOPED_TRACE("2 partitions, both actors");
    expect_same_batches(d, config, batches, 2, {});
  }
  {
    SCOPED_TRACE("4 partitions, all actors");
    expect_same_batches(d, config, batches, 4, {});
  }
  {
    SCOPED_TRACE("2 partitions, partition 0 co-located, partition 1 an actor");
    expect_same_batches(d, config, batches, 2, {true, false});
  }
  {
    SCOPED_TRACE("4 partitions, all co-located");
    expect_same_batches(d, config, batches, 4, {true, true, true, true});
  }
}

TEST(DistributedSamplerTest, CoraSameBatchesAsTheReference) {
  Dataset cora = read_linqs(testing::dataset_path("cora"));
  expect_same_batches_everywhere(cora, homogeneous({10, 10}), batches_of(cora.train_idx, 64));
}

TEST(DistributedSamplerTest, SyntheticGraphSameBatchesAsTheReference) {
  Dataset d = testing::sbm_graph();
  std::vector<int64_t> seeds;
  for (int64_t i = 0; i < 384; ++i) seeds.push_back(i * 101 % d.num_nodes);
  expect_same_batches_everywhere(d, homogeneous({10, 5, 3}), batches_of(seeds, 128));
  SamplerConfig disjoint = homogeneous({4, 4});
  disjoint.disjoint = true;
  expect_same_batches_everywhere(d, disjoint, batches_of(seeds, 128));
}

// Two partitions of the synthetic graph behind actors, and the first seeds of each part.
struct TwoParts {
  TempDir tmp;
  std::unique_ptr<Cluster> cluster;
  std::vector<int64_t> seeds;  // global ids in both parts

  explicit TwoParts(const SamplerConfig& config) {
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(), options, tmp / "parts");
    cluster = std::make_unique<Cluster>(tmp / "parts", config);
    for (int p = 0; p < 2; ++p) {
      for (int64_t i = 0; i < 16; ++i) seeds.push_back(cluster->book().begin(p) + i);
    }
  }
};

TEST(DistributedSamplerTest, KilledPartitionActorFailsNamingThePartition) {
  SamplerConfig config = homogeneous({5, 5});
  TwoParts g(config);
  DistributedSampler sampler(g.cluster->system(), g.cluster->book(), g.cluster->refs(), config, 2s);
  EXPECT_NO_THROW(sampler.sample(g.seeds, {1, 0, 0}));
  {
    // Wait until it is gone, so the sampler cannot race the kill.
    caf::scoped_actor self{g.cluster->system()};
    self->monitor(g.cluster->actor(1));
    caf::anon_send_exit(g.cluster->actor(1), caf::exit_reason::kill);
    self->receive([](const caf::down_msg&) {},
                  caf::after(std::chrono::seconds(10)) >> [] { FAIL() << "the kill was not confirmed"; });
  }
  try {
    sampler.sample(g.seeds, {1, 0, 1});
    FAIL() << "sampling with a dead partition actor succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("partition 1"), std::string::npos) << e.what();
  }
}

TEST(DistributedSamplerTest, ErrorReplyFailsNamingThePartitionAndTheRemoteError) {
  SamplerConfig config = homogeneous({5});
  TwoParts g(config);
  FeatureNames names;
  names.x = "no_such_x";
  DistributedSampler sampler(g.cluster->system(), g.cluster->book(), g.cluster->refs(), config, 10s, names);
  try {
    sampler.sample(g.seeds, {1, 0, 0});
    FAIL() << "a missing attribute went unnoticed";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("partition 0"), std::string::npos) << what;
    EXPECT_NE(what.find("no_such_x"), std::string::npos) << what;
  }
}

// An actor that accepts requests and never answers them: only the deadline ends the wait.
struct SilentState {
  std::vector<caf::typed_response_promise<Encoded>> pending;
};

partition_actor::behavior_type silent(partition_actor::stateful_pointer<SilentState> self) {
  return {
      [self](hop_atom, const Encoded&) -> caf::result<Encoded> {
        self->state.pending.push_back(self->make_response_promise<Encoded>());
        return caf::delegated<Encoded>();
      },
      [self](feature_atom, const Encoded&) -> caf::result<Encoded> {
        self->state.pending.push_back(self->make_response_promise<Encoded>());
        return caf::delegated<Encoded>();
      },
      [self](channel_atom) -> caf::result<Encoded> {
        self->state.pending.push_back(self->make_response_promise<Encoded>());
        return caf::delegated<Encoded>();
      },
  };
}

TEST(DistributedSamplerTest, SilentPartitionFailsAtTheDeadlineNamingThePartition) {
  SamplerConfig config = homogeneous({5});
  TwoParts g(config);
  partition_actor mute = g.cluster->system().spawn(silent);
  std::vector<PartitionRef> refs = g.cluster->refs({true});
  refs[1] = PartitionRef::remote(mute);
  DistributedSampler sampler(g.cluster->system(), g.cluster->book(), refs, config, 500ms);
  try {
    sampler.sample(g.seeds, {1, 0, 0});
    FAIL() << "a partition that never answers went unnoticed";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("partition 1"), std::string::npos) << what;
    EXPECT_NE(what.find("no reply within 500 ms"), std::string::npos) << what;
  }
  caf::anon_send_exit(mute, caf::exit_reason::user_shutdown);
}

TEST(DistributedSamplerTest, PartsThatDoNotFitTheBookAreRejected) {
  SamplerConfig config = homogeneous({5});
  TwoParts g(config);
  std::vector<PartitionRef> refs = g.cluster->refs({true, true});
  std::swap(refs[0], refs[1]);
  EXPECT_THROW(DistributedSampler(g.cluster->system(), g.cluster->book(), refs, config, 1s), UsageError);
  refs.pop_back();
  EXPECT_THROW(DistributedSampler(g.cluster->system(), g.cluster->book(), refs, config, 1s), UsageError);
}

}  // namespace
}  // namespace partita
