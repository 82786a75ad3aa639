// Link prediction's held-out edges (partitioner/splits.h hold_out_edges): an undirected
// link leaves the graph in both directions and is held out once; the counts are the
// fractions of the links; what stays keeps its order and its edge times; the same seed
// gives the same split; bad fractions and a dataset with a split of its own are named.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "base/error.h"
#include "partitioner/splits.h"
#include "test_util.h"

namespace partita {
namespace {

// 100 undirected links i - (i + 1) % 101 stored both ways (u -> v, then v -> u), and one
// repeated edge; edge time = edge id.
Dataset ring() {
  Dataset d;
  d.name = "ring";
  d.num_nodes = 101;
  for (int64_t i = 0; i < 100; ++i) {
    d.edges.push_back(i, i + 1);
    d.edges.push_back(i + 1, i);
  }
  d.edges.push_back(0, 1);  // a repeat of link 0
  for (int64_t e = 0; e < d.num_edges(); ++e) d.edge_time.push_back(e);
  return d;
}

std::pair<int64_t, int64_t> link(int64_t a, int64_t b) { return {std::min(a, b), std::max(a, b)}; }

TEST(HoldOutEdgesTest, LinksLeaveTheGraphInBothDirectionsAndAreHeldOutOnce) {
  Dataset d = ring();
  hold_out_edges(d, 0.1, 0.2, 7);
  EXPECT_EQ(d.val_edges.size(), 10);
  EXPECT_EQ(d.test_edges.size(), 20);
  std::set<std::pair<int64_t, int64_t>> held;
  for (const EdgeList* split : {&d.val_edges, &d.test_edges}) {
    for (int64_t i = 0; i < split->size(); ++i) {
      EXPECT_TRUE(held.insert(link(split->src[i], split->dst[i])).second) << "held out twice";
      EXPECT_LT(split->src[i], split->dst[i]) << "not the link's first edge";
    }
  }
  std::set<std::pair<int64_t, int64_t>> kept;
  int64_t last_time = -1;
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    EXPECT_EQ(held.count(link(d.edges.src[e], d.edges.dst[e])), 0u) << "a held-out link is still in the graph";
    kept.insert(link(d.edges.src[e], d.edges.dst[e]));
    // Times stay with their edges (time = the original edge id), in order.
    EXPECT_GT(d.edge_time[e], last_time);
    last_time = d.edge_time[e];
    const int64_t original = d.edge_time[e];
    const int64_t i = original / 2;
    if (original < 200) {
      EXPECT_EQ(link(d.edges.src[e], d.edges.dst[e]), link(i, i + 1));
    }
  }
  EXPECT_EQ(kept.size() + held.size(), 100u);
  EXPECT_EQ(static_cast<size_t>(d.num_edges()), 2 * kept.size() + (kept.count({0, 1}) ? 1 : 0));
  EXPECT_NO_THROW(d.validate());

  Dataset again = ring();
  hold_out_edges(again, 0.1, 0.2, 7);
  EXPECT_EQ(again.test_edges.src, d.test_edges.src);
  Dataset other = ring();
  hold_out_edges(other, 0.1, 0.2, 8);
  EXPECT_NE(other.test_edges.src, d.test_edges.src);
}

// A time split: the latest links are the test links, the ones before them validation.
TEST(HoldOutEdgesTest, ByTimeTheLatestLinksAreHeldOut) {
  Dataset d = ring();  // link i's edges have times 2i and 2i + 1 (the repeat of link 0: 200)
  hold_out_edges(d, 0.1, 0.2, 7, true);
  ASSERT_EQ(d.test_edges.size(), 20);
  ASSERT_EQ(d.val_edges.size(), 10);
  // Links 80..99 are the latest 20 (by their first edge's time), then 70..79.
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(d.test_edges.src[i], 80 + i);
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(d.val_edges.src[i], 70 + i);
  for (int64_t e = 0; e < d.num_edges(); ++e) EXPECT_LT(std::min(d.edges.src[e], d.edges.dst[e]), 70);
  Dataset untimed = ring();
  untimed.edge_time.clear();
  try {
    hold_out_edges(untimed, 0.1, 0.1, 1, true);
    ADD_FAILURE() << "a time split without times";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "data.holdout.by: time, but dataset 'ring' has no edge times");
  }
}

TEST(HoldOutEdgesTest, BadFractionsAndASplitOfItsOwnAreNamed) {
  Dataset d = ring();
  try {
    hold_out_edges(d, 0.6, 0.5, 1);
    ADD_FAILURE() << "held out more than every edge";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "data.holdout");
  }
  try {
    hold_out_edges(d, -0.1, 0.1, 1);
    ADD_FAILURE() << "a negative fraction";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "data.holdout.val");
  }
  hold_out_edges(d, 0.1, 0.1, 1);
  try {
    hold_out_edges(d, 0.1, 0.1, 1);
    ADD_FAILURE() << "held out twice";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "has held-out edges of its own already");
  }
}

}  // namespace
}  // namespace partita
