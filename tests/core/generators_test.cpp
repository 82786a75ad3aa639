#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "partitioner/generators.h"
#include "partitioner/readers.h"
#include "partitioner/splits.h"
#include "test_util.h"

namespace partita {
namespace {

// Everything a generator fills, compared exactly: "the same graph" means bit for bit.
void expect_same(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.num_nodes, b.num_nodes);
  EXPECT_TRUE(a.edges.src == b.edges.src);
  EXPECT_TRUE(a.edges.dst == b.edges.dst);
  EXPECT_TRUE(a.edges.type == b.edges.type);
  EXPECT_TRUE(a.x == b.x);
  EXPECT_TRUE(a.y == b.y);
  EXPECT_TRUE(a.node_type == b.node_type);
  EXPECT_EQ(a.train_idx, b.train_idx);
  EXPECT_EQ(a.val_idx, b.val_idx);
  EXPECT_EQ(a.test_idx, b.test_idx);
}

// Calls `make` and expects a UsageError whose message contains `flag`.
template <typename Make>
void expect_usage_error(Make make, const std::string& flag) {
  try {
    make();
    ADD_FAILURE() << "expected a UsageError naming " << flag;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
  }
}

void expect_ids_in_range_without_self_loops(const Dataset& d) {
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    ASSERT_GE(d.edges.src[e], 0);
    ASSERT_LT(d.edges.src[e], d.num_nodes);
    ASSERT_GE(d.edges.dst[e], 0);
    ASSERT_LT(d.edges.dst[e], d.num_nodes);
    ASSERT_NE(d.edges.src[e], d.edges.dst[e]) << "self-loop at edge " << e;
  }
}

void expect_sorted_disjoint_splits(const Dataset& d) {
  for (const auto* idx : {&d.train_idx, &d.val_idx, &d.test_idx}) {
    EXPECT_TRUE(std::is_sorted(idx->begin(), idx->end()));
    EXPECT_EQ(std::adjacent_find(idx->begin(), idx->end()), idx->end());
  }
  std::vector<int64_t> all = d.train_idx;
  all.insert(all.end(), d.val_idx.begin(), d.val_idx.end());
  all.insert(all.end(), d.test_idx.begin(), d.test_idx.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "splits overlap";
}

std::vector<int64_t> iota(int64_t n, int64_t step = 1) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i * step;
  return v;
}

// ---------------------------------------------------------------------------------------
// Splits

TEST(SplitTest, SizesFollowTheFractions) {
  NodeSplit s = random_node_split(iota(1000), SplitOptions{}, 1);
  EXPECT_EQ(s.train.size(), 100u);
  EXPECT_EQ(s.val.size(), 100u);
  EXPECT_EQ(s.test.size(), 200u);
  Dataset d;
  d.train_idx = s.train;
  d.val_idx = s.val;
  d.test_idx = s.test;
  expect_sorted_disjoint_splits(d);
}

TEST(SplitTest, NumTrainOverridesTrainFraction) {
  SplitOptions o;
  o.num_train = 37;
  o.train_fraction = 0.9;  // ignored, and must not make the sum check fail
  NodeSplit s = random_node_split(iota(1000), o, 1);
  EXPECT_EQ(s.train.size(), 37u);
  EXPECT_EQ(s.val.size(), 100u);
  EXPECT_EQ(s.test.size(), 200u);
}

TEST(SplitTest, DrawsOnlyFromTheCandidates) {
  NodeSplit s = random_node_split(iota(500, 2), SplitOptions{}, 3);
  for (const auto* idx : {&s.train, &s.val, &s.test}) {
    for (int64_t id : *idx) EXPECT_EQ(id % 2, 0) << id;
  }
  EXPECT_EQ(s.train.size() + s.val.size() + s.test.size(), 200u);
}

TEST(SplitTest, DependsOnlyOnTheSeed) {
  NodeSplit a = random_node_split(iota(1000), SplitOptions{}, 7);
  NodeSplit b = random_node_split(iota(1000), SplitOptions{}, 7);
  NodeSplit c = random_node_split(iota(1000), SplitOptions{}, 8);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.test, b.test);
  EXPECT_NE(a.train, c.train);
}

