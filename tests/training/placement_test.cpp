// Placement by resources (training/placement.h): where partitions go, and the refusals
// that say what is missing.
#include <gtest/gtest.h>

#include "test_util.h"
#include "training/placement.h"

namespace partita {
namespace {

constexpr int64_t kMiB = 1 << 20;

std::vector<NodeOffer> offers(const std::vector<int64_t>& free_mib) {
  std::vector<NodeOffer> nodes;
  for (size_t i = 0; i < free_mib.size(); ++i) {
    nodes.push_back({"n" + std::to_string(i), "10.0.0." + std::to_string(i + 1) + ":7071", i + 1, free_mib[i] * kMiB, 2, {}});
  }
  return nodes;
}

std::string refusal(const std::vector<int64_t>& bytes, const std::vector<NodeOffer>& nodes, int per_node) {
  try {
    place_partitions(bytes, nodes, per_node);
  } catch (const PlacementError& e) {
    return e.what();
  }
  ADD_FAILURE() << "placed";
  return "";
}

TEST(PlacementTest, OnePartitionPerNodeWhileThereAreNodesThenWhereMemoryIsLeft) {
  EXPECT_EQ(place_partitions({100 * kMiB, 100 * kMiB}, offers({1000, 1000, 1000}), 1), (std::vector<int>{0, 1}));
  // The largest partition goes first, to the node with the most memory.
  EXPECT_EQ(place_partitions({10 * kMiB, 500 * kMiB}, offers({400, 1000}), 1), (std::vector<int>{0, 1}));
  // Two per node: spread first, then doubled up where memory is left.
  EXPECT_EQ(place_partitions({100 * kMiB, 100 * kMiB, 100 * kMiB}, offers({1000, 250}), 2),
            (std::vector<int>{0, 1, 0}));
}

TEST(PlacementTest, MemoryDecidesWhereAPartitionFits) {
  // Partition 0 fits only on n1, so it goes there although n0 has fewer partitions later.
  EXPECT_EQ(place_partitions({600 * kMiB, 100 * kMiB}, offers({500, 1000}), 2), (std::vector<int>{1, 0}));
  // Partition 0 takes n1; partition 1 fits neither what n0 has nor what n1 has left.
  const std::string why = refusal({700 * kMiB, 700 * kMiB}, offers({650, 800}), 2);
  EXPECT_CONTAINS(why, "partition 1 needs 700.0 MiB of memory");
  EXPECT_CONTAINS(why, "n0 (10.0.0.1:7071) 650.0 MiB left after 0 partition(s)");
  EXPECT_CONTAINS(why, "n1 (10.0.0.2:7071) 100.0 MiB left after 1 partition(s)");
  EXPECT_CONTAINS(why, "it needs a node with 700.0 MiB free");
}

// A job whose data a node has cached goes there (a second submit copies nothing), unless
// that would stack partitions where nodes are free, or memory does not fit.
TEST(PlacementTest, ANodeThatCachesAPartitionsPartComesBeforeMoreMemory) {
  std::vector<NodeOffer> nodes = offers({1000, 400});
  nodes[1].cached_units = {"key-of-part-0"};
  nodes[0].cached_units = {"key-of-part-1"};
  const std::vector<std::string> keys{"key-of-part-0", "key-of-part-1"};
  EXPECT_EQ(place_partitions({100 * kMiB, 100 * kMiB}, nodes, 1, keys), (std::vector<int>{1, 0}));
  EXPECT_EQ(place_partitions({100 * kMiB, 100 * kMiB}, nodes, 1), (std::vector<int>{0, 1})) << "without keys: memory";
  // Fewer partitions first: both parts cached on n1 still spread over both nodes.
  nodes[1].cached_units = {"key-of-part-0", "key-of-part-1"};
  nodes[0].cached_units.clear();
  const std::vector<int> spread = place_partitions({100 * kMiB, 100 * kMiB}, nodes, 2, keys);
  EXPECT_NE(spread[0], spread[1]);
  // A cached part whose node lacks the memory goes elsewhere.
  EXPECT_EQ(place_partitions({500 * kMiB, 10 * kMiB}, nodes, 1, keys), (std::vector<int>{0, 1}));
}

TEST(PlacementTest, TooFewNodesIsRefusedWithHowManyAreMissing) {
  EXPECT_CONTAINS(refusal({kMiB, kMiB, kMiB, kMiB}, offers({1000}), 2),
                  "the job has 4 partition(s), at most 2 per node (cluster.partitions_per_node), and the cluster has 1 "
                  "live node(s): it needs 1 more node(s)");
  EXPECT_CONTAINS(refusal({kMiB}, {}, 1), "no live node in the cluster");
  EXPECT_THROW(place_partitions({kMiB}, offers({1000}), 0), UsageError);
}

}  // namespace
}  // namespace partita
