// Link prediction's held-out edges (partitioner/splits.h hold_out_edges): an undirected
// link leaves the graph in both directions and is held out once; the counts are the
// fractions of the links; what stays keeps its order and its edge times; the same seed
// gives the same split; bad fractions and a dataset with a split of its own are named; on a
// heterogeneous graph with reverse types (MovieLens' rates / rated_by) a held-out rating
// leaves both types, and only the target type's links are drawn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "base/error.h"
#include "partitioner/partition.h"
#include "partitioner/partition_format.h"
#include "partitioner/readers.h"
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

// Every pair (either direction) of d's graph, and every held-out pair.
std::set<std::pair<int64_t, int64_t>> graph_links(const Dataset& d) {
  std::set<std::pair<int64_t, int64_t>> links;
  for (int64_t e = 0; e < d.num_edges(); ++e) links.insert(link(d.edges.src[e], d.edges.dst[e]));
  return links;
}

void expect_no_held_out_pair_in_the_graph(const Dataset& d) {
  const auto links = graph_links(d);
  int64_t leaked = 0;
  for (const EdgeList* split : {&d.val_edges, &d.test_edges}) {
    for (int64_t i = 0; i < split->size(); ++i) leaked += links.count(link(split->src[i], split->dst[i]));
  }
  EXPECT_EQ(leaked, 0) << "held-out pairs still in the training graph (in one direction or the other)";
}

// Users 0..9 rate movies 10..29 (user u rates movies 10 + (u + j) % 20, j < 6), each
// rating as rates (user -> movie, type 0) and then rated_by (movie -> user, type 1); and a
// third type, (movie, similar, movie), which no rating split should touch.
Dataset ratings() {
  Dataset d;
  d.name = "ratings";
  d.num_nodes = 30;
  d.node_type_names = {"user", "movie"};
  for (int64_t v = 0; v < 30; ++v) d.node_type.push_back(v < 10 ? 0 : 1);
  d.edge_types = {{"user", "rates", "movie"}, {"movie", "rated_by", "user"}, {"movie", "similar", "movie"}};
  d.reverse_edge_type = {1, 0, -1};
  int64_t time = 0;
  for (int64_t u = 0; u < 10; ++u) {
    for (int64_t j = 0; j < 6; ++j) {
      const int64_t m = 10 + (u + j) % 20;
      d.edges.push_back(u, m);
      d.edges.type.push_back(0);
      d.edges.push_back(m, u);
      d.edges.type.push_back(1);
      d.edge_time.push_back(time);
      d.edge_time.push_back(time++);
    }
  }
  for (int64_t m = 10; m < 29; ++m) {
    d.edges.push_back(m, m + 1);
    d.edges.type.push_back(2);
    d.edge_time.push_back(time++);
  }
  d.validate();
  return d;
}

TEST(HoldOutEdgesTest, AHeldOutRatingLeavesBothItsTypeAndTheReverse) {
  for (const bool by_time : {false, true}) {
    Dataset d = ratings();
    hold_out_edges(d, 0.1, 0.2, 3, by_time, /*edge_type=*/0);
    // 60 ratings are the links of the target type; the 19 `similar` links are not drawn.
    EXPECT_EQ(d.val_edges.size(), 6);
    EXPECT_EQ(d.test_edges.size(), 12);
    expect_no_held_out_pair_in_the_graph(d);
    for (const EdgeList* split : {&d.val_edges, &d.test_edges}) {
      for (int64_t i = 0; i < split->size(); ++i) {
        EXPECT_EQ(split->type[i], 0);
        EXPECT_LT(split->src[i], 10) << "a held-out rating runs user -> movie";
        EXPECT_GE(split->dst[i], 10);
      }
    }
    int64_t similar = 0, rates = 0, rated_by = 0;
    for (int64_t e = 0; e < d.num_edges(); ++e) {
      similar += d.edges.type[e] == 2;
      rates += d.edges.type[e] == 0;
      rated_by += d.edges.type[e] == 1;
    }
    EXPECT_EQ(similar, 19);
    EXPECT_EQ(rates, 42);
    EXPECT_EQ(rated_by, 42) << "every rating that stays keeps both of its edges";
    EXPECT_NO_THROW(d.validate());
  }
  // Without the reverse declared, the same split leaves each held-out rating's rated_by
  // edge in the graph: the leak this guards against.
  Dataset leaky = ratings();
  leaky.reverse_edge_type.clear();
  hold_out_edges(leaky, 0.1, 0.2, 3, false, 0);
  const auto links = graph_links(leaky);
  EXPECT_GT(links.count(link(leaky.test_edges.src[0], leaky.test_edges.dst[0])), 0u);
  // A target type a link is first seen as the reverse of: held out as the target's edge.
  Dataset turned = ratings();
  hold_out_edges(turned, 0.0, 0.5, 3, false, 1);
  ASSERT_EQ(turned.test_edges.size(), 30);
  EXPECT_EQ(turned.test_edges.type[0], 1);
  EXPECT_GE(turned.test_edges.src[0], 10) << "rated_by runs movie -> user";
  expect_no_held_out_pair_in_the_graph(turned);
  try {
    Dataset d = ratings();
    hold_out_edges(d, 0.1, 0.1, 1, false, 3);
    ADD_FAILURE() << "an edge type the graph does not have";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "model.target_edge");
  }
  Dataset bad = ratings();
  bad.reverse_edge_type = {2, 0, -1};
  EXPECT_THROW(bad.validate(), Error);
}