TEST(SplitTest, InvalidOptionsAreNamed) {
  SplitOptions too_much;
  too_much.train_fraction = 0.5;
  too_much.val_fraction = 0.3;
  too_much.test_fraction = 0.3;
  expect_usage_error([&] { random_node_split(iota(100), too_much, 0); }, "--train-fraction");

  SplitOptions too_many;
  too_many.num_train = 95;  // + 10 val + 20 test > 100
  expect_usage_error([&] { random_node_split(iota(100), too_many, 0); }, "--train-nodes");

  SplitOptions negative;
  negative.val_fraction = -0.1;
  expect_usage_error([&] { random_node_split(iota(100), negative, 0); }, "--val-fraction");
}

// The flags named are the ones whose nodes overflow the split, not always --train-nodes.
TEST(SplitTest, OversizedSplitNamesTheFlagsThatSetIt) {
  auto message = [](const SplitOptions& o, int64_t n) {
    try {
      random_node_split(iota(n), o, 0);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "expected a UsageError";
    return std::string();
  };
  SplitOptions rounded;  // fractions sum to 1, but round(1.5) + round(1.5) = 4 > 3
  rounded.train_fraction = 0.5;
  rounded.val_fraction = 0.5;
  rounded.test_fraction = 0;
  std::string m = message(rounded, 3);
  EXPECT_EQ(m.rfind("--train-fraction/--val-fraction: 2 training nodes plus 2 validation and 0 test", 0), 0u) << m;

  SplitOptions counted;  // 4 + 0 + round(1.2) > 4
  counted.num_train = 4;
  counted.val_fraction = 0;
  counted.test_fraction = 0.3;
  m = message(counted, 4);
  EXPECT_EQ(m.rfind("--train-nodes/--test-fraction: 4 training nodes", 0), 0u) << m;
}

// ---------------------------------------------------------------------------------------
// R-MAT

RmatOptions small_rmat() {
  RmatOptions o;
  o.num_nodes = 1000;  // not a power of two: ids past num_nodes must be redrawn
  o.avg_degree = 7.5;
  o.seed = 11;
  o.threads = 2;
  return o;
}

TEST(RmatTest, EdgeCountIdsAndNoSelfLoops) {
  Dataset d = generate_rmat(small_rmat());
  EXPECT_EQ(d.name, "rmat");
  EXPECT_EQ(d.num_nodes, 1000);
  EXPECT_EQ(d.num_edges(), 7500);
  expect_ids_in_range_without_self_loops(d);
  EXPECT_TRUE(d.x.empty());
  EXPECT_TRUE(d.y.empty());
  EXPECT_TRUE(d.train_idx.empty());
  EXPECT_FALSE(d.is_hetero());
}

TEST(RmatTest, SameSeedSameGraphWhateverTheThreads) {
  RmatOptions o = small_rmat();
  o.num_nodes = 5000;  // several edge chunks, so threads really split the work
  o.avg_degree = 30;
  o.feature_dim = 24;  // several feature chunks too
  o.num_classes = 3;
  o.threads = 1;
  Dataset one = generate_rmat(o);
  o.threads = 2;
  expect_same(one, generate_rmat(o));
  o.threads = 7;
  expect_same(one, generate_rmat(o));

  o.seed += 1;
  Dataset other = generate_rmat(o);
  EXPECT_NE(one.edges.src, other.edges.src);
  EXPECT_NE(one.x, other.x);
  EXPECT_NE(one.y, other.y);
}

TEST(RmatTest, UndirectedStoresEveryEdgesReverse) {
  RmatOptions o = small_rmat();
  o.undirected = true;
  o.avg_degree = 7.3;  // 3650 draws, 7300 directed edges
  Dataset d = generate_rmat(o);
  ASSERT_EQ(d.num_edges(), 7300);
  expect_ids_in_range_without_self_loops(d);
  // Each draw is stored next to its reverse, so every edge's reverse is present (with
  // parallel edges, as often as the edge itself).
  std::map<std::pair<int64_t, int64_t>, int64_t> count;
  for (int64_t e = 0; e < d.num_edges(); ++e) ++count[{d.edges.src[e], d.edges.dst[e]}];
  for (const auto& [edge, times] : count) {
    auto reverse = count.find({edge.second, edge.first});
    ASSERT_NE(reverse, count.end()) << edge.first << " -> " << edge.second << " has no reverse";
    EXPECT_EQ(reverse->second, times);
  }
  for (int64_t e = 0; e < d.num_edges(); e += 2) {
    ASSERT_EQ(d.edges.src[e], d.edges.dst[e + 1]);
    ASSERT_EQ(d.edges.dst[e], d.edges.src[e + 1]);
  }
  // The same draws as the directed graph of half the degree, forwards at even positions.
  o.undirected = false;
  o.avg_degree = 3.65;
  Dataset directed = generate_rmat(o);
  ASSERT_EQ(directed.num_edges(), 3650);
  for (int64_t e = 0; e < directed.num_edges(); ++e) {
    ASSERT_EQ(directed.edges.src[e], d.edges.src[2 * e]);
    ASSERT_EQ(directed.edges.dst[e], d.edges.dst[2 * e]);
  }
}

TEST(RmatTest, DegreesAreSkewedAndHubsSpread) {
  RmatOptions o;
  o.num_nodes = 1 << 14;
  o.avg_degree = 20;
  o.seed = 5;
  Dataset d = generate_rmat(o);
  ASSERT_EQ(d.num_edges(), 20 << 14);
  std::vector<int64_t> in_degree(d.num_nodes);
  for (int64_t v : d.edges.dst) ++in_degree[v];
  int64_t max_degree = *std::max_element(in_degree.begin(), in_degree.end());
  EXPECT_GT(max_degree, 20 * 20) << "max in-degree " << max_degree << ", mean 20";

  // Before the permutation the hubs are the ids with the most zero bits, i.e. small ones;
  // after it, the 100 biggest hubs should sit anywhere.
  std::vector<int64_t> by_degree = iota(d.num_nodes);
  std::partial_sort(by_degree.begin(), by_degree.begin() + 100, by_degree.end(),
                    [&](int64_t a, int64_t b) { return in_degree[a] > in_degree[b]; });
  double mean_id = 0;
  for (int i = 0; i < 100; ++i) mean_id += static_cast<double>(by_degree[i]) / 100;
  EXPECT_GT(mean_id, d.num_nodes * 0.3);
  EXPECT_LT(mean_id, d.num_nodes * 0.7);
}

TEST(RmatTest, FeaturesLabelsAndSplit) {
  RmatOptions o = small_rmat();
  o.feature_dim = 16;
  o.num_classes = 4;
  o.split.num_train = 50;
  Dataset d = generate_rmat(o);
  ASSERT_EQ(d.feature_dim, 16);
  ASSERT_EQ(d.x.size(), 1000u * 16);
  double sum = 0, sum2 = 0;
  for (float v : d.x) {
    sum += v;
    sum2 += double{v} * v;
  }
  const double count = static_cast<double>(d.x.size());
  EXPECT_NEAR(sum / count, 0.0, 0.03);
  EXPECT_NEAR(sum2 / count, 1.0, 0.05);

  ASSERT_EQ(d.y.size(), 1000u);
  std::vector<int> per_class(4);
  for (int64_t label : d.y) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 4);
    ++per_class[label];
  }
  for (int c : per_class) EXPECT_GT(c, 150);
  EXPECT_EQ(d.train_idx.size(), 50u);
  EXPECT_EQ(d.val_idx.size(), 100u);
  EXPECT_EQ(d.test_idx.size(), 200u);
  expect_sorted_disjoint_splits(d);
}

