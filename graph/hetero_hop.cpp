// The uniform one-hop kernel of heterogeneous graphs (graph/hop_kernels.h).
#include "graph/hop_kernels.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/random.h"
#include "graph/draws.h"

namespace partita {

// The common heterogeneous case (uniform, no replacement, no time): the general path's draws
// (keyed by node and edge type, picks in canonical order), without building a candidate
// list per column, which costs a node's whole in-degree of every type (a venue's hundreds
// of papers) where a fanout of them is drawn. A node's columns are its type runs
// (Topology::type_runs), not every edge type ending in its type. Software-pipelined as
// sample_uniform_homogeneous_hop is, one stage deeper: for node i + 2*kBlock the run offsets
// are prefetched, for node i + kBlock the lines of its first and last runs (whose offsets
// have arrived), then a block's picks are found with their entries prefetched, then read.
void sample_uniform_hetero_hop(const Topology& t, const SamplerConfig& config, uint64_t key, int hop,
                               const HopInput& input, HopOutput& out) {
  std::vector<int64_t> picks;
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
      if (i + kBlock < n) prefetch_type_runs(runs, run_offsets, input.nodes[i + kBlock] - node_begin);
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
        if (col.fanout < 0 || degree <= col.fanout) {  // the whole column: its lines, 8 entries each
          for (int64_t pos = begin; pos < begin + degree; ++pos) entries.emplace_back(run->type, pos);
          for (int64_t pos = begin; pos < begin + degree; pos += 8) {
            __builtin_prefetch(col.indices + pos);
            if (col.edge_ids != nullptr) __builtin_prefetch(col.edge_ids + pos);
          }
          __builtin_prefetch(col.indices + begin + degree - 1);
          if (col.edge_ids != nullptr) __builtin_prefetch(col.edge_ids + begin + degree - 1);
        } else {
          Rng rng(mix64(node_key, static_cast<uint64_t>(run->type)));
          choose_distinct(rng, degree, col.fanout, picks);
          for (int64_t p : picks) pick(begin + p);
        }
      }
      ends.push_back(static_cast<int64_t>(entries.size()));
    }
    // Room for the block's picks at once, then written in place.
    const size_t emitted = out.neighbors.size(), picked = entries.size();
    out.neighbors.resize(emitted + picked);
    out.edge_ids.resize(emitted + picked);
    out.edge_types.resize(emitted + picked);
    int64_t* neighbors = out.neighbors.data() + emitted;
    int64_t* edge_ids = out.edge_ids.data() + emitted;
    int32_t* edge_types = out.edge_types.data() + emitted;
    for (size_t j = 0; j < picked; ++j) {
      const auto [type, pos] = entries[j];
      const Column& col = columns[type];
      neighbors[j] = col.indices[pos];
      edge_ids[j] = col.edge_ids != nullptr ? col.edge_ids[pos] : t.edge_begin() + pos;
      edge_types[j] = type;
    }
    for (int64_t e : ends) out.offsets.push_back(static_cast<int64_t>(emitted) + e);
  }
}

}  // namespace partita
