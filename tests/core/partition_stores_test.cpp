// The graph/ stores opened from a partition folder hold the dataset's data under the
// partition's ids.
#include <gtest/gtest.h>

#include <cstring>

#include "base/resident_array.h"
#include "graph/neighbor_sampler.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "test_util.h"

namespace partita {
namespace {

TEST(PartitionStoresTest, FeaturesLabelsAndTimesFollowTheirNodesAndEdges) {
  SbmOptions o;
  o.num_nodes = 3000;
  o.feature_dim = 6;
  Dataset d = generate_sbm(o);
  d.edge_time.resize(d.num_edges());
  for (int64_t e = 0; e < d.num_edges(); ++e) d.edge_time[e] = e * 3 + 1;
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 3;
  partition_dataset(d, options, tmp / "p");
  PartitionFolder folder(tmp / "p");
  for (int p = 0; p < 3; ++p) {
    Topology topology = load_topology(folder, p);
    FeatureStore store = load_features(folder, p);
    std::vector<int64_t> ids;
    for (int64_t g = topology.node_begin(); g < topology.node_end(); g += 7) ids.push_back(g);
    std::vector<float> x;
    std::vector<int64_t> y;
    store.gather_as("node", "x", ids, x, 2);
    store.gather_as("node", "y", ids, y);
    for (size_t i = 0; i < ids.size(); ++i) {
      int64_t v = topology.original_node_id(ids[i]);
      EXPECT_EQ(y[i], d.y[v]);
      for (int f = 0; f < 6; ++f) ASSERT_EQ(x[i * 6 + f], d.x[v * 6 + f]);
    }
    std::vector<int64_t> edges, time;
    for (int64_t e = topology.edge_begin(); e < topology.edge_begin() + topology.num_edges(); e += 11) {
      edges.push_back(e);
    }
    store.gather_as("edge", "time", edges, time);
    for (size_t i = 0; i < edges.size(); ++i) {
      EXPECT_EQ(time[i], d.edge_time[topology.original_edge_id(edges[i])]);
    }
    // Rows of another partition are not here: the error names the id.
    std::vector<int64_t> foreign{topology.node_begin() == 0 ? topology.node_end() : 0};
    EXPECT_THROW(store.gather_as("node", "y", foreign, y), Error);
  }
}

// A topology whose sampling arrays fit in memory keeps them in anonymous (huge-page) memory,
// from a folder and from a dataset alike, and samples the batches its 4 KB-page copy does.
TEST(PartitionStoresTest, TopologiesKeepTheirSamplingArraysInMemory) {
  SbmOptions o;
  o.num_nodes = 3000;
  Dataset d = generate_sbm(o);
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(d, options, tmp / "p");
  PartitionFolder folder(tmp / "p");
  const Topology part = load_topology(folder, 1);
  EXPECT_TRUE(is_anonymous_memory(part.csc(0).indices.raw_data()));
  EXPECT_TRUE(is_anonymous_memory(part.csc(0).indptr.raw_data()));
  EXPECT_TRUE(is_anonymous_memory(part.orig_node_ids().data()));
  const Topology huge = topology_from_dataset(d);
  const Topology plain = topology_from_dataset(d, TopologyMemory::kPlain);
  EXPECT_TRUE(is_anonymous_memory(huge.csc(0).indices.raw_data()));
  EXPECT_NE(huge.csc(0).indices.raw_data(), plain.csc(0).indices.raw_data());
  SamplerConfig c;
  c.fanouts = {{10, 5}};
  std::vector<int64_t> seeds{0, 17, 400, 2999};
  MiniBatch a = NeighborSampler(huge, c).sample(seeds, {3, 0, 0});
  MiniBatch b = NeighborSampler(plain, c).sample(seeds, {3, 0, 0});
  EXPECT_EQ(a.node_ids, b.node_ids);
  EXPECT_EQ(a.edge_ids, b.edge_ids);
  // The copy of an array built in memory holds its elements.
  const ArrayRef v = ArrayRef::from_vector(std::vector<int64_t>{5, 6, 7});
  const ArrayRef r = copy_resident(v);
  ASSERT_EQ(r.as<int64_t>().size(), 3u);
  EXPECT_EQ(r.as<int64_t>()[2], 7);
  EXPECT_TRUE(copy_resident(ArrayRef()).empty());
  // An edge type with no edges in a part: a column of no elements, whose vector has no data.
  const ArrayRef none = copy_resident(ArrayRef::from_vector(std::vector<int64_t>{}));
  EXPECT_EQ(none.as<int64_t>().size(), 0u);
}

// Features kept in huge-page memory are the file's rows, byte for byte, and no longer a
// view of the file; the one store a process shares is that copy.
TEST(PartitionStoresTest, MemoryStoresHoldTheSameRowsAsMappedOnes) {
  SbmOptions o;
  o.num_nodes = 10000;
  o.feature_dim = 128;  // 2.4 MB of x per part: huge pages; the other attributes are smaller
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(generate_sbm(o), options, tmp / "p", {});
  PartitionFolder folder(tmp / "p");
  for (int p = 0; p < 2; ++p) {
    FeatureStore mapped = load_features(folder, p, FeatureStorage::kMapped);
    FeatureStore memory = load_features(folder, p, FeatureStorage::kMemory);
    EXPECT_FALSE(is_anonymous_memory(mapped.get("node", "x")->raw_data()));
    EXPECT_TRUE(is_anonymous_memory(memory.get("node", "x")->raw_data()));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(memory.get("node", "x")->raw_data()) % (2 << 20), 0u)
        << "huge pages need 2 MB alignment";
    EXPECT_TRUE(is_anonymous_memory(memory.get("node", "y")->raw_data())) << "small arrays too, in plain pages";
    ASSERT_EQ(memory.keys(), mapped.keys());
    for (const auto& [group, name] : mapped.keys()) {
      const ArrayRef& a = *mapped.get(group, name);
      const ArrayRef& b = *memory.get(group, name);
      EXPECT_EQ(a.shape(), b.shape()) << group << "/" << name;
      EXPECT_EQ(a.dtype(), b.dtype()) << group << "/" << name;
      ASSERT_EQ(a.bytes(), b.bytes());
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0) << group << "/" << name;
    }
    // Gathers by id through the kernel (prefetching rows ahead) agree as well.
    std::vector<int64_t> ids;
    for (int64_t g = mapped.node_end() - 1; g >= mapped.node_begin(); g -= 3) ids.push_back(g);
    std::vector<float> from_mapped, from_memory;
    mapped.gather_as("node", "x", ids, from_mapped);
    memory.gather_as("node", "x", ids, from_memory, 2);
    EXPECT_EQ(from_mapped, from_memory);
  }
  PartitionStores shared = open_partition_stores(tmp / "p", 0, FeatureStorage::kMemory);
  PartitionStores again = open_partition_stores(tmp / "p", 0, FeatureStorage::kMapped);
  EXPECT_EQ(shared.features.get(), again.features.get()) << "one copy per process, the first opener's";
  EXPECT_TRUE(is_anonymous_memory(again.features->get("node", "x")->raw_data()));
}