TEST(RmatTest, InvalidOptionsAreNamed) {
  auto with = [](auto change) {
    return [change] {
      RmatOptions o;
      o.num_nodes = 100;
      change(o);
      generate_rmat(o);
    };
  };
  expect_usage_error(with([](RmatOptions& o) { o.a = 0.6, o.b = 0.2, o.c = 0.2; }),
                     "--a/--b/--c: a + b + c must be below 1");
  expect_usage_error(with([](RmatOptions& o) { o.a = -0.1; }), "--a/--b/--c");
  expect_usage_error(with([](RmatOptions& o) { o.b = 0, o.c = 0; }), "--b/--c");
  expect_usage_error(with([](RmatOptions& o) { o.num_nodes = 1; }), "--nodes");
  expect_usage_error(with([](RmatOptions& o) { o.avg_degree = 0; }), "--avg-degree");
  expect_usage_error(with([](RmatOptions& o) { o.threads = -1; }), "--threads");
  expect_usage_error(with([](RmatOptions& o) { o.num_classes = 2, o.split.test_fraction = 0.9; }),
                     "--train-fraction");
}

TEST(RmatTest, ProbabilitiesThatNeverGiveAnEdgeFailInsteadOfHanging) {
  // Source bits are 1 with probability 0.999, so source ids land on 1024..2047, all but one
  // of them past num_nodes = 1025.
  RmatOptions o;
  o.num_nodes = 1025;
  o.avg_degree = 200;  // several chunks: the error must cross from the worker threads
  o.a = 0, o.b = 0.001, o.c = 0;
  o.threads = 2;
  expect_usage_error([&] { generate_rmat(o); }, "--a/--b/--c");
}