// history: keep: nothing leaves the graph; the held-out ratings are listed with their
// times (the latest ones), the partition folder records them beside the graph, and a link
// whose edges differ in time, or a random split, is refused by name.
TEST(HoldOutEdgesTest, KeptAsHistoryTheHeldOutLinksStayInTheGraphWithTheirTimes) {
  const Dataset all = ratings();
  Dataset d = ratings();
  hold_out_edges(d, 0.1, 0.2, 3, true, /*edge_type=*/0, HeldOut::kKeepAsHistory);
  EXPECT_TRUE(d.held_out_in_graph);
  EXPECT_EQ(d.edges.src, all.edges.src);
  EXPECT_EQ(d.edges.dst, all.edges.dst);
  EXPECT_EQ(d.edge_time, all.edge_time);
  ASSERT_EQ(d.test_edges.size(), 12);
  ASSERT_EQ(d.val_edges.size(), 6);
  ASSERT_EQ(d.test_edge_time.size(), 12u);
  ASSERT_EQ(d.val_edge_time.size(), 6u);
  // Ratings are at times 0..59 (both edges of a rating at one time): test 48..59, valid 42..47.
  std::map<std::pair<int64_t, int64_t>, int64_t> time_of;
  for (int64_t e = 0; e < all.num_edges(); ++e) time_of[{all.edges.src[e], all.edges.dst[e]}] = all.edge_time[e];
  for (int64_t i = 0; i < d.test_edges.size(); ++i) {
    EXPECT_EQ(d.test_edge_time[i], time_of.at({d.test_edges.src[i], d.test_edges.dst[i]}));
    EXPECT_GE(d.test_edge_time[i], 48);
  }
  for (int64_t i = 0; i < d.val_edges.size(); ++i) {
    EXPECT_EQ(d.val_edge_time[i], time_of.at({d.val_edges.src[i], d.val_edges.dst[i]}));
    EXPECT_GE(d.val_edge_time[i], 42);
    EXPECT_LT(d.val_edge_time[i], 48);
  }
  EXPECT_NO_THROW(d.validate());
  // The folder keeps the times and says the held-out edges are in the graph.
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  const PartitionMeta meta = partition_dataset(d, options, tmp / "parts");
  EXPECT_TRUE(meta.held_out_in_graph);
  const PartitionFolder folder(tmp / "parts");
  EXPECT_TRUE(folder.meta().held_out_in_graph);
  EXPECT_TRUE(folder.meta().has_edge_split_time);
  EXPECT_EQ(folder.meta().num_edges, all.num_edges());
  std::multiset<int64_t> times;
  for (int p = 0; p < 2; ++p) {
    const PartitionData part = folder.load_part(p);
    ASSERT_TRUE(part.test_edge_time.has_value());
    for (int64_t t : part.test_edge_time->as<int64_t>()) times.insert(t);
  }
  EXPECT_EQ(times, std::multiset<int64_t>(d.test_edge_time.begin(), d.test_edge_time.end()));

  const auto refused = [](Dataset bad, bool by_time, const std::string& words) {
    try {
      hold_out_edges(bad, 0.1, 0.2, 3, by_time, 0, HeldOut::kKeepAsHistory);
      ADD_FAILURE() << "not refused: " << words;
    } catch (const UsageError& e) {
      EXPECT_CONTAINS(e.what(), words);
    }
  };
  refused(ratings(), false, "data.holdout.history: keep keeps held-out links in the graph as history, for a time split");
  Dataset two_times = ratings();
  two_times.edge_time[1] = 1000;  // the rated_by edge of the first rating
  refused(two_times, true, "needs every edge of a link (an edge, its reverse, parallel edges) at one time, and edges 0 "
                           "and 1 of dataset 'ratings' link nodes 0 and 10 at times 0 and 1000");
}

// The shared MovieLens: the last 10% of ratings by time as test, 5% before them as
// validation; no held-out (user, movie) pair is left in the graph in either type.
TEST(HoldOutEdgesTest, MovieLensTimeSplitLeavesNoHeldOutRatingInTheGraph) {
  Dataset d = read_movielens(testing::dataset_path("movielens-small"));
  const int64_t ratings = d.num_edges() / 2;
  hold_out_edges(d, 0.05, 0.1, 1, true, 0);
  EXPECT_EQ(d.test_edges.size(), (ratings + 5) / 10);
  EXPECT_EQ(d.num_edges(), 2 * (ratings - d.test_edges.size() - d.val_edges.size()));
  expect_no_held_out_pair_in_the_graph(d);
  int64_t latest_kept = 0, earliest_test = INT64_MAX;
  for (int64_t t : d.edge_time) latest_kept = std::max(latest_kept, t);
  Dataset again = read_movielens(testing::dataset_path("movielens-small"));
  std::map<std::pair<int64_t, int64_t>, int64_t> time_of;
  for (int64_t e = 0; e < again.num_edges(); ++e) time_of[{again.edges.src[e], again.edges.dst[e]}] = again.edge_time[e];
  for (int64_t i = 0; i < d.test_edges.size(); ++i) {
    earliest_test = std::min(earliest_test, time_of.at({d.test_edges.src[i], d.test_edges.dst[i]}));
  }
  EXPECT_LE(latest_kept, earliest_test) << "a training rating is later than a test rating";
}

}  // namespace
}  // namespace partita
