// The one-hop sampling kernel. Every choice is drawn from a stream keyed by (batch key,
// hop, original node id [, tree] [, edge type]) over the node's neighbours in canonical
// order (temporal sampling: over the ranks of the qualifying ones in time order,
// graph/time_order.h), and chosen neighbours are emitted in canonical order: so the result
// is a function of the graph and the key alone, whoever samples.
#include "graph/hop_sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "base/random.h"
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

// Floyd's algorithm: k distinct draws from [0, n) with exactly k random numbers. The
// membership test scans the picks, which beats any set for the fanouts GNNs use. The picks
// come sorted unless `sorted` is false (a caller that orders them by something else).
void choose_distinct(Rng& rng, int64_t n, int64_t k, std::vector<int64_t>& picks, bool sorted = true) {
  picks.clear();
  for (int64_t j = n - k; j < n; ++j) {
    int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    bool taken = std::find(picks.begin(), picks.end(), t) != picks.end();
    picks.push_back(taken ? j : t);
  }
  if (sorted) std::sort(picks.begin(), picks.end());
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

// The common case (homogeneous, uniform, no replacement, no time), software-pipelined:
// the neighbour lists live in a large array and every node's list is a cache miss, so the
// nodes are handled in blocks: first the positions of a block's picks are computed and
// prefetched (and the next block's column bounds), then the block's neighbours are read,
// by which time most of them have arrived. This overlaps the misses instead of paying them
// one after another.
void sample_uniform_homogeneous(const Topology& t, uint64_t key, int fanout, const HopInput& input,
                                HopOutput& out, std::vector<int64_t>& picks,
                                std::vector<int64_t>& positions) {
  const int64_t* indptr = t.csc(0).indptr.as<int64_t>().data();
  const int64_t* indices = t.csc(0).indices.as<int64_t>().data();
  const int64_t* orig = t.orig_node_ids().data();
  const int64_t node_begin = t.node_begin(), edge_begin = t.edge_begin();
  const size_t n = input.nodes.size();
  constexpr size_t kBlock = 32;
  for (size_t i = 0; i < std::min(n, kBlock); ++i) {
    __builtin_prefetch(indptr + (input.nodes[i] - node_begin));
    __builtin_prefetch(orig + (input.nodes[i] - node_begin));
  }
  for (size_t block = 0; block < n; block += kBlock) {
    const size_t block_end = std::min(n, block + kBlock);
    const int64_t emitted = static_cast<int64_t>(out.neighbors.size());
    positions.clear();
    for (size_t i = block; i < block_end; ++i) {
      if (i + kBlock < n) {
        const int64_t ahead = input.nodes[i + kBlock] - node_begin;
        __builtin_prefetch(indptr + ahead);
        __builtin_prefetch(orig + ahead);
      }
      const int64_t local = input.nodes[i] - node_begin;
      const int64_t begin = indptr[local], degree = indptr[local + 1] - begin;
      if (fanout < 0 || degree <= fanout) {
        for (int64_t pos = begin; pos < begin + degree; ++pos) positions.push_back(pos);
        for (int64_t pos = begin; pos < begin + degree; pos += 8) __builtin_prefetch(indices + pos);
      } else {
        uint64_t node_key = mix64(key, static_cast<uint64_t>(orig[local]));
        if (!input.trees.empty()) node_key = mix64(node_key, static_cast<uint64_t>(input.trees[i]));
        Rng rng(node_key);
        choose_distinct(rng, degree, fanout, picks);
        for (int64_t p : picks) {
          positions.push_back(begin + p);
          __builtin_prefetch(indices + begin + p);
        }
      }
      out.offsets.push_back(emitted + static_cast<int64_t>(positions.size()));
    }
    for (int64_t pos : positions) {
      out.neighbors.push_back(indices[pos]);
      out.edge_ids.push_back(edge_begin + pos);
    }
  }
}

// Temporal sampling, but for weighted `uniform` draws: any edge types, either strategy,
// with or without replacement. The draws are made over ranks of the columns' time order
// (graph/time_order.h), whose qualifying entries are the prefix [0, count): `last` takes the
// top ranks (the most recent; among equal times the later entry in canonical order),
// `uniform` draws ranks as select draws candidates (Floyd's, or independently with
// replacement; keyed as the general path keys a column). A column's picks are emitted in
// canonical order (with replacement: in draw order), its columns in type order, as the
// general path emits them.
//
// Software-pipelined over blocks of nodes, as sample_uniform_homogeneous and
// sample_uniform_hetero are: two blocks ahead a node's column bounds (homogeneous: indptr;
// heterogeneous: its type run offsets) are prefetched, one block ahead the first probe of
// its search, at the time order's estimate (homogeneous), or its type runs (heterogeneous).
// Then a block's columns are searched in lockstep (from the estimate's line, galloping by
// lines, then bisecting: graph/time_order.h), one line per column per round with the next
// one prefetched, so their cache misses overlap instead of each search paying its misses in a row;
// then each column's ranks are drawn and their entries (neighbour and offset side by
// side) prefetched; then read, and the picks ordered; then emitted.
template <bool kHetero, typename Time>
void sample_temporal(const Topology& t, const SamplerConfig& config, uint64_t key, int hop, const HopInput& input,
                     HopOutput& out, std::vector<int64_t>& ranks) {
  struct Column {
    const Time* time;  // its times (int64) or codes (uint32): TimeOrder::narrow
    const TimeOrder::Entry* entry;
    const uint32_t* neighbor_high;  // null: every neighbour's id is below 2^32
    const int64_t* edge_ids;  // null: edge_begin + position
    int fanout;
  };
  const TimeOrder& order = *config.time_order;
  std::vector<Column> columns;
  for (int type = 0; type < t.num_edge_types(); ++type) {
    const CscColumns& csc = t.csc(type);
    const Time* time;
    if constexpr (std::is_same_v<Time, uint32_t>) {
      time = order.codes(type).data();
    } else {
      time = order.times(type).data();
    }
    columns.push_back({time, order.entries(type).data(),
                       order.neighbor_high(type).empty() ? nullptr : order.neighbor_high(type).data(),
                       csc.edge_ids.empty() ? nullptr : csc.edge_ids.as<int64_t>().data(), config.fanouts[type][hop]});
  }
  constexpr bool hetero = kHetero;  // homogeneous: one column per node, edge ids by position, no edge types
  const bool last = config.temporal_strategy == TemporalStrategy::kLast;
  const bool replace = config.replace && !last;  // "the most recent k" has no replacement variant
  // Whether a homogeneous column whose qualifying prefix holds `count` entries is drawn from
  // (its node's original id then keys the draws): not under `last`, nor when the fanout
  // takes the prefix whole.
  const int fanout0 = config.fanouts[0][hop];
  const auto draws_need_key = [&](int64_t count) {
    return !last && fanout0 >= 0 && count > 0 && (replace || count > fanout0);
  };
  const int64_t* indptr = t.csc(0).indptr.as<int64_t>().data();  // homogeneous
  const int64_t* run_offsets = hetero ? t.type_run_offsets().data() : nullptr;
  const TypeRun* runs = hetero ? t.type_runs().data() : nullptr;
  const int64_t* bounds = hetero ? run_offsets : indptr;  // what locates a node's columns
  const int64_t* orig = t.orig_node_ids().data();
  const Time* time0 = columns[0].time;
  const int64_t node_begin = t.node_begin(), edge_begin = t.edge_begin();
  const size_t n = input.nodes.size();
  constexpr size_t kBlock = 32;
  for (size_t i = 0; i < std::min(n, 2 * kBlock); ++i) {
    __builtin_prefetch(bounds + (input.nodes[i] - node_begin));
    if (hetero && !last) __builtin_prefetch(orig + (input.nodes[i] - node_begin));
  }
  // One column of one node of the block: its search, then its picks [previous picks_end, picks_end).
  struct Item {
    int64_t begin;  // the column's first CSC position
    int64_t lo;     // the count lies in [lo, lo + len] (positions); once len is 0, begin + the count
    int64_t len;
    int64_t step;   // the search's next probe: lo + step - 1 (> 0), lo + len + step (< 0), bisect (0)
    int64_t bound;  // the node's time bound, as a code when the times are (TimeOrder::code_bound)
    int64_t local;  // the node's local id
    int32_t type;
    bool first;               // the next probe is the first, at the estimate
    bool in_canonical_order;  // its picks are sorted by position (all but draws with replacement)
    size_t picks_end;
  };
  // Where a column's search starts: its count if its times were spread as its type's.
  const auto estimate = [&](int type, int64_t degree, int64_t bound) {
    return std::min<int64_t>(degree - 1, static_cast<int64_t>(order.share_until(type, bound) * static_cast<double>(degree)));
  };
  // A pick: first its index in the order (begin + rank), then its CSC position.
  struct Pick {
    int64_t at;
    int64_t neighbor;
  };
  std::vector<Item> items;
  std::vector<size_t> node_items;  // each node's end in `items`
  std::vector<size_t> searching;   // items whose search is not done
  std::vector<Pick> picks;
  for (size_t block = 0; block < n; block += kBlock) {
    const size_t block_end = std::min(n, block + kBlock);
    items.clear();
    node_items.clear();
    searching.clear();
    picks.clear();
    for (size_t i = block; i < block_end; ++i) {
      if (i + 2 * kBlock < n) {
        const int64_t ahead = input.nodes[i + 2 * kBlock] - node_begin;
        __builtin_prefetch(bounds + ahead);
        if (hetero && !last) __builtin_prefetch(orig + ahead);
      }
      if (i + kBlock < n) {
        const int64_t ahead = input.nodes[i + kBlock] - node_begin;
        if (hetero) {
          __builtin_prefetch(runs + run_offsets[ahead]);
        } else {
          const int64_t degree = indptr[ahead + 1] - indptr[ahead];
          if (degree > 0) __builtin_prefetch(time0 + indptr[ahead] + estimate(0, degree, input.times[i + kBlock]));  // the first probe
        }
      }
      const int64_t local = input.nodes[i] - node_begin;
      const auto add = [&](int32_t type, int64_t begin, int64_t degree) {
        if (degree == 0 || columns[type].fanout == 0) return;
        searching.push_back(items.size());
        const int64_t bound = input.times[i];
        const int64_t search_bound = std::is_same_v<Time, uint32_t> ? order.code_bound(type, bound) : bound;
        items.push_back({begin, begin, degree, estimate(type, degree, bound) + 1, search_bound, local, type, true, true, 0});
      };
      if (hetero) {
        for (const TypeRun* run = runs + run_offsets[local]; run != runs + run_offsets[local + 1]; ++run) {
          add(run->type, run->begin, run->degree);
        }
      } else {
        add(0, indptr[local], indptr[local + 1] - indptr[local]);
      }
      node_items.push_back(items.size());
    }
    // The searches: upper_bound of the node's bound in each column's times, in lockstep, a
    // cache line of times per probe. A probe reads the whole line holding its position (what
    // of it lies in the bracket) and either finds the count there (some of its times are at
    // most the bound, the rest above) or moves the bracket past the line. The first probe is
    // the estimate's line; then the search gallops away from it a line (16 codes or 8
    // times), two, four... until the count is bracketed, then bisects the bracket.
    constexpr int64_t kLine = 64 / sizeof(Time);
    while (!searching.empty()) {
      size_t still = 0;
      for (size_t k : searching) {
        Item& item = items[k];
        const Time* time = hetero ? columns[item.type].time : time0;
        const int64_t at = item.step == 0  ? item.lo + (item.len >> 1)
                           : item.step > 0 ? item.lo + item.step - 1
                                           : item.lo + item.len + item.step;
        const int64_t line = at - static_cast<int64_t>(reinterpret_cast<uintptr_t>(time + at) % 64 / sizeof(Time));
        const int64_t first = std::max(line, item.lo), end = std::min(line + kLine, item.lo + item.len);
        int64_t qualifying = 0;  // a prefix of [first, end): times ascend
        for (int64_t j = first; j < end; ++j) qualifying += static_cast<int64_t>(time[j]) <= item.bound;
        if (qualifying == end - first) {  // the count is end or more
          item.len -= end - item.lo;
          item.lo = end;
          item.step = item.step < 0 ? 0 : item.first ? kLine : 2 * item.step;
        } else if (qualifying > 0 || first == item.lo) {  // the count is in this line
          item.lo = first + qualifying;
          item.len = 0;
        } else {  // the count is first or less
          item.len = first - item.lo;
          item.step = item.step > 0 ? (item.first ? -kLine : 0) : 2 * item.step;
        }
        item.first = false;
        if (item.step > item.len || -item.step > item.len) item.step = 0;  // past the bracket: bisect it
        if (item.len == 0) {
          // Found: a homogeneous column drawn from needs its node's id, prefetched now that
          // the count says so (a column's degree does not: about half its entries qualify).
          if (!hetero && draws_need_key(item.lo - item.begin)) __builtin_prefetch(orig + item.local);
        } else {
          const int64_t next = item.step == 0  ? item.lo + (item.len >> 1)
                               : item.step > 0 ? item.lo + item.step - 1
                                               : item.lo + item.len + item.step;
          __builtin_prefetch(time + next);
          searching[still++] = k;
        }
      }
      searching.resize(still);
    }
    // The draws, over each column's qualifying ranks [0, count).
    size_t k = 0;
    for (size_t i = block; i < block_end; ++i) {
      const int64_t local = input.nodes[i] - node_begin;
      const auto node_key = [&] {  // read only by draws: `last`, and columns taken whole, need none
        const uint64_t node = mix64(key, static_cast<uint64_t>(orig[local]));
        return input.trees.empty() ? node : mix64(node, static_cast<uint64_t>(input.trees[i]));
      };
      for (; k < node_items[i - block]; ++k) {
        Item& item = items[k];
        const Column& col = columns[hetero ? item.type : 0];
        const int64_t count = item.lo - item.begin, fanout = col.fanout;
        const auto pick_range = [&](int64_t first, int64_t end) {  // the ranks [first, end)
          for (int64_t r = first; r < end; ++r) picks.push_back({item.begin + r, 0});
          for (int64_t r = first; r < end; r += 8) __builtin_prefetch(col.entry + item.begin + r);  // 8 a line
          __builtin_prefetch(col.entry + item.begin + end - 1);
        };
        const auto pick = [&](int64_t rank) {
          picks.push_back({item.begin + rank, 0});
          __builtin_prefetch(col.entry + item.begin + rank);
          if (col.neighbor_high != nullptr) __builtin_prefetch(col.neighbor_high + item.begin + rank);
        };
        if (count > 0) {
          if (fanout < 0 || (!replace && fanout >= count)) {
            pick_range(0, count);
          } else if (last) {
            pick_range(count - fanout, count);
          } else {
            Rng rng(hetero ? mix64(node_key(), static_cast<uint64_t>(item.type)) : node_key());
            if (replace) {
              for (int64_t d = 0; d < fanout; ++d) pick(static_cast<int64_t>(rng.below(static_cast<uint64_t>(count))));
              item.in_canonical_order = false;  // draw order, as select emits draws with replacement
            } else {
              choose_distinct(rng, count, fanout, ranks, false);  // ordered by position below
              for (int64_t r : ranks) pick(r);
            }
          }
        }
        item.picks_end = picks.size();
      }
    }
    // The picks' neighbours and positions, read side by side; each column's in canonical
    // order; emitted. Heterogeneous columns' edge ids are another array, read a pass later.
    const int64_t emitted = static_cast<int64_t>(out.neighbors.size());
    size_t first = 0;
    for (const Item& item : items) {
      const Column& col = columns[hetero ? item.type : 0];
      for (size_t j = first; j < item.picks_end; ++j) {
        Pick& p = picks[j];
        const TimeOrder::Entry& entry = col.entry[p.at];
        const uint64_t high = col.neighbor_high == nullptr ? 0 : col.neighbor_high[p.at];
        p.neighbor = static_cast<int64_t>(high << 32 | entry.neighbor_low);
        p.at = item.begin + entry.offset;
        if (hetero && col.edge_ids != nullptr) __builtin_prefetch(col.edge_ids + p.at);
      }
      if (item.in_canonical_order && item.picks_end - first > 1) {
        std::sort(picks.begin() + static_cast<std::ptrdiff_t>(first),
                  picks.begin() + static_cast<std::ptrdiff_t>(item.picks_end),
                  [](const Pick& a, const Pick& b) { return a.at < b.at; });
      }
      if (!hetero) {
        for (size_t j = first; j < item.picks_end; ++j) {
          out.neighbors.push_back(picks[j].neighbor);
          out.edge_ids.push_back(edge_begin + picks[j].at);
        }
      }
      first = item.picks_end;
    }
    if (hetero) {
      first = 0;
      for (const Item& item : items) {
        const Column& col = columns[item.type];
        for (size_t j = first; j < item.picks_end; ++j) {
          out.neighbors.push_back(picks[j].neighbor);
          out.edge_ids.push_back(col.edge_ids != nullptr ? col.edge_ids[picks[j].at] : edge_begin + picks[j].at);
          out.edge_types.push_back(item.type);
        }
        first = item.picks_end;
      }
    }
    for (size_t e : node_items) {
      out.offsets.push_back(emitted + static_cast<int64_t>(e == 0 ? 0 : items[e - 1].picks_end));
    }
  }
}

// The common heterogeneous case (uniform, no replacement, no time): the general path's draws
// (keyed by node and edge type, picks in canonical order), without building a candidate
// list per column, which costs a node's whole in-degree of every type (a venue's hundreds
// of papers) where a fanout of them is drawn. A node's columns are its type runs
// (Topology::type_runs), not every edge type ending in its type. Software-pipelined as
// sample_uniform_homogeneous is, one stage deeper: for node i + 2*kBlock the run offsets
// are prefetched, for node i + kBlock its runs (whose offsets have arrived), then a block's
// picks are found with their entries prefetched, then read.
void sample_uniform_hetero(const Topology& t, const SamplerConfig& config, uint64_t key, int hop,
                           const HopInput& input, HopOutput& out, std::vector<int64_t>& picks) {
  struct Column {
    const int64_t* indices;
    const int64_t* edge_ids;  // null: edge_begin + position
    int fanout;
  };
  std::vector<Column> columns;
  for (int type = 0; type < t.num_edge_types(); ++type) {
    const CscColumns& csc = t.csc(type);
    columns.push_back({csc.indices.as<int64_t>().data(),
                       csc.edge_ids.empty() ? nullptr : csc.edge_ids.as<int64_t>().data(), config.fanouts[type][hop]});
  }
  const int64_t* orig = t.orig_node_ids().data();
  const int64_t* run_offsets = t.type_run_offsets().data();
  const TypeRun* runs = t.type_runs().data();
  const int64_t node_begin = t.node_begin();
  const size_t n = input.nodes.size();
  constexpr size_t kBlock = 32;
  for (size_t i = 0; i < std::min(n, 2 * kBlock); ++i) {
    __builtin_prefetch(run_offsets + (input.nodes[i] - node_begin));
    __builtin_prefetch(orig + (input.nodes[i] - node_begin));
  }
  std::vector<std::pair<int32_t, int64_t>> entries;  // a block's (type, position) picks, in order
  std::vector<int64_t> ends;                         // each node's end in `entries`
  for (size_t block = 0; block < n; block += kBlock) {
    const size_t block_end = std::min(n, block + kBlock);
    entries.clear();
    ends.clear();
    for (size_t i = block; i < block_end; ++i) {
      if (i + 2 * kBlock < n) {
        const int64_t ahead = input.nodes[i + 2 * kBlock] - node_begin;
        __builtin_prefetch(run_offsets + ahead);
        __builtin_prefetch(orig + ahead);
      }
      if (i + kBlock < n) __builtin_prefetch(runs + run_offsets[input.nodes[i + kBlock] - node_begin]);
      const int64_t local = input.nodes[i] - node_begin;
      uint64_t node_key = mix64(key, static_cast<uint64_t>(orig[local]));
      if (!input.trees.empty()) node_key = mix64(node_key, static_cast<uint64_t>(input.trees[i]));
      for (const TypeRun* run = runs + run_offsets[local]; run != runs + run_offsets[local + 1]; ++run) {
        const Column& col = columns[run->type];
        const int64_t begin = run->begin, degree = run->degree;
        auto pick = [&](int64_t pos) {
          entries.emplace_back(run->type, pos);
          __builtin_prefetch(col.indices + pos);
          if (col.edge_ids != nullptr) __builtin_prefetch(col.edge_ids + pos);
        };
        if (col.fanout < 0 || degree <= col.fanout) {
          for (int64_t pos = begin; pos < begin + degree; ++pos) pick(pos);
        } else {
          Rng rng(mix64(node_key, static_cast<uint64_t>(run->type)));
          choose_distinct(rng, degree, col.fanout, picks);
          for (int64_t p : picks) pick(begin + p);
        }
      }
      ends.push_back(static_cast<int64_t>(entries.size()));
    }
    const int64_t emitted = static_cast<int64_t>(out.neighbors.size());
    for (const auto& [type, pos] : entries) {
      const Column& col = columns[type];
      out.neighbors.push_back(col.indices[pos]);
      out.edge_ids.push_back(col.edge_ids != nullptr ? col.edge_ids[pos] : t.edge_begin() + pos);
      out.edge_types.push_back(type);
    }
    for (int64_t e : ends) out.offsets.push_back(emitted + e);
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
    std::vector<int64_t> picks, positions;
    int fanout = config.fanouts[0][hop];
    if (fanout > 0) {
      out.neighbors.reserve(input.nodes.size() * fanout);
      out.edge_ids.reserve(input.nodes.size() * fanout);
    }
    sample_uniform_homogeneous(topology, k, fanout, input, out, picks, positions);
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
    std::vector<int64_t> ranks;
    const bool narrow = config.time_order->narrow();
    if (topology.is_hetero()) {
      if (narrow) {
        sample_temporal<true, uint32_t>(topology, config, k, hop, input, out, ranks);
      } else {
        sample_temporal<true, int64_t>(topology, config, k, hop, input, out, ranks);
      }
    } else if (narrow) {
      sample_temporal<false, uint32_t>(topology, config, k, hop, input, out, ranks);
    } else {
      sample_temporal<false, int64_t>(topology, config, k, hop, input, out, ranks);
    }
    return;
  }
  Context c(topology, config, k, hop);
  if (!config.edge_weight.empty()) c.weight = config.edge_weight.as<float>();
  if (topology.is_hetero() && config.edge_weight.empty() && !config.replace &&
      config.temporal == TemporalMode::kNone) {
    sample_uniform_hetero(topology, config, k, hop, input, out, c.picks);
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