// ---------------------------------------------------------------------------------------
// SBM

SbmOptions small_sbm() {
  SbmOptions o;
  o.num_nodes = 2000;
  o.seed = 21;
  o.threads = 2;
  return o;
}

TEST(SbmTest, EdgesAreUndirectedPairsWithoutSelfLoops) {
  Dataset d = generate_sbm(small_sbm());
  EXPECT_EQ(d.name, "sbm");
  ASSERT_EQ(d.num_edges(), 2000 * 10);
  expect_ids_in_range_without_self_loops(d);
  for (int64_t e = 0; e < d.num_edges(); e += 2) {
    ASSERT_EQ(d.edges.src[e], d.edges.dst[e + 1]);
    ASSERT_EQ(d.edges.dst[e], d.edges.src[e + 1]);
  }
}

TEST(SbmTest, OddPairCountsRound) {
  SbmOptions o = small_sbm();
  o.num_nodes = 1001;
  o.avg_degree = 3;  // 1501.5 pairs round to 1502
  EXPECT_EQ(generate_sbm(o).num_edges(), 2 * 1502);
}

TEST(SbmTest, ClassesAreBalancedLabels) {
  SbmOptions o = small_sbm();
  o.num_nodes = 2003;
  Dataset d = generate_sbm(o);
  ASSERT_EQ(d.num_classes, 8);
  ASSERT_EQ(d.y.size(), 2003u);
  std::vector<int64_t> per_class(8);
  for (int64_t label : d.y) ++per_class[label];
  auto [lo, hi] = std::minmax_element(per_class.begin(), per_class.end());
  EXPECT_LE(*hi - *lo, 1);
  // Randomly placed, not i % C.
  int64_t striped = 0;
  for (int64_t i = 0; i < d.num_nodes; ++i) striped += d.y[i] == i % 8;
  EXPECT_LT(striped, d.num_nodes / 4);
}

TEST(SbmTest, HomophilyMatchesTheOption) {
  for (double homophily : {0.8, 0.3, 1.0}) {
    SbmOptions o = small_sbm();
    o.num_nodes = 20000;
    o.avg_degree = 6;
    o.feature_dim = 0;
    o.homophily = homophily;
    Dataset d = generate_sbm(o);
    ASSERT_GE(d.num_edges(), 50000);
    int64_t same = 0;
    for (int64_t e = 0; e < d.num_edges(); ++e) same += d.y[d.edges.src[e]] == d.y[d.edges.dst[e]];
    EXPECT_NEAR(static_cast<double>(same) / d.num_edges(), homophily, 0.02) << homophily;
  }
}

