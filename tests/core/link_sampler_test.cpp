// Link sampling: labels and their indices, negatives (binary, triplet, strict and fast),
// seed-edge exclusion, determinism, a knowledge graph, and partition invariance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include "base/error.h"
#include "graph/link_sampler.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "partitioner/readers.h"
#include "partitioned_graph.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::TempDir;

using testing::sbm_graph;

// A dense random digraph without self-loops: a fair share of random pairs are edges.
Dataset dense_graph(int64_t nodes, double density, uint64_t seed) {
  Dataset d;
  d.name = "dense";
  d.num_nodes = nodes;
  Rng rng(seed);
  for (int64_t s = 0; s < nodes; ++s) {
    for (int64_t t = 0; t < nodes; ++t) {
      if (s != t && rng.uniform() < density) d.edges.push_back(s, t);
    }
  }
  return d;
}

LinkSamplerConfig link_config(std::vector<int> fanouts, NegativeMode mode) {
  LinkSamplerConfig c;
  c.sampler.fanouts = {std::move(fanouts)};
  c.negatives.mode = mode;
  return c;
}

// Positive seed edges: some of the dataset's edges, with their global edge ids in `t`.
struct Positives {
  std::vector<int64_t> src, dst, edge_ids, original_edges;
  std::vector<int32_t> types;
  LinkInput input(bool with_ids = false, bool with_types = false) const {
    LinkInput in;
    in.src = src;
    in.dst = dst;
    if (with_ids) in.edge_ids = edge_ids;
    if (with_types) in.edge_types = types;
    return in;
  }
};

// Global edge id of every original edge of an in-memory topology.
std::vector<int64_t> global_edge_ids(const Topology& t) {
  std::vector<int64_t> global(t.num_edges());
  for (int64_t g = 0; g < t.num_edges(); ++g) global[t.original_edge_id(g)] = g;
  return global;
}

Positives every_kth_edge(const Dataset& d, const Topology& t, int64_t count, int64_t step) {
  auto global = global_edge_ids(t);
  Positives p;
  for (int64_t i = 0; i < count; ++i) {
    int64_t e = (i * step) % d.num_edges();
    p.src.push_back(d.edges.src[e]);
    p.dst.push_back(d.edges.dst[e]);
    p.edge_ids.push_back(global[e]);
    p.original_edges.push_back(e);
    if (!d.edges.type.empty()) p.types.push_back(d.edges.type[e]);
  }
  return p;
}

std::set<std::pair<int64_t, int64_t>> edge_set(const Dataset& d) {
  std::set<std::pair<int64_t, int64_t>> edges;
  for (int64_t e = 0; e < d.num_edges(); ++e) edges.insert({d.edges.src[e], d.edges.dst[e]});
  return edges;
}

// The (src, dst) node ids of labelled pair j of a binary batch.
std::pair<int64_t, int64_t> label_pair(const LinkBatch& b, size_t j) {
  const size_t n = b.edge_label.size();
  return {b.subgraph.node_ids[b.edge_label_index[j]], b.subgraph.node_ids[b.edge_label_index[n + j]]};
}

// Every sampled edge is an edge of the dataset, between the nodes it claims.
void expect_edges_exist(const Dataset& d, const Topology& t, const MiniBatch& b) {
  ASSERT_EQ(b.row.size(), b.edge_ids.size());
  for (size_t k = 0; k < b.row.size(); ++k) {
    int64_t e = t.original_edge_id(b.edge_ids[k]);
    ASSERT_EQ(d.edges.src[e], b.node_ids[b.row[k]]) << "sampled edge " << k;
    ASSERT_EQ(d.edges.dst[e], b.node_ids[b.col[k]]) << "sampled edge " << k;
  }
}

