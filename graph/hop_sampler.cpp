// One-hop sampling: the general path (weights, replacement, any edge types and times) and
// the dispatch to the fast kernels of the common cases (graph/hop_kernels.h). Every choice
// is drawn from a stream keyed by (batch key, hop, original node id [, tree] [, edge type])
// over the node's neighbours in canonical order (temporal sampling: over the ranks of the
// qualifying ones in time order, graph/time_order.h), and chosen neighbours are emitted in
// canonical order: so the result is a function of the graph and the key alone, whoever
// samples, and whichever path.
#include "graph/hop_sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "base/random.h"
#include "graph/draws.h"
#include "graph/hop_kernels.h"
#include "graph/time_order.h"

namespace partita {

void HopOutput::clear() {
  offsets.assign(1, 0);
  neighbors.clear();
  edge_ids.clear();
  edge_types.clear();
}

namespace {

// The times a temporal config reads cover `topology`; throws UsageError naming the mode.
void check_times(const SamplerConfig& c, const Topology& topology) {
  if (c.temporal == TemporalMode::kNodeTime &&
      (c.node_time.dtype() != DType::kInt64 || c.node_time.rows() != topology.book().num_nodes())) {
    throw UsageError("node-time sampling needs int64 node times for all nodes of the graph");
  }
  if (c.temporal == TemporalMode::kEdgeTime &&
      (c.edge_time.dtype() != DType::kInt64 || c.edge_time.rows() != topology.num_edges())) {
    throw UsageError("edge-time sampling needs int64 edge times for the partition's edges");
  }
}

}  // namespace

void SamplerConfig::validate(const Topology& topology) const {
  if (fanouts.empty()) throw UsageError("fanouts: at least one hop is needed");
  if (static_cast<int>(fanouts.size()) != topology.num_edge_types()) {
    throw UsageError("fanouts: " + std::to_string(fanouts.size()) + " rows given, the graph has " +
                     std::to_string(topology.num_edge_types()) + " edge types");
  }
  for (const auto& row : fanouts) {
    if (row.size() != fanouts[0].size()) {
      throw UsageError("fanouts: every edge type needs the same number of hops");
    }
    for (int f : row) {
      if (f < -1) throw UsageError("fanouts: " + std::to_string(f) + " is not a fanout (use -1 for all)");
    }
  }
  if (!edge_weight.empty()) {
    if (edge_weight.dtype() != DType::kFloat32 || edge_weight.rows() != topology.num_edges()) {
      throw UsageError("edge weights must be float32, one per edge of the partition");
    }
  }
  if (temporal != TemporalMode::kNone && !disjoint) {
    throw UsageError("temporal sampling needs disjoint mode: a node reached from two seeds "
                     "would have two time bounds");
  }
  check_times(*this, topology);
  if (temporal != TemporalMode::kNone && (time_order == nullptr || !time_order->fits(topology, temporal))) {
    throw Error("temporal sampling needs the config's time order for partition " + std::to_string(topology.part()) +
                " (SamplerConfig::order_by_time)");
  }
}

void SamplerConfig::order_by_time(const Topology& topology) {
  if (temporal == TemporalMode::kNone || (time_order != nullptr && time_order->fits(topology, temporal))) return;
  check_times(*this, topology);
  const bool by_edge = temporal == TemporalMode::kEdgeTime;
  time_order = std::make_shared<const TimeOrder>(topology, temporal,
                                                 by_edge ? Span<const int64_t>() : node_time.as<int64_t>(),
                                                 by_edge ? edge_time.as<int64_t>() : Span<const int64_t>());
}

namespace {

// "15,10,5" -> {15, 10, 5}; 0 only where `zero_allowed`.
std::vector<int> parse_fanout_list(const std::string& text, const std::string& whole, bool zero_allowed,
                                   const std::string& what) {
  std::vector<int> fanouts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || value < -1 || (value == 0 && !zero_allowed)) {
      throw UsageError(what + ": '" + item + "' in '" + whole + "' is not a fanout (a positive count" +
                       (zero_allowed ? ", 0 for none" : "") + ", or -1 for all)");
    }
    fanouts.push_back(value);
    if (comma == std::string::npos) return fanouts;
    start = comma + 1;
  }
}

}  // namespace