TEST(SbmTest, SameSeedSameGraphWhateverTheThreads) {
  SbmOptions o = small_sbm();
  o.num_nodes = 30000;  // several pair and feature chunks
  o.avg_degree = 4;
  o.threads = 1;
  Dataset one = generate_sbm(o);
  o.threads = 2;
  expect_same(one, generate_sbm(o));
  o.threads = 5;
  expect_same(one, generate_sbm(o));
  o.seed += 1;
  Dataset other = generate_sbm(o);
  EXPECT_NE(one.edges.dst, other.edges.dst);
  EXPECT_NE(one.y, other.y);
  EXPECT_NE(one.x, other.x);
  EXPECT_NE(one.train_idx, other.train_idx);
}

TEST(SbmTest, SplitFollowsTheOptions) {
  SbmOptions o = small_sbm();
  Dataset d = generate_sbm(o);
  EXPECT_EQ(d.train_idx.size(), 200u);
  EXPECT_EQ(d.val_idx.size(), 200u);
  EXPECT_EQ(d.test_idx.size(), 400u);
  expect_sorted_disjoint_splits(d);
  o.split.num_train = 80;
  EXPECT_EQ(generate_sbm(o).train_idx.size(), 80u);
}

// Nearest-class-mean accuracy on the test nodes, with means estimated on the train nodes.
double nearest_mean_accuracy(const Dataset& d, const std::vector<double>& features) {
  const int64_t F = d.feature_dim, C = d.num_classes;
  std::vector<double> means(C * F);
  std::vector<int64_t> counts(C);
  for (int64_t v : d.train_idx) {
    ++counts[d.y[v]];
    for (int64_t j = 0; j < F; ++j) means[d.y[v] * F + j] += features[v * F + j];
  }
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t j = 0; j < F; ++j) means[c * F + j] /= std::max<int64_t>(counts[c], 1);
  }
  int64_t correct = 0;
  for (int64_t v : d.test_idx) {
    int64_t best = -1;
    double best_distance = 0;
    for (int64_t c = 0; c < C; ++c) {
      double distance = 0;
      for (int64_t j = 0; j < F; ++j) {
        double diff = features[v * F + j] - means[c * F + j];
        distance += diff * diff;
      }
      if (best < 0 || distance < best_distance) best = c, best_distance = distance;
    }
    correct += best == d.y[v];
  }
  return static_cast<double>(correct) / static_cast<double>(d.test_idx.size());
}

TEST(SbmTest, NeighbourAveragingMakesFeaturesLearnable) {
  SbmOptions o;  // the defaults, on a smaller graph
  o.num_nodes = 20000;
  o.seed = 4;
  Dataset d = generate_sbm(o);
  const int64_t F = d.feature_dim;
  ASSERT_EQ(F, 32);

  std::vector<double> raw(d.x.begin(), d.x.end());
  // One round of mean aggregation over the node and its in-neighbours, as in GCN/SAGE.
  std::vector<double> averaged = raw;
  std::vector<int64_t> count(d.num_nodes, 1);
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    const int64_t s = d.edges.src[e], t = d.edges.dst[e];
    ++count[t];
    for (int64_t j = 0; j < F; ++j) averaged[t * F + j] += raw[s * F + j];
  }
  for (int64_t v = 0; v < d.num_nodes; ++v) {
    for (int64_t j = 0; j < F; ++j) averaged[v * F + j] /= static_cast<double>(count[v]);
  }

  const double chance = 1.0 / static_cast<double>(d.num_classes);
  const double raw_accuracy = nearest_mean_accuracy(d, raw);
  const double averaged_accuracy = nearest_mean_accuracy(d, averaged);
  std::printf("sbm nearest-class-mean accuracy: raw %.3f, neighbour-averaged %.3f, chance %.3f\n",
              raw_accuracy, averaged_accuracy, chance);
  EXPECT_GT(raw_accuracy, chance + 0.1);
  EXPECT_LT(raw_accuracy, 0.9);
  EXPECT_GT(averaged_accuracy, raw_accuracy + 0.2);
}

