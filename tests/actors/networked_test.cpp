// Partition actors reached over a loopback connection between two actor systems: the
// protocol's bytes cross CAF's serialisation for real (registered types, remote proxies).
#include <gtest/gtest.h>

#include <caf/io/all.hpp>
#include <chrono>

#include "actors/distributed_sampler.h"
#include "cluster.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "test_util.h"

namespace partita {
namespace {

using namespace std::chrono_literals;

TEST(NetworkedSamplerTest, RemotePartitionOverLoopbackGivesTheSameBatches) {
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(testing::sbm_graph(), options, tmp / "parts");
  SamplerConfig config;
  config.fanouts = {{10, 5}};

  // The "server" system serves partition 1 on a loopback port.
  testing::Cluster server(tmp / "parts", config, /*networking=*/true);
  auto port = server.system().middleman().publish(server.actor(1), 0, "127.0.0.1");
  ASSERT_TRUE(port) << server.system().render(port.error());

  // The "client" system samples with partition 0 co-located and partition 1 remote.
  testing::Cluster client(tmp / "parts", config, /*networking=*/true);
  auto remote = client.system().middleman().remote_actor<partition_actor>("127.0.0.1", *port);
  ASSERT_TRUE(remote) << client.system().render(remote.error());
  std::vector<PartitionRef> refs = client.refs({true, true});
  refs[1] = PartitionRef::remote(*remote);
  DistributedSampler over_network(client.system(), client.book(), refs, config, 10s);
  DistributedSampler in_process(client.system(), client.book(), client.refs({true, false}), config, 10s);

  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 256; ++v) seeds.push_back(v * 7);
  MiniBatch a;  // reused across batches, as a training loop does
  for (uint64_t batch = 0; batch < 3; ++batch) {
    over_network.sample_into(seeds, {3, 1, batch}, a);
    MiniBatch b = in_process.sample(seeds, {3, 1, batch});
    EXPECT_EQ(a.node_ids, b.node_ids);
    EXPECT_EQ(a.row, b.row);
    EXPECT_EQ(a.col, b.col);
    EXPECT_EQ(a.edge_ids, b.edge_ids);
    EXPECT_EQ(a.num_sampled_edges, b.num_sampled_edges);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    ASSERT_FALSE(a.x.empty());
  }
}

}  // namespace
}  // namespace partita
