// Link-prediction mini-batches, as PyG's LinkNeighborLoader and GraphBolt produce them: a
// batch of positive seed edges plus random negatives, and the subgraph sampled around all
// their endpoints, with the index of every positive/negative pair in the batch.
//
// Like node sampling, a link batch is split into steps the distributed sampler reuses:
//   make_link_seeds      draws the negatives and lists the endpoints (the seed nodes);
//   SubgraphBuilder      + sample_hop, exactly as for node batches, from those seeds;
//   SeedEdgeFilter       drops the seed edges from each sampled hop (exclude_seed_edges);
//   assemble_link_batch  turns the endpoints' local indices into label indices.
// LinkSampler chains them over one topology that holds the whole graph: the reference.
//
// Partition invariance: negatives are drawn as *original* node ids (uniformly over all
// nodes, or over a node type's original ids in increasing order) and only then mapped to
// global ids, with draws keyed by (seed, epoch, batch, negative stream, negative index);
// strict-mode redraws depend only on whether an edge exists, and seed edges are removed
// after sampling, by identity, without touching the random draws. So the batch in
// original ids does not depend on how the graph is partitioned.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/array_ref.h"
#include "base/random.h"
#include "base/span.h"
#include "graph/mini_batch.h"
#include "graph/hop_sampler.h"
#include "graph/node_map.h"
#include "graph/subgraph_builder.h"
#include "graph/topology.h"

namespace partita {

enum class NegativeMode {
  kNone,     // the positives only, all labelled 1
  kBinary,   // random (src, dst) pairs labelled 0 beside the positives labelled 1
  kTriplet,  // for each positive (src, dst), k random negative destinations
};

struct NegativeSampling {
  NegativeMode mode = NegativeMode::kBinary;
  // Binary: ceil(ratio * P) negatives for P positives (PyG's neg_sampling_ratio).
  double ratio = 1.0;
  // Triplet: negative destinations per positive (>= 1).
  int64_t per_positive = 1;
  // Strict: a negative that is a true edge is drawn again, up to max_retries times; after
  // that the last draw is kept and counted in LinkBatch::num_unverified_negatives.
  // Fast (strict = false): no check, as PyG's default.
  bool strict = false;
  int max_retries = 10;

  // Throws UsageError naming the field (negative ratio, per_positive < 1, ...).
  void validate() const;
};

// Whether src -> dst is an edge of type edge_type, in global ids: strict mode's test.
// edge_type is the pair's type, or -1 (any type) when the batch is untyped. A
// knowledge-graph negative (h, r, t') is false only within its relation, hence the type.
using EdgeTest = std::function<bool(int64_t src, int64_t dst, int32_t edge_type)>;

// The local edge test: a scan of dst's in-edge column in `topology`, which must own dst
// (throws Error naming dst otherwise). A distributed sampler routes the test for a remote
// dst to its owner and wraps both in an EdgeTest.
bool has_edge(const Topology& topology, int64_t src, int64_t dst, int32_t edge_type);

// The nodes negatives are drawn from, in original ids, with the map to global ids.
class NegativeNodes {
 public:
  NegativeNodes() = default;
  // All num_nodes nodes. to_global: int64 [num_nodes], original id -> global id (a partition
  // folder's node_map); empty when global ids are original ids.
  explicit NegativeNodes(int64_t num_nodes, ArrayRef to_global = {});
  // Typed graphs: a negative endpoint is drawn among the nodes of the type its edge type
  // expects there. node_type: int32 [num_nodes] by original id; ends: one per edge type.
  NegativeNodes(std::vector<int32_t> node_type, std::vector<EdgeTypeEnds> ends,
                ArrayRef to_global = {});
  // The graph of a topology that holds every node (the reference sampler's case).
  static NegativeNodes of(const Topology& whole_graph);

  int64_t num_nodes() const { return num_nodes_; }
  bool typed() const { return !ends_.empty(); }
  int num_edge_types() const { return typed() ? static_cast<int>(ends_.size()) : 1; }

  // A uniformly drawn source (or destination) for an edge of type edge_type, as a global
  // id: among the nodes of the type's end, or among all nodes when the graph is untyped or
  // edge_type is -1.
  int64_t draw_src(Rng& rng, int32_t edge_type) const { return draw(rng, edge_type, false); }
  int64_t draw_dst(Rng& rng, int32_t edge_type) const { return draw(rng, edge_type, true); }

 private:
  int64_t draw(Rng& rng, int32_t edge_type, bool dst) const;
  int64_t global(int64_t original) const { return to_global_.empty() ? original : to_global_[original]; }