TEST(LinkSamplerTest, BinaryLabelsCountsAndIndices) {
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 101, 97);
  for (double ratio : {0.0, 1.0, 1.5, 3.0}) {
    SCOPED_TRACE(ratio);
    LinkSamplerConfig c = link_config({5, 3}, NegativeMode::kBinary);
    c.negatives.ratio = ratio;
    LinkSampler sampler(t, c);
    LinkBatch b = sampler.sample(pos.input(), {1, 0, 0});
    const int64_t p = 101, n = static_cast<int64_t>(std::ceil(ratio * p));
    ASSERT_EQ(b.edge_label.size(), static_cast<size_t>(p + n));
    ASSERT_EQ(b.edge_label_index.size(), static_cast<size_t>(2 * (p + n)));
    EXPECT_EQ(b.num_positives, p);
    EXPECT_TRUE(b.src_index.empty() && b.dst_neg_index.empty());
    for (int64_t j = 0; j < p + n; ++j) {
      EXPECT_EQ(b.edge_label[j], j < p ? 1.f : 0.f) << "label " << j;
      auto [src, dst] = label_pair(b, j);
      if (j < p) {
        EXPECT_EQ(src, pos.src[j]);
        EXPECT_EQ(dst, pos.dst[j]);
      }
      // Every endpoint is a seed, at the head of node_ids.
      EXPECT_LT(b.edge_label_index[j], b.subgraph.batch_size);
      EXPECT_LT(b.edge_label_index[p + n + j], b.subgraph.batch_size);
    }
    // The seeds are the endpoints, deduplicated in first-appearance order (src, dst per pair).
    std::vector<int64_t> expected_seeds;
    std::set<int64_t> seen;
    for (int64_t j = 0; j < p + n; ++j) {
      auto [src, dst] = label_pair(b, j);
      for (int64_t v : {src, dst}) {
        if (seen.insert(v).second) expected_seeds.push_back(v);
      }
    }
    EXPECT_EQ(std::vector<int64_t>(b.subgraph.node_ids.begin(), b.subgraph.node_ids.begin() + b.subgraph.batch_size),
              expected_seeds);
    expect_edges_exist(d, t, b.subgraph);
  }
}

TEST(LinkSamplerTest, RatioIsRoundedAsItsExactProduct) {
  // 0.1 * 30 is 3.0000000000000004 in doubles: three negatives, not four.
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 30, 11);
  LinkSamplerConfig c = link_config({2}, NegativeMode::kBinary);
  c.negatives.ratio = 0.1;
  LinkSampler sampler(t, c);
  EXPECT_EQ(sampler.sample(pos.input(), {}).edge_label.size(), 33u);
}

TEST(LinkSamplerTest, NoNegativesLabelsThePositivesOnly) {
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 20, 13);
  LinkSampler sampler(t, link_config({3}, NegativeMode::kNone));
  LinkBatch b = sampler.sample(pos.input(), {});
  EXPECT_EQ(b.edge_label, std::vector<float>(20, 1.f));
  for (size_t j = 0; j < 20; ++j) EXPECT_EQ(label_pair(b, j), std::make_pair(pos.src[j], pos.dst[j]));
}

TEST(LinkSamplerTest, StrictRejectsTrueEdgesWhereFastKeepsThem) {
  Dataset d = dense_graph(40, 0.3, 3);
  Topology t = topology_from_dataset(d);
  auto edges = edge_set(d);
  Positives pos = every_kth_edge(d, t, 40, 7);
  for (NegativeMode mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
    SCOPED_TRACE(mode == NegativeMode::kBinary ? "binary" : "triplet");
    int64_t true_edges[2] = {0, 0};
    for (bool strict : {false, true}) {
      LinkSamplerConfig c = link_config({2}, mode);
      c.negatives.ratio = 5;
      c.negatives.per_positive = 5;
      c.negatives.strict = strict;
      LinkSampler sampler(t, c);
      LinkBatch b = sampler.sample(pos.input(), {4, 1, 2});
      const auto& ids = b.subgraph.node_ids;
      int64_t negatives = 0;
      if (mode == NegativeMode::kBinary) {
        for (size_t j = 40; j < b.edge_label.size(); ++j, ++negatives) true_edges[strict] += edges.count(label_pair(b, j));
      } else {
        for (size_t q = 0; q < b.dst_neg_index.size(); ++q, ++negatives) {
          true_edges[strict] += edges.count({ids[b.src_index[q / 5]], ids[b.dst_neg_index[q]]});
        }
      }
      EXPECT_EQ(negatives, 200);
      // At density 0.3, eleven true edges in a row happen once in half a million draws.
      EXPECT_EQ(b.num_unverified_negatives, 0);
    }
    EXPECT_GT(true_edges[0], 20) << "fast mode should keep about 30% true edges";
    EXPECT_EQ(true_edges[1], 0) << "strict mode kept a true edge";
  }
}