std::vector<int> parse_fanouts(const std::string& text, const std::string& what) {
  return parse_fanout_list(text, text, false, what);
}

std::vector<std::vector<int>> parse_fanout_table(const std::string& text, int num_edge_types,
                                                 const std::string& what) {
  if (text.find(';') == std::string::npos) {
    return std::vector<std::vector<int>>(static_cast<size_t>(num_edge_types), parse_fanouts(text, what));
  }
  std::vector<std::vector<int>> table;
  size_t start = 0;
  while (true) {
    const size_t semicolon = text.find(';', start);
    table.push_back(parse_fanout_list(
        text.substr(start, semicolon == std::string::npos ? std::string::npos : semicolon - start), text, true, what));
    if (table.back().size() != table.front().size()) {
      throw UsageError(what + ": edge type " + std::to_string(table.size() - 1) + " has " +
                       std::to_string(table.back().size()) + " hops in '" + text + "', edge type 0 has " +
                       std::to_string(table.front().size()));
    }
    if (semicolon == std::string::npos) break;
    start = semicolon + 1;
  }
  if (static_cast<int>(table.size()) != num_edge_types) {
    throw UsageError(what + ": '" + text + "' has fanouts for " + std::to_string(table.size()) +
                     " edge types, the graph has " + std::to_string(num_edge_types));
  }
  return table;
}

uint64_t SamplerConfig::fingerprint() const {
  uint64_t h = mix64(0x434F4E464947ull /* "CONFIG" */);
  for (const auto& row : fanouts) {
    h = mix64(h, row.size());
    for (int f : row) h = mix64(h, static_cast<uint64_t>(static_cast<int64_t>(f)));
  }
  h = mix64(h, replace, disjoint);
  if (hop_independent) h = mix64(h, 0x484F50ull /* "HOP" */);
  h = mix64(h, static_cast<uint64_t>(temporal), static_cast<uint64_t>(temporal_strategy));
  return mix64(h, !edge_weight.empty());
}

namespace {

uint64_t hop_key(const SampleKey& key, int hop) {
  return mix64(mix64(key.seed, key.epoch, key.batch), static_cast<uint64_t>(hop));
}

// Everything the per-node selection needs, resolved once per call.
struct Context {
  Context(const Topology& t, const SamplerConfig& c, uint64_t hop_key, int h)
      : topology(t), config(c), key(hop_key), hop(h) {}