TEST(SbmTest, ZeroFeaturesGiveAGraphWithoutX) {
  SbmOptions o = small_sbm();
  o.feature_dim = 0;
  Dataset d = generate_sbm(o);
  EXPECT_EQ(d.feature_dim, 0);
  EXPECT_TRUE(d.x.empty());
  EXPECT_EQ(d.edges.src, generate_sbm(small_sbm()).edges.src) << "features have their own stream";
}

TEST(SbmTest, InvalidOptionsAreNamed) {
  auto with = [](auto change) {
    return [change] {
      SbmOptions o;
      o.num_nodes = 100;
      change(o);
      generate_sbm(o);
    };
  };
  expect_usage_error(with([](SbmOptions& o) { o.homophily = 1.5; }), "--homophily");
  expect_usage_error(with([](SbmOptions& o) { o.num_classes = 1; }), "--classes");
  expect_usage_error(with([](SbmOptions& o) { o.num_nodes = 15; }), "--nodes");
  expect_usage_error(with([](SbmOptions& o) { o.avg_degree = -1; }), "--avg-degree");
  expect_usage_error(with([](SbmOptions& o) { o.noise = -1; }), "--noise");
  expect_usage_error(with([](SbmOptions& o) { o.split.num_train = 100; }), "--train-nodes");
}

// ---------------------------------------------------------------------------------------
// Heterogeneous

HeteroOptions small_hetero() {
  HeteroOptions o;
  o.num_papers = 3000;
  o.num_authors = 1500;
  o.num_venues = 20;
  o.feature_dim = 8;
  o.citations_per_paper = 4.5;
  o.seed = 9;
  o.threads = 2;
  return o;
}

TEST(HeteroTest, TypesShapesAndSplit) {
  const HeteroOptions o = small_hetero();
  Dataset d = generate_hetero(o);
  EXPECT_NO_THROW(d.validate());
  EXPECT_EQ(d.name, "hetero");
  EXPECT_TRUE(d.is_hetero());
  ASSERT_EQ(d.num_nodes, 3000 + 1500 + 20);
  ASSERT_EQ(d.node_type_names, (std::vector<std::string>{"paper", "author", "venue"}));
  for (int64_t v = 0; v < d.num_nodes; ++v) {
    const int32_t expected = v < 3000 ? 0 : v < 4500 ? 1 : 2;
    ASSERT_EQ(d.node_type[v], expected) << v;
  }
  ASSERT_EQ(d.edge_types.size(), 5u);
  EXPECT_EQ(d.edge_types[2].relation, "cites");

  ASSERT_EQ(d.x.size(), static_cast<size_t>(d.num_nodes * 8));
  for (int64_t v = 0; v < d.num_nodes; ++v) {
    const bool paper = v < 3000;
    ASSERT_EQ(d.y[v] >= 0, paper) << v;
    if (paper) {
      ASSERT_LT(d.y[v], 5);
    }
    const bool zero_row = std::all_of(d.x.begin() + v * 8, d.x.begin() + (v + 1) * 8,
                                      [](float f) { return f == 0.f; });
    ASSERT_EQ(zero_row, !paper) << v;
  }

  EXPECT_EQ(d.train_idx.size(), 300u);
  EXPECT_EQ(d.val_idx.size(), 300u);
  EXPECT_EQ(d.test_idx.size(), 600u);
  expect_sorted_disjoint_splits(d);
  for (const auto* idx : {&d.train_idx, &d.val_idx, &d.test_idx}) {
    for (int64_t v : *idx) ASSERT_LT(v, 3000) << "split holds a non-paper";
  }
}