// Storage disk: the feature matrix stays in its file (no memory, rows read at each gather),
// the other attributes go into memory, and every gather gives the rows in memory.
TEST(PartitionStoresTest, DiskStoresReadTheSameRowsAsMemoryOnes) {
  SbmOptions o;
  o.num_nodes = 4000;
  o.feature_dim = 128;
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(generate_sbm(o), options, tmp / "p", {});
  PartitionFolder folder(tmp / "p");
  for (int p = 0; p < 2; ++p) {
    FeatureStore memory = load_features(folder, p, FeatureStorage::kMemory);
    FeatureStore disk = load_features(folder, p, FeatureStorage::kDisk);
    ASSERT_EQ(disk.keys(), memory.keys());
    ASSERT_NE(disk.disk_rows("node", "x"), nullptr);
    EXPECT_EQ(disk.get("node", "x")->raw_data(), nullptr) << "no copy, no mapping";
    EXPECT_EQ(disk.get("node", "x")->shape(), memory.get("node", "x")->shape());
    EXPECT_EQ(disk.disk_rows("node", "y"), nullptr);
    EXPECT_TRUE(is_anonymous_memory(disk.get("node", "y")->raw_data())) << "labels in memory";
    std::vector<int64_t> ids;
    for (int64_t g = memory.node_end() - 1; g >= memory.node_begin(); g -= 3) ids.push_back(g);
    std::vector<float> from_memory, from_disk;
    memory.gather_as("node", "x", ids, from_memory);
    disk.gather_as("node", "x", ids, from_disk);
    EXPECT_EQ(from_memory, from_disk);
  }
}