  const Topology& topology;
  const SamplerConfig& config;
  uint64_t key;  // the hop's key
  int hop;
  Span<const float> weight;
  // The column being sampled: its CSC and the position of its first entry.
  const CscColumns* csc = nullptr;
  int64_t column_begin = 0;
  // Positions (in the CSC arrays) of the column's entries that qualify, in canonical order.
  std::vector<int64_t> candidates;
  // Scratch, reused across nodes.
  std::vector<int64_t> picks, ranks;
  std::vector<std::pair<double, int64_t>> keyed;
  std::vector<double> cumulative;
};

int64_t edge_id_at(const Context& c, int64_t position) {
  return c.csc->edge_ids.empty() ? c.topology.edge_begin() + position
                                 : c.csc->edge_ids.as<int64_t>()[position];
}

double weight_at(const Context& c, int64_t position) {
  return static_cast<double>(c.weight[edge_id_at(c, position) - c.topology.edge_begin()]);
}

// Drawn with probability proportional to the edge weight. Without replacement this is
// Efraimidis-Spirakis: the k smallest Exp(1)/w keys, each key hashed from the node's key and
// the entry's rank in its column (not its array position, which depends on partitioning).
void select_weighted(Context& c, Rng& rng, uint64_t node_key, int64_t fanout,
                     std::vector<int64_t>& chosen) {
  const int64_t n = static_cast<int64_t>(c.candidates.size());
  if (c.config.replace) {
    c.cumulative.resize(n);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) c.cumulative[i] = total += std::max(0.0, weight_at(c, c.candidates[i]));
    if (total <= 0) return;
    for (int64_t i = 0; i < fanout; ++i) {
      double r = rng.uniform() * total;
      int64_t at = std::upper_bound(c.cumulative.begin(), c.cumulative.end(), r) - c.cumulative.begin();
      chosen.push_back(std::min(at, n - 1));
    }
    return;
  }
  c.keyed.clear();
  for (int64_t i = 0; i < n; ++i) {
    double w = weight_at(c, c.candidates[i]);
    if (!(w > 0)) continue;
    uint64_t h = mix64(node_key, static_cast<uint64_t>(c.candidates[i] - c.column_begin));
    double u = (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;
    c.keyed.emplace_back(-std::log(u) / w, i);
  }
  int64_t take = std::min<int64_t>(fanout, static_cast<int64_t>(c.keyed.size()));
  std::partial_sort(c.keyed.begin(), c.keyed.begin() + take, c.keyed.end());
  for (int64_t i = 0; i < take; ++i) chosen.push_back(c.keyed[i].second);
  std::sort(chosen.begin(), chosen.end());
}

// Picks, as indices into c.candidates, the neighbours to keep (non-temporal columns, and the
// weighted draws of temporal ones).
void select(Context& c, Rng& rng, uint64_t node_key, int64_t fanout, std::vector<int64_t>& chosen) {
  const int64_t n = static_cast<int64_t>(c.candidates.size());
  chosen.clear();
  if (n == 0 || fanout == 0) return;
  if (fanout < 0 || (!c.config.replace && fanout >= n)) {
    for (int64_t i = 0; i < n; ++i) chosen.push_back(i);
  } else if (!c.weight.empty()) {
    select_weighted(c, rng, node_key, fanout, chosen);
  } else if (c.config.replace) {
    for (int64_t i = 0; i < fanout; ++i) chosen.push_back(static_cast<int64_t>(rng.below(n)));
  } else {
    choose_distinct(rng, n, fanout, chosen);
  }
}

// Weighted temporal `uniform` sampling (every other temporal draw is sample_temporal's):
// the qualifying entries are the ranks [0, count) of the column's time order
// (graph/time_order.h), and the weighted draws need every one's weight, so they get the
// qualifying positions in canonical order and select's draws, as without time. `positions`
// gets the picks' CSC positions in canonical order (with replacement: in draw order), as
// select emits them.
void select_weighted_in_time(Context& c, Rng& rng, uint64_t type_key, int type, int64_t begin, int64_t end,
                             int64_t bound, int64_t fanout, std::vector<int64_t>& positions) {
  const TimeOrder& order = *c.config.time_order;
  const int64_t count = order.count_until(type, begin, end, bound);
  const TimeOrder::Entry* entry = order.entries(type).data() + begin;
  c.candidates.clear();
  for (int64_t r = 0; r < count; ++r) c.candidates.push_back(begin + entry[r].offset);
  std::sort(c.candidates.begin(), c.candidates.end());
  select(c, rng, type_key, fanout, c.ranks);
  positions.clear();
  for (int64_t i : c.ranks) positions.push_back(c.candidates[i]);
}

// The columns a node is sampled from: hetero, its type runs (the edge types it has in-edges
// of, in increasing type order); homogeneous, its one column.
Span<const TypeRun> columns_of(const Topology& t, int64_t local, TypeRun& homogeneous) {
  if (!t.is_hetero()) return {&homogeneous, 1};  // sample_node reads the bounds from csc(0)
  const int64_t* offsets = t.type_run_offsets().data();
  return {t.type_runs().data() + offsets[local], static_cast<size_t>(offsets[local + 1] - offsets[local])};
}

// The general path: any edge type, weights, replacement; of temporal sampling, the weighted
// `uniform` draws.
void sample_node(Context& c, int64_t node, int64_t tree, int64_t time_bound, HopOutput& out) {
  const Topology& t = c.topology;
  const int64_t local = node - t.node_begin();
  uint64_t node_key = mix64(c.key, static_cast<uint64_t>(t.original_node_id(node)));
  if (tree >= 0) node_key = mix64(node_key, static_cast<uint64_t>(tree));
  TypeRun homogeneous;
  for (const TypeRun& run : columns_of(t, local, homogeneous)) {
    const int32_t type = run.type;
    const CscColumns& csc = t.csc(type);
    const int fanout = c.config.fanouts[type][c.hop];
    auto indptr = csc.indptr.as<int64_t>();
    auto indices = csc.indices.as<int64_t>();
    const int64_t begin = indptr[local], end = indptr[local + 1];
    c.csc = &csc;
    c.column_begin = begin;
    uint64_t type_key = t.is_hetero() ? mix64(node_key, static_cast<uint64_t>(type)) : node_key;
    Rng rng(type_key);
    if (c.config.temporal == TemporalMode::kNone) {
      c.candidates.clear();
      for (int64_t pos = begin; pos < end; ++pos) c.candidates.push_back(pos);
      select(c, rng, type_key, fanout, c.picks);
      for (int64_t& i : c.picks) i = c.candidates[i];
    } else {
      select_weighted_in_time(c, rng, type_key, type, begin, end, time_bound, fanout, c.picks);
    }
    for (int64_t pos : c.picks) {
      out.neighbors.push_back(indices[pos]);
      out.edge_ids.push_back(edge_id_at(c, pos));
      if (t.is_hetero()) out.edge_types.push_back(type);
    }
  }
}

}  // namespace