TEST(LinkSamplerTest, StrictCountsTheNegativesItCouldNotVerify) {
  // Every pair (self-loops included) is an edge: no draw can pass.
  Dataset d;
  d.name = "complete";
  d.num_nodes = 6;
  for (int64_t s = 0; s < 6; ++s) {
    for (int64_t t = 0; t < 6; ++t) d.edges.push_back(s, t);
  }
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 4, 5);
  LinkSamplerConfig c = link_config({1}, NegativeMode::kBinary);
  c.negatives.ratio = 2;
  c.negatives.strict = true;
  c.negatives.max_retries = 3;
  LinkBatch b = LinkSampler(t, c).sample(pos.input(), {});
  EXPECT_EQ(b.edge_label.size(), 12u);
  EXPECT_EQ(b.num_unverified_negatives, 8);
  c.negatives.strict = false;
  EXPECT_EQ(LinkSampler(t, c).sample(pos.input(), {}).num_unverified_negatives, 0);
}

TEST(LinkSamplerTest, TripletShapesAndPositiveDestinations) {
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 64, 31);
  LinkSamplerConfig c = link_config({4, 4}, NegativeMode::kTriplet);
  c.negatives.per_positive = 5;
  LinkSampler sampler(t, c);
  LinkBatch b = sampler.sample(pos.input(), {2, 0, 7});
  ASSERT_EQ(b.src_index.size(), 64u);
  ASSERT_EQ(b.dst_pos_index.size(), 64u);
  ASSERT_EQ(b.dst_neg_index.size(), 64u * 5);
  EXPECT_EQ(b.per_positive, 5);
  EXPECT_TRUE(b.edge_label.empty() && b.edge_label_index.empty());
  const auto& ids = b.subgraph.node_ids;
  std::set<int64_t> negatives;
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(ids[b.src_index[i]], pos.src[i]);
    EXPECT_EQ(ids[b.dst_pos_index[i]], pos.dst[i]);
  }
  for (int64_t q : b.dst_neg_index) {
    ASSERT_LT(q, b.subgraph.batch_size);
    negatives.insert(ids[q]);
  }
  EXPECT_GT(negatives.size(), 250u) << "320 uniform draws from 2000 nodes are mostly distinct";
  expect_edges_exist(d, t, b.subgraph);
}

TEST(LinkSamplerTest, ExcludeSeedEdgesRemovesThemFromEveryHop) {
  Dataset d = sbm_graph(500);
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 20, 149);
  std::set<int64_t> seed_ids(pos.edge_ids.begin(), pos.edge_ids.end());
  std::set<std::pair<int64_t, int64_t>> seed_pairs, reverse_pairs;
  for (size_t i = 0; i < 20; ++i) {
    seed_pairs.insert({pos.src[i], pos.dst[i]});
    reverse_pairs.insert({pos.dst[i], pos.src[i]});
  }
  struct Found {
    int64_t by_id = 0, by_pair = 0, reverse = 0;
  };
  auto sample = [&](bool exclude, bool reverse, bool with_ids) {
    LinkSamplerConfig c = link_config({-1, 3}, NegativeMode::kBinary);
    c.exclude_seed_edges = exclude;
    c.exclude_reverse_edges = reverse;
    LinkBatch b = LinkSampler(t, c).sample(pos.input(with_ids), {3, 0, 0});
    expect_edges_exist(d, t, b.subgraph);
    const MiniBatch& s = b.subgraph;
    Found f;
    for (size_t k = 0; k < s.row.size(); ++k) {
      std::pair<int64_t, int64_t> e{s.node_ids[s.row[k]], s.node_ids[s.col[k]]};
      f.by_id += seed_ids.count(s.edge_ids[k]);
      f.by_pair += seed_pairs.count(e);
      f.reverse += reverse_pairs.count(e);
    }
    return f;
  };
  // Fanout -1 at the first hop takes every in-edge of the seeds: the seed edges included.
  Found all = sample(false, false, false);
  EXPECT_GE(all.by_id, 20);
  EXPECT_GE(all.reverse, 20);  // sbm stores both directions
  for (bool with_ids : {false, true}) {
    SCOPED_TRACE(with_ids ? "by edge id" : "by pair");
    Found excluded = sample(true, false, with_ids);
    EXPECT_EQ(excluded.by_id, 0);
    EXPECT_GT(excluded.reverse, 0) << "only the seed direction is excluded";
    if (!with_ids) {
      EXPECT_EQ(excluded.by_pair, 0);
    }
    Found both = sample(true, true, with_ids);
    EXPECT_EQ(both.by_id, 0);
    EXPECT_EQ(both.reverse, 0);
  }
}