TEST(HeteroTest, EdgeEndpointsMatchTheirEdgeType) {
  Dataset d = generate_hetero(small_hetero());
  ASSERT_EQ(d.edges.type.size(), static_cast<size_t>(d.num_edges()));
  std::vector<int64_t> per_type(d.edge_types.size());
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    const EdgeType& t = d.edge_types[d.edges.type[e]];
    ++per_type[d.edges.type[e]];
    ASSERT_EQ(d.node_type_names[d.node_type[d.edges.src[e]]], t.src_type) << e;
    ASSERT_EQ(d.node_type_names[d.node_type[d.edges.dst[e]]], t.dst_type) << e;
  }
  expect_ids_in_range_without_self_loops(d);
  // writes / written_by mirror each other, one venue per paper, ~4.5 citations per paper.
  EXPECT_EQ(per_type[0], 3 * 3000);
  EXPECT_EQ(per_type[1], per_type[0]);
  EXPECT_NEAR(per_type[2], 4.5 * 3000, 300);
  EXPECT_EQ(per_type[3], 3000);
  EXPECT_EQ(per_type[4], 3000);
}

TEST(HeteroTest, FieldsShowInVenuesAuthorsAndCitations) {
  const HeteroOptions o = small_hetero();
  Dataset d = generate_hetero(o);
  const int64_t C = o.num_classes, first_author = 3000, first_venue = 4500;
  int64_t venue_same = 0, venues = 0, author_same = 0, authorships = 0, cite_same = 0, cites = 0;
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    const int64_t s = d.edges.src[e], t = d.edges.dst[e];
    switch (d.edges.type[e]) {
      case 3:
        ++venues;
        venue_same += (t - first_venue) % C == d.y[s];
        break;
      case 0:
        ++authorships;
        author_same += (s - first_author) % C == d.y[t];
        break;
      case 2:
        ++cites;
        cite_same += d.y[s] == d.y[t];
        break;
    }
  }
  // In-field with the given probability, plus the uniform draws that land in-field anyway.
  auto expected = [&](double p) { return p + (1 - p) / static_cast<double>(C); };
  EXPECT_NEAR(static_cast<double>(venue_same) / venues, expected(0.9), 0.02);
  EXPECT_NEAR(static_cast<double>(author_same) / authorships, expected(o.homophily), 0.02);
  EXPECT_NEAR(static_cast<double>(cite_same) / cites, expected(o.homophily), 0.02);
}

TEST(HeteroTest, SameSeedSameGraphWhateverTheThreads) {
  HeteroOptions o = small_hetero();
  o.num_papers = 20000;  // several paper chunks
  o.threads = 1;
  Dataset one = generate_hetero(o);
  o.threads = 3;
  expect_same(one, generate_hetero(o));
  o.seed += 1;
  Dataset other = generate_hetero(o);
  EXPECT_NE(one.edges.dst, other.edges.dst);
  EXPECT_NE(one.x, other.x);
}

TEST(HeteroTest, ZeroFeaturesGiveAGraphWithoutX) {
  HeteroOptions o = small_hetero();
  o.feature_dim = 0;
  Dataset d = generate_hetero(o);
  EXPECT_EQ(d.feature_dim, 0);
  EXPECT_TRUE(d.x.empty());
  EXPECT_EQ(d.edges.dst, generate_hetero(small_hetero()).edges.dst);
}

TEST(HeteroTest, InvalidOptionsAreNamed) {
  auto with = [](auto change) {
    return [change] {
      HeteroOptions o = small_hetero();
      change(o);
      generate_hetero(o);
    };
  };
  expect_usage_error(with([](HeteroOptions& o) { o.num_venues = 4; }), "--venues");
  expect_usage_error(with([](HeteroOptions& o) { o.num_authors = 0; }), "--authors");
  expect_usage_error(with([](HeteroOptions& o) { o.num_papers = 9; }), "--papers");
  expect_usage_error(with([](HeteroOptions& o) { o.citations_per_paper = -1; }),
                     "--citations");
  expect_usage_error(with([](HeteroOptions& o) { o.homophily = -0.5; }), "--homophily");
  expect_usage_error(with([](HeteroOptions& o) { o.split.test_fraction = 0.85; }),
                     "--train-fraction");
}