  int64_t num_nodes_ = 0;
  ArrayRef to_global_ref_;
  Span<const int64_t> to_global_;
  std::vector<EdgeTypeEnds> ends_;
  // Per node type, its nodes' original ids in increasing order: the canonical order that
  // makes "the i-th node of type t" mean the same node in every partitioning.
  std::vector<std::vector<int64_t>> of_type_;
};

// A batch of positive seed edges, in global ids.
struct LinkInput {
  Span<const int64_t> src;
  Span<const int64_t> dst;
  Span<const int32_t> edge_types;  // one per edge, or empty (untyped graphs)
  // The seed edges' global edge ids, or empty: with exclude_seed_edges, exactly these
  // edges are excluded; without them, every edge src -> dst (of the type, if typed).
  Span<const int64_t> edge_ids;
  Span<const int64_t> times;  // temporal sampling: one time per edge, or empty
};

// The seeds of a link batch: the labelled pairs and the endpoints to sample from.
struct LinkSeeds {
  NegativeMode mode = NegativeMode::kNone;
  int64_t num_positives = 0;
  int64_t per_positive = 0;  // triplet: negatives per positive
  // Labelled pairs, global ids: the positives, then (binary) the negatives.
  std::vector<int64_t> src, dst;
  std::vector<int32_t> edge_types;  // per pair; empty when untyped
  std::vector<int64_t> neg_dst;     // triplet: [P, per_positive] row-major
  // The seed nodes, in order: every pair's src then dst, then (triplet) neg_dst. Not
  // deduplicated: SubgraphBuilder::start does that (first appearance), and its
  // input_local then gives each endpoint's local index.
  std::vector<int64_t> endpoints;
  std::vector<int64_t> endpoint_times;  // temporal: each endpoint's pair's time
  int64_t num_unverified_negatives = 0;
};

// Validates `input` (sizes, ids and types in range) and draws the negatives. strict mode
// needs is_edge; fast mode ignores it. Throws UsageError naming the problem.
LinkSeeds make_link_seeds(const LinkInput& input, const NegativeSampling& negatives,
                          const NegativeNodes& nodes, const SampleKey& key,
                          const EdgeTest& is_edge = {});

// Removes the seed edges from sampled hops (GraphBolt's exclude_seed_edges). The filter
// runs after sampling and matches edges by identity (edge id, or (src, dst[, type])), so
// the random draws are those of the unfiltered batch and partition invariance holds; a
// node that drew a seed edge keeps one neighbour fewer, as in GraphBolt.
class SeedEdgeFilter {
 public:
  // Excludes the input's seed edges: by edge id when input.edge_ids is given, else every
  // edge src -> dst (of the input's type, when typed). reverse: also every edge dst -> src
  // of the same type (the other direction of an undirected edge; matched by its ends, as
  // its id is unknown). `input` must have passed make_link_seeds' checks.
  void reset(const LinkInput& input, bool reverse);
  void clear();
  bool empty() const { return ids_.size() == 0 && pairs_.empty(); }

  // Drops the excluded edges from `hop`, whose neighbour lists belong to `frontier`, in
  // order (what sample_hop or FrontierSplit::join produce for the builder's frontier).
  void apply(Span<const int64_t> frontier, HopOutput& hop) const;

 private:
  struct Pair {
    int64_t dst, src;
    int32_t type;  // -1: any type
  };
  bool excluded(int64_t src, int64_t dst, int64_t edge_id, int32_t type) const;

  NodeMap ids_;  // excluded edge ids (the value is unused)
  std::vector<Pair> pairs_;  // sorted by dst: one node's pairs are contiguous
  NodeMap first_pair_;       // dst -> index of its first pair
};

// A link-prediction mini-batch. All indices are local: positions in subgraph.node_ids.
struct LinkBatch {
  MiniBatch subgraph;  // seeds: the endpoints, deduplicated unless disjoint
  NegativeMode mode = NegativeMode::kNone;
  int64_t num_positives = 0;
  // Binary and none: [2, P+N] row-major (sources, then destinations), positives first;
  // edge_label is 1 for the positives and 0 for the negatives (float, as PyG's, for BCE).
  std::vector<int64_t> edge_label_index;
  std::vector<float> edge_label;
  // Triplet: src_index [P], dst_pos_index [P], dst_neg_index [P, per_positive] row-major.
  std::vector<int64_t> src_index, dst_pos_index, dst_neg_index;
  int64_t per_positive = 0;
  // The edge type of each labelled pair (binary and none: P+N; triplet: P); empty when
  // untyped. Negatives take the type of the positive they were drawn for.
  std::vector<int32_t> edge_types;
  int64_t num_unverified_negatives = 0;
};

// The label step: maps the seeds' pairs to local indices through subgraph.input_local
// (the subgraph must have been started from seeds.endpoints). Throws Error if it was not.
LinkBatch assemble_link_batch(LinkSeeds seeds, MiniBatch subgraph);

struct LinkSamplerConfig {
  SamplerConfig sampler;  // the subgraph around the endpoints
  NegativeSampling negatives;
  bool exclude_seed_edges = false;
  bool exclude_reverse_edges = false;  // with exclude_seed_edges: also dst -> src
};

// The reference link sampler over one topology that owns every node (the whole graph in
// one partition): strict mode tests edges with has_edge on it.
class LinkSampler {
 public:
  // Throws UsageError when the config does not fit the topology. A temporal config gets
  // its time order here unless it carries one (SamplerConfig::order_by_time).
  LinkSampler(const Topology& topology, LinkSamplerConfig config);

  LinkBatch sample(const LinkInput& input, const SampleKey& key);

 private:
  const Topology& topology_;
  LinkSamplerConfig config_;
  NegativeNodes nodes_;
  EdgeTest is_edge_;
  SubgraphBuilder builder_;
  SeedEdgeFilter filter_;
  HopOutput hop_;
};

}  // namespace partita