TEST(LinkSamplerTest, ExclusionFiltersWithoutChangingTheDraws) {
  // One hop: the filtered batch's edges are the unfiltered batch's minus the seed edges,
  // in the same order, so exclusion never shifts another node's random draws.
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 200, 53);
  LinkSamplerConfig c = link_config({6}, NegativeMode::kBinary);
  LinkBatch plain = LinkSampler(t, c).sample(pos.input(true), {5, 5, 5});
  c.exclude_seed_edges = true;
  LinkBatch filtered = LinkSampler(t, c).sample(pos.input(true), {5, 5, 5});
  std::set<int64_t> seed_ids(pos.edge_ids.begin(), pos.edge_ids.end());
  std::vector<int64_t> expected;
  for (int64_t e : plain.subgraph.edge_ids) {
    if (!seed_ids.count(e)) expected.push_back(e);
  }
  ASSERT_LT(expected.size(), plain.subgraph.edge_ids.size()) << "no seed edge was sampled: the test shows nothing";
  EXPECT_EQ(filtered.subgraph.edge_ids, expected);
  EXPECT_EQ(filtered.edge_label_index, plain.edge_label_index);
}

TEST(LinkSamplerTest, SameKeySameBatchOtherBatchOtherNegatives) {
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 50, 41);
  LinkSamplerConfig c = link_config({5, 5}, NegativeMode::kBinary);
  c.negatives.ratio = 2;
  c.negatives.strict = true;
  LinkSampler sampler(t, c);
  auto negatives = [](const LinkBatch& b) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (size_t j = b.num_positives; j < b.edge_label.size(); ++j) out.push_back(label_pair(b, j));
    return out;
  };
  LinkBatch a = sampler.sample(pos.input(), {9, 3, 4});
  LinkBatch again = sampler.sample(pos.input(), {9, 3, 4});
  LinkBatch other_batch = sampler.sample(pos.input(), {9, 3, 5});
  LinkBatch other_epoch = sampler.sample(pos.input(), {9, 4, 4});
  EXPECT_EQ(a.subgraph.node_ids, again.subgraph.node_ids);
  EXPECT_EQ(a.subgraph.edge_ids, again.subgraph.edge_ids);
  EXPECT_EQ(a.edge_label_index, again.edge_label_index);
  EXPECT_EQ(negatives(a), negatives(again));
  EXPECT_NE(negatives(a), negatives(other_batch));
  EXPECT_NE(negatives(a), negatives(other_epoch));
  // Every negative has its own stream: more negatives extend the list, they do not reshuffle it.
  c.negatives.ratio = 3;
  LinkBatch more = LinkSampler(t, c).sample(pos.input(), {9, 3, 4});
  auto longer = negatives(more);
  longer.resize(100);
  EXPECT_EQ(longer, negatives(a));
}

TEST(LinkSamplerTest, TypedNegativesComeFromTheEdgeTypesEnds) {
  HeteroOptions o;
  o.num_papers = 600;
  o.num_authors = 300;
  o.num_venues = 10;
  Dataset d = generate_hetero(o);
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 120, 37);
  std::set<int32_t> types(pos.types.begin(), pos.types.end());
  ASSERT_GE(types.size(), 3u) << "the positives should mix edge types";
  LinkSamplerConfig c;
  c.sampler.fanouts.assign(d.edge_types.size(), {3, 2});
  c.negatives.ratio = 2;
  c.negatives.strict = true;
  LinkBatch b = LinkSampler(t, c).sample(pos.input(false, true), {1, 2, 3});
  ASSERT_EQ(b.edge_types.size(), b.edge_label.size());
  auto type_name = [&](int64_t v) { return d.node_type_names[d.node_type[v]]; };
  for (size_t j = 0; j < b.edge_label.size(); ++j) {
    EXPECT_EQ(b.edge_types[j], pos.types[j % 120]);
    const EdgeType& type = d.edge_types[b.edge_types[j]];
    auto [src, dst] = label_pair(b, j);
    EXPECT_EQ(type_name(src), type.src_type) << "pair " << j;
    EXPECT_EQ(type_name(dst), type.dst_type) << "pair " << j;
  }
}