// ---------------------------------------------------------------------------------------
// partita generate: the flags reach the options, and the output is checked first

using testing::run_partita;
using testing::TempDir;

TEST(GenerateCommandTest, HeteroHomophilyAndNoiseFlagsReachTheGenerator) {
  TempDir tmp;
  auto r = run_partita({"--log-level", "warn", "generate", "hetero", "--papers", "400", "--authors", "100",
                        "--venues", "10", "--features", "4", "--homophily", "1", "--noise", "0", "-o", tmp / "h"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Dataset d = read_npy_folder(tmp / "h");
  const int64_t classes = 5, first_author = 400;  // the default --classes
  for (int64_t e = 0; e < d.num_edges(); ++e) {
    const int64_t s = d.edges.src[e], t = d.edges.dst[e];
    if (d.edges.type[e] == 2) {
      ASSERT_EQ(d.y[s], d.y[t]) << "citation " << e << " leaves its field";
    }
    if (d.edges.type[e] == 0) {
      ASSERT_EQ((s - first_author) % classes, d.y[t]) << "authorship " << e;
    }
  }
  // Without noise a paper's features are its field's mean, the same for the whole field.
  std::vector<int64_t> first_of_field(classes, -1);
  for (int64_t p = 0; p < 400; ++p) {
    int64_t& first = first_of_field[d.y[p]];
    if (first < 0) first = p;
    ASSERT_TRUE(std::equal(d.x.begin() + p * 4, d.x.begin() + p * 4 + 4, d.x.begin() + first * 4)) << p;
  }

  for (const auto& [flag, value] : {std::pair<std::string, std::string>{"--homophily", "1.5"}, {"--noise", "-1"}}) {
    auto bad = run_partita({"generate", "hetero", flag, value, "-o", tmp / "bad"});
    EXPECT_EQ(bad.exit_code, 2) << flag << ": " << bad.err;
    EXPECT_NE(bad.err.find(flag), std::string::npos) << bad.err;
  }
  auto help = run_partita({"generate", "hetero", "--help"});
  EXPECT_NE(help.out.find("--homophily"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("0.8"), std::string::npos) << "defaults are shown: " << help.out;
}

TEST(GenerateCommandTest, SbmAndHeteroAcceptZeroFeatures) {
  TempDir tmp;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"sbm", "--nodes", "200", "--classes", "4"},
        std::vector<std::string>{"hetero", "--papers", "200", "--authors", "50", "--venues", "10"}}) {
    std::vector<std::string> full = {"--log-level", "warn", "generate"};
    full.insert(full.end(), args.begin(), args.end());
    const std::string out = tmp / args[0];
    full.insert(full.end(), {"--features", "0", "-o", out});
    auto r = run_partita(full);
    ASSERT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out + "/x.npy")) << args[0];
    EXPECT_EQ(read_npy_folder(out).feature_dim, 0) << args[0];
  }
}

// Each generator is given options it would reject: if the output folder is checked first,
// the error is the folder's (exit 1), proving no generating happened before it.
TEST(GenerateCommandTest, ExistingOutputFailsBeforeGenerating) {
  TempDir tmp;
  std::filesystem::create_directory(tmp / "taken");
  testing::write_text(tmp / "taken/keep.txt", "mine");
  const std::vector<std::vector<std::string>> commands = {
      {"rmat", "--a", "0.5", "--b", "0.3", "--c", "0.3"},
      {"sbm", "--nodes", "3"},
      {"hetero", "--papers", "3"},
  };
  for (const auto& command : commands) {
    std::vector<std::string> args = {"generate"};
    args.insert(args.end(), command.begin(), command.end());
    args.insert(args.end(), {"-o", tmp / "taken"});
    auto r = run_partita(args);
    EXPECT_EQ(r.exit_code, 1) << command[0] << ": " << r.err;
    EXPECT_NE(r.err.find(tmp / "taken"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::read_text(tmp / "taken/keep.txt"), "mine");
}

}  // namespace
}  // namespace partita