TEST(PartitionStoresTest, FeatureStorageNamesAndTheAutoRule) {
  EXPECT_EQ(parse_feature_storage("auto", "features.storage"), FeatureStorage::kAuto);
  EXPECT_EQ(parse_feature_storage("memory", "features.storage"), FeatureStorage::kMemory);
  EXPECT_EQ(parse_feature_storage("mapped", "features.storage"), FeatureStorage::kMapped);
  EXPECT_EQ(parse_feature_storage("disk", "features.storage"), FeatureStorage::kDisk);
  // auto: in memory up to half of what is available, mapped beyond; the others as they say.
  const uint64_t gb = uint64_t{1} << 30;
  EXPECT_EQ(resolve_feature_storage(FeatureStorage::kAuto, 4 * gb, 8 * gb), FeatureStorage::kMemory);
  EXPECT_EQ(resolve_feature_storage(FeatureStorage::kAuto, 4 * gb + 1, 8 * gb), FeatureStorage::kMapped);
  EXPECT_EQ(resolve_feature_storage(FeatureStorage::kAuto, 1, 0), FeatureStorage::kMapped) << "unknown memory";
  EXPECT_EQ(resolve_feature_storage(FeatureStorage::kMemory, 9 * gb, 8 * gb), FeatureStorage::kMemory);
  EXPECT_EQ(resolve_feature_storage(FeatureStorage::kMapped, 1, 8 * gb), FeatureStorage::kMapped);
  try {
    parse_feature_storage("ram", "features.storage");
    FAIL() << "accepted 'ram'";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("features.storage: 'ram' is not a feature storage"), std::string::npos)
        << e.what();
  }
}

TEST(PartitionStoresTest, InMemoryStoresUseTheSameEdgeOrderAsAFolder) {
  SbmOptions o;
  o.num_nodes = 500;
  Dataset d = generate_sbm(o);
  d.edge_time.resize(d.num_edges());
  for (int64_t e = 0; e < d.num_edges(); ++e) d.edge_time[e] = 1000 - e;
  Topology topology = topology_from_dataset(d);
  FeatureStore store = features_from_dataset(d);
  std::vector<int64_t> all(d.num_edges()), time;
  for (int64_t e = 0; e < d.num_edges(); ++e) all[e] = e;
  store.gather_as("edge", "time", all, time);
  for (int64_t e = 0; e < d.num_edges(); ++e) EXPECT_EQ(time[e], d.edge_time[topology.original_edge_id(e)]);
}

TEST(PartitionStoresTest, OpenStoresAreSharedUntilTheFolderIsRewritten) {
  SbmOptions o;
  o.num_nodes = 2000;
  o.feature_dim = 4;
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  WriteOptions write;
  write.overwrite = true;
  partition_dataset(generate_sbm(o), options, tmp / "p", write);
  PartitionStores first = open_partition_stores(tmp / "p", 1);
  PartitionStores again = open_partition_stores(tmp / "p", 1);
  EXPECT_EQ(first.features.get(), again.features.get()) << "opened twice while held";
  // Another graph into the same folder while the old stores are still held: the next open
  // reads the new folder, not the old mappings.
  o.num_nodes = 3000;
  partition_dataset(generate_sbm(o), options, tmp / "p", write);
  PartitionStores fresh = open_partition_stores(tmp / "p", 1);
  EXPECT_NE(fresh.features.get(), first.features.get());
  EXPECT_EQ(fresh.topology->node_end(), 3000);
  EXPECT_EQ(first.topology->node_end(), 2000);  // the holder's stores are untouched
}

}  // namespace
}  // namespace partita