TEST(LinkSamplerTest, Fb15kTripletBatchHasTheRightShapesAndTypes) {
  Dataset kg = read_triples(testing::dataset_path("fb15k-237"));
  Topology t = topology_from_dataset(kg);
  ASSERT_EQ(t.num_edge_types(), 237);
  Positives pos = every_kth_edge(kg, t, 512, 531);
  std::set<std::tuple<int64_t, int32_t, int64_t>> triples;
  for (int64_t e = 0; e < kg.num_edges(); ++e) triples.insert({kg.edges.src[e], kg.edges.type[e], kg.edges.dst[e]});
  LinkSamplerConfig c;
  c.sampler.fanouts.assign(237, {2, 1});
  c.negatives.mode = NegativeMode::kTriplet;
  c.negatives.per_positive = 8;
  c.negatives.strict = true;
  c.exclude_seed_edges = true;
  LinkBatch b = LinkSampler(t, c).sample(pos.input(true, true), {7, 0, 0});
  ASSERT_EQ(b.src_index.size(), 512u);
  ASSERT_EQ(b.dst_pos_index.size(), 512u);
  ASSERT_EQ(b.dst_neg_index.size(), 512u * 8);
  EXPECT_EQ(b.edge_types, pos.types);
  EXPECT_EQ(b.num_unverified_negatives, 0);
  const auto& ids = b.subgraph.node_ids;
  for (size_t i = 0; i < 512; ++i) {
    EXPECT_EQ(ids[b.src_index[i]], pos.src[i]);
    EXPECT_EQ(ids[b.dst_pos_index[i]], pos.dst[i]);
    for (size_t q = i * 8; q < i * 8 + 8; ++q) {
      EXPECT_EQ(triples.count({pos.src[i], pos.types[i], ids[b.dst_neg_index[q]]}), 0u)
          << "negative triple " << q << " is a training triple";
    }
  }
  const MiniBatch& s = b.subgraph;
  ASSERT_EQ(s.edge_types.size(), s.row.size());
  ASSERT_GT(s.row.size(), 512u);
  std::set<int64_t> seeds(pos.original_edges.begin(), pos.original_edges.end());
  for (size_t k = 0; k < s.row.size(); ++k) {
    int64_t e = t.original_edge_id(s.edge_ids[k]);
    EXPECT_EQ(kg.edges.type[e], s.edge_types[k]);
    EXPECT_EQ(seeds.count(e), 0u) << "a seed triple was sampled";
  }
  expect_edges_exist(kg, t, s);
}

TEST(LinkSamplerTest, DisjointTemporalTreesRespectTheirPairsTime) {
  Dataset d = sbm_graph();
  Topology t = topology_from_dataset(d);
  std::vector<int64_t> node_time(d.num_nodes);
  for (int64_t v = 0; v < d.num_nodes; ++v) node_time[v] = (v * 37) % 100;
  Positives pos = every_kth_edge(d, t, 30, 71);
  std::vector<int64_t> times(30);
  for (int i = 0; i < 30; ++i) times[i] = 20 + 2 * i;
  LinkSamplerConfig c = link_config({4, 3}, NegativeMode::kTriplet);
  c.negatives.per_positive = 2;
  c.sampler.disjoint = true;
  c.sampler.temporal = TemporalMode::kNodeTime;
  c.sampler.node_time = ArrayRef::from_vector(node_time);
  LinkInput in = pos.input();
  in.times = times;
  LinkBatch b = LinkSampler(t, c).sample(in, {1, 0, 0});
  // Each endpoint grows its own tree: 2 per positive and 2 negatives.
  EXPECT_EQ(b.subgraph.batch_size, 30 * 4);
  // The tree of endpoint q: pairs first (2 per positive), then the negatives in order.
  auto time_of_tree = [&](int64_t tree) { return tree < 60 ? times[tree / 2] : times[(tree - 60) / 2]; };
  const MiniBatch& s = b.subgraph;
  ASSERT_FALSE(s.row.empty());
  for (size_t k = 0; k < s.row.size(); ++k) {
    ASSERT_EQ(s.batch[s.row[k]], s.batch[s.col[k]]);
    ASSERT_LE(node_time[s.node_ids[s.row[k]]], time_of_tree(s.batch[s.col[k]]));
  }
  EXPECT_THROW(LinkSampler(t, c).sample(pos.input(), {}), UsageError);
}

