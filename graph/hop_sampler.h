// One-hop neighbour sampling over a partition's topology: the kernel every sampler calls,
// local or distributed, so their outputs are identical by construction.
//
// Partition invariance: the neighbours chosen for a node depend only on (job seed, epoch,
// batch, hop, the node's original id [, its tree in disjoint mode]) and on its neighbour
// list in canonical order (original edge id), or for temporal sampling in time order
// (graph/time_order.h: by time, then canonical order). Neither the partition count, nor
// the partition that samples the node, nor the partitioner's relabelling changes them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/array_ref.h"
#include "base/span.h"
#include "graph/topology.h"

namespace partita {

class TimeOrder;

// Where a batch is in the job: together with the hop and node it keys all randomness.
struct SampleKey {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t batch = 0;
};

enum class TemporalMode {
  kNone,
  kNodeTime,  // a neighbour qualifies if its node time <= the seed's time
  kEdgeTime,  // ... if the edge's time <= the seed's time
};

enum class TemporalStrategy {
  kUniform,  // uniformly among the qualifying neighbours
  kLast,     // the most recent ones
};

struct SamplerConfig {
  // fanouts[edge_type][hop]: neighbours sampled per node; -1 takes them all. One row for
  // homogeneous graphs. Every row has the same number of hops.
  std::vector<std::vector<int>> fanouts;
  bool replace = false;   // sample with replacement
  bool disjoint = false;  // every seed grows its own tree (required by temporal sampling)
  // Draws keyed without the hop: a node's neighbours are the same at whichever hop the
  // batch reaches it (given equal fanouts), so the tree sampled below a node does not
  // depend on the batch's other seeds. Link-prediction jobs use it: a step's positives are
  // then encoded alike whether one trainer samples them all or two trainers share them.
  bool hop_independent = false;
  // Edge weights (float32, by global edge id - edge_begin): neighbours are then drawn with
  // probability proportional to their weight. Empty = uniform.
  ArrayRef edge_weight;
  TemporalMode temporal = TemporalMode::kNone;
  TemporalStrategy temporal_strategy = TemporalStrategy::kUniform;
  // int64 node times by global node id (all nodes: neighbours may live elsewhere).
  ArrayRef node_time;
  // int64 edge times by global edge id - edge_begin.
  ArrayRef edge_time;
  // Temporal sampling: the partition's columns ranked by the mode's times, built by
  // order_by_time once the times are set; copies of the config share it.
  std::shared_ptr<const TimeOrder> time_order;

  int num_hops() const { return fanouts.empty() ? 0 : static_cast<int>(fanouts[0].size()); }
  // A hash of what decides the draws (fanouts, modes, whether weighted), not of the
  // per-partition arrays: sampler and partitions must agree on it, or batches silently
  // differ from the single-partition ones.
  uint64_t fingerprint() const;
  // Throws UsageError naming the problem (e.g. temporal sampling without disjoint mode);
  // Error when a temporal config has no time order for `topology`.
  void validate(const Topology& topology) const;
  // Temporal configs: builds time_order for `topology` from the times, unless it already
  // ranks that partition by this mode (so calling it again is free). Throws UsageError when
  // the times do not cover `topology`. No-op without time.
  void order_by_time(const Topology& topology);
};

// "15,10,5" -> {15, 10, 5}; -1 means all neighbours. Throws UsageError naming `what` and
// the bad item.
std::vector<int> parse_fanouts(const std::string& text, const std::string& what);

// SamplerConfig::fanouts for a graph with `num_edge_types` edge types from the text the
// partition and sampler actors get (their "fanouts" setting): one list ("15,10,5") for
// every edge type, or one list per edge type in type order, separated by ';'
// ("15,10;0,0;5,5"), in which 0 leaves the type out at that hop. Throws UsageError naming
// `what` and the problem: a bad item, a row count that is not the edge type count, rows of
// different lengths.
std::vector<std::vector<int>> parse_fanout_table(const std::string& text, int num_edge_types,
                                                 const std::string& what);

// The frontier nodes one partition samples at one hop (all owned by it).
struct HopInput {
  Span<const int64_t> nodes;  // global ids
  Span<const int64_t> trees;  // disjoint mode: each node's tree; empty otherwise
  Span<const int64_t> times;  // temporal: each node's time bound; empty otherwise
};

// The sampled neighbours of each input node i: entries [offsets[i], offsets[i+1]).
struct HopOutput {
  std::vector<int64_t> offsets;
  std::vector<int64_t> neighbors;   // global node ids
  std::vector<int64_t> edge_ids;    // global edge ids
  std::vector<int32_t> edge_types;  // heterogeneous graphs only

  void clear();
};

// Samples one hop for `input` into `out` (cleared and reused: repeated calls do not allocate).
// Throws Error naming a node `topology` does not own, or (temporal) no time order for `topology`.
void sample_hop(const Topology& topology, const SamplerConfig& config, const SampleKey& key,
                int hop, const HopInput& input, HopOutput& out);

}  // namespace partita