void sample_hop(const Topology& topology, const SamplerConfig& config, const SampleKey& key,
                int hop, const HopInput& input, HopOutput& out) {
  out.clear();
  for (size_t i = 0; i < input.nodes.size(); ++i) {
    if (!topology.owns(input.nodes[i])) {
      throw Error("sample: node " + std::to_string(input.nodes[i]) + " is not in partition " +
                  std::to_string(topology.part()) + " [" + std::to_string(topology.node_begin()) +
                  ", " + std::to_string(topology.node_end()) + ")");
    }
  }
  if (hop < 0 || hop >= config.num_hops()) {
    throw Error("sample: hop " + std::to_string(hop) + " of " + std::to_string(config.num_hops()));
  }
  const uint64_t k = hop_key(key, config.hop_independent ? 0 : hop);
  out.offsets.reserve(input.nodes.size() + 1);
  if (!topology.is_hetero() && config.edge_weight.empty() && !config.replace &&
      config.temporal == TemporalMode::kNone) {
    int fanout = config.fanouts[0][hop];
    if (fanout > 0) {
      out.neighbors.reserve(input.nodes.size() * fanout);
      out.edge_ids.reserve(input.nodes.size() * fanout);
    }
    sample_uniform_homogeneous_hop(topology, k, fanout, input, out);
    return;
  }
  // The order's columns are indexed by this topology's CSC positions: another partition's
  // order would be read out of bounds.
  if (config.temporal != TemporalMode::kNone &&
      (config.time_order == nullptr || !config.time_order->fits(topology, config.temporal))) {
    throw Error("sample: temporal sampling of partition " + std::to_string(topology.part()) +
                " without the config's time order for it (SamplerConfig::order_by_time)");
  }
  if (config.temporal != TemporalMode::kNone && input.times.size() != input.nodes.size()) {
    throw Error("sample: temporal sampling of " + std::to_string(input.nodes.size()) + " nodes with " +
                std::to_string(input.times.size()) + " time bounds");
  }
  if (config.temporal != TemporalMode::kNone &&
      (config.edge_weight.empty() || config.temporal_strategy == TemporalStrategy::kLast)) {
    sample_temporal_hop(topology, config, k, hop, input, out);
    return;
  }
  Context c(topology, config, k, hop);
  if (!config.edge_weight.empty()) c.weight = config.edge_weight.as<float>();
  if (topology.is_hetero() && config.edge_weight.empty() && !config.replace &&
      config.temporal == TemporalMode::kNone) {
    sample_uniform_hetero_hop(topology, config, k, hop, input, out);
    return;
  }
  for (size_t i = 0; i < input.nodes.size(); ++i) {
    int64_t tree = input.trees.empty() ? -1 : input.trees[i];
    int64_t bound = input.times.empty() ? 0 : input.times[i];
    sample_node(c, input.nodes[i], tree, bound, out);
    out.offsets.push_back(static_cast<int64_t>(out.neighbors.size()));
  }
}

}  // namespace partita