TEST(LinkSamplerTest, InvalidInputsAreNamed) {
  Dataset d = sbm_graph(200);
  Topology t = topology_from_dataset(d);
  LinkSamplerConfig c = link_config({2}, NegativeMode::kBinary);
  LinkSampler sampler(t, c);
  std::vector<int64_t> a{1, 2, 3}, b{4, 5}, outside{1, 2, 200}, negative{-1, 0, 0};
  auto expect_usage_error = [&](LinkInput in, const std::string& needle) {
    try {
      sampler.sample(in, {});
      ADD_FAILURE() << "no error for " << needle;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_usage_error({a, b, {}, {}, {}}, "3 sources but 2 destinations");
  expect_usage_error({a, outside, {}, {}, {}}, "node 200, outside the graph");
  expect_usage_error({negative, a, {}, {}, {}}, "node -1");
  std::vector<int32_t> types{0, 0, 0};
  expect_usage_error({a, a, types, {}, {}}, "edge types given for a graph without edge types");
  expect_usage_error({a, a, {}, b, {}}, "edge_ids has 2 entries for 3 seed edges");
  std::vector<int64_t> far_ids{0, 1, 1 << 30};
  expect_usage_error({a, a, {}, far_ids, {}}, "edge id 1073741824");

  LinkSamplerConfig bad = c;
  bad.negatives.ratio = -1;
  EXPECT_THROW(LinkSampler(t, bad), UsageError);
  bad = link_config({2}, NegativeMode::kTriplet);
  bad.negatives.per_positive = 0;
  EXPECT_THROW(LinkSampler(t, bad), UsageError);
  bad = c;
  bad.exclude_reverse_edges = true;
  EXPECT_THROW(LinkSampler(t, bad), UsageError);
  NegativeSampling strict;
  strict.strict = true;
  EXPECT_THROW(make_link_seeds({a, a, {}, {}, {}}, strict, NegativeNodes(200), {}), UsageError);
  EXPECT_THROW(has_edge(t, 0, 200, 0), Error);

  // A subgraph sampled from other seeds cannot be labelled with these pairs.
  LinkSeeds seeds = make_link_seeds({a, a, {}, {}, {}}, NegativeSampling{}, NegativeNodes(200), {});
  SubgraphBuilder builder(false);
  builder.start(a);
  EXPECT_THROW(assemble_link_batch(seeds, builder.finish()), Error);
}

// ---- Partition invariance ----

// A link batch in original ids: what must not depend on partitioning.
struct OriginalLinkBatch {
  testing::OriginalBatch subgraph;
  std::vector<int64_t> label_index, src_index, dst_pos_index, dst_neg_index;
  std::vector<float> labels;
  std::vector<int32_t> types;
  int64_t unverified = 0;
  bool operator==(const OriginalLinkBatch& o) const {
    return subgraph == o.subgraph && label_index == o.label_index && src_index == o.src_index &&
           dst_pos_index == o.dst_pos_index && dst_neg_index == o.dst_neg_index &&
           labels == o.labels && types == o.types && unverified == o.unverified;
  }
};

OriginalLinkBatch to_original(const LinkBatch& b, const std::function<int64_t(int64_t)>& node,
                              const std::function<int64_t(int64_t)>& edge) {
  OriginalLinkBatch o;
  o.subgraph = testing::to_original(b.subgraph, node, edge);
  o.label_index = b.edge_label_index;
  o.src_index = b.src_index;
  o.dst_pos_index = b.dst_pos_index;
  o.dst_neg_index = b.dst_neg_index;
  o.labels = b.edge_label;
  o.types = b.edge_types;
  o.unverified = b.num_unverified_negatives;
  return o;
}

// Samples a link batch across the parts of a partition folder as a distributed sampler
// does: negatives over the node map, edge tests routed to the dst's owner, every hop's
// frontier split by owner and joined back, the seed edges filtered from the joined hop.
OriginalLinkBatch sample_link_partitioned(const std::string& dir, const LinkSamplerConfig& config,
                                          const Positives& original, bool with_ids, bool typed,
                                          const SampleKey& key) {
  testing::PartitionedGraph graph(dir);
  const PartitionBook& book = graph.book();
  const auto& parts = graph.parts();
  PartitionFolder folder(dir);
  ArrayRef node_map = ArrayRef::from_mapped(folder.node_map());
  NegativeNodes nodes(book.num_nodes(), node_map);
  if (typed) {
    std::vector<int32_t> node_type(book.num_nodes());
    for (const auto& t : parts) {
      for (int64_t g = t.node_begin(); g < t.node_end(); ++g) node_type[t.original_node_id(g)] = t.node_type(g);
    }
    nodes = NegativeNodes(std::move(node_type), parts[0].edge_type_ends(), node_map);
  }
  EdgeTest is_edge = [&](int64_t src, int64_t dst, int32_t type) {
    return has_edge(graph.owner_of_node(dst), src, dst, type);
  };

  Positives global;
  for (size_t i = 0; i < original.src.size(); ++i) {
    global.src.push_back(graph.global_of_original()[original.src[i]]);
    global.dst.push_back(graph.global_of_original()[original.dst[i]]);
    global.edge_ids.push_back(graph.global_edge_of_original(original.original_edges[i]));
  }
  global.types = original.types;
  LinkInput input = global.input(with_ids, typed);
  LinkSeeds seeds = make_link_seeds(input, config.negatives, nodes, key, is_edge);
  SeedEdgeFilter filter;
  if (config.exclude_seed_edges) filter.reset(input, config.exclude_reverse_edges);

  SubgraphBuilder builder(config.sampler.disjoint);
  builder.start(seeds.endpoints, seeds.endpoint_times);
  std::vector<SamplerConfig> configs(parts.size(), config.sampler);
  graph.sample_hops(builder, configs, key,
                    [&](HopOutput& joined) { filter.apply(builder.frontier_nodes(), joined); });
  LinkBatch b = assemble_link_batch(std::move(seeds), builder.finish());
  return to_original(
      b, [&](int64_t v) { return graph.original_of_global()[v]; },
      [&](int64_t e) { return graph.original_edge(e); });
}

void expect_link_partition_invariant(const Dataset& d, const LinkSamplerConfig& config, const Positives& pos,
                                     bool with_ids, bool typed) {
  const SampleKey key{11, 2, 5};
  Topology t = topology_from_dataset(d);
  LinkBatch in_memory = LinkSampler(t, config).sample(pos.input(with_ids, typed), key);
  OriginalLinkBatch reference = to_original(
      in_memory, [](int64_t v) { return v; }, [&](int64_t e) { return t.original_edge_id(e); });
  ASSERT_GT(reference.subgraph.edges.size(), pos.src.size());
  TempDir tmp;
  for (auto method : {PartitionMethod::kMetis, PartitionMethod::kRandom}) {
    PartitionOptions options;
    options.num_parts = 2;
    options.method = method;
    std::string dir = tmp / partition_method_name(method);
    partition_dataset(d, options, dir);
    EXPECT_TRUE(sample_link_partitioned(dir, config, pos, with_ids, typed, key) == reference)
        << partition_method_name(method);
  }
}

TEST(LinkPartitionInvarianceTest, BinaryStrictExcludingSeedsSameInOneAndTwoParts) {
  Dataset d = sbm_graph(3000);
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 128, 211);
  LinkSamplerConfig c = link_config({10, 5}, NegativeMode::kBinary);
  c.negatives.ratio = 2;
  c.negatives.strict = true;
  c.exclude_seed_edges = true;
  for (bool with_ids : {false, true}) {
    c.exclude_reverse_edges = with_ids;
    expect_link_partition_invariant(d, c, pos, with_ids, false);
  }
}

TEST(LinkPartitionInvarianceTest, TripletSameInOneAndTwoParts) {
  Dataset d = sbm_graph(3000);
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 96, 307);
  LinkSamplerConfig c = link_config({-1, 4}, NegativeMode::kTriplet);
  c.negatives.per_positive = 3;
  c.exclude_seed_edges = true;
  expect_link_partition_invariant(d, c, pos, true, false);
}

TEST(LinkPartitionInvarianceTest, TypedNegativesSameInOneAndTwoParts) {
  HeteroOptions o;
  o.num_papers = 1500;
  o.num_authors = 800;
  o.num_venues = 10;
  Dataset d = generate_hetero(o);
  Topology t = topology_from_dataset(d);
  Positives pos = every_kth_edge(d, t, 100, 97);
  LinkSamplerConfig c;
  c.sampler.fanouts.assign(d.edge_types.size(), {4, 2});
  c.negatives.ratio = 1.5;
  c.negatives.strict = true;
  c.exclude_seed_edges = true;
  expect_link_partition_invariant(d, c, pos, false, true);
}

}  // namespace
}  // namespace partita
