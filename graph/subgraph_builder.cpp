#include "graph/subgraph_builder.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace partita {

namespace {

// Every vector of `batch` emptied, its memory kept.
void clear_keeping_capacity(MiniBatch& batch) {
  for (auto* v : {&batch.node_ids, &batch.row, &batch.col, &batch.edge_ids, &batch.num_sampled_nodes,
                  &batch.num_sampled_edges, &batch.batch, &batch.input_ids, &batch.input_local, &batch.y}) {
    v->clear();
  }
  batch.edge_types.clear();
  batch.x.clear();
  batch.batch_size = 0;
  batch.feature_dim = 0;
}

}  // namespace

void SubgraphBuilder::start(Span<const int64_t> seeds, Span<const int64_t> seed_times) {
  map_.clear();
  batch_ = std::move(spare_);
  spare_ = MiniBatch{};
  clear_keeping_capacity(batch_);
  frontier_.clear();
  frontier_trees_.clear();
  frontier_times_.clear();
  num_trees_ = std::max<int64_t>(1, static_cast<int64_t>(seeds.size()));
  seed_times_.assign(seed_times.begin(), seed_times.end());
  batch_.input_ids.assign(seeds.begin(), seeds.end());
  for (size_t i = 0; i < seeds.size(); ++i) {
    const int64_t tree = static_cast<int64_t>(i);
    const int64_t next = static_cast<int64_t>(batch_.node_ids.size());
    auto [local, inserted] = map_.insert(key_of(seeds[i], tree), next);
    batch_.input_local.push_back(local);
    if (!inserted) continue;
    batch_.node_ids.push_back(seeds[i]);
    frontier_.push_back(seeds[i]);
    if (disjoint_) {
      batch_.batch.push_back(tree);
      frontier_trees_.push_back(tree);
    }
    if (!seed_times_.empty()) frontier_times_.push_back(seed_times_[i]);
  }
  batch_.batch_size = static_cast<int64_t>(batch_.node_ids.size());
  batch_.num_sampled_nodes.push_back(batch_.batch_size);
  batch_.num_sampled_edges.push_back(0);
  frontier_begin_ = 0;
}

void SubgraphBuilder::add_hop(const HopOutput& hop) {
  if (hop.offsets.size() != frontier_.size() + 1) {
    throw Error("sample: a hop returned " + std::to_string(hop.offsets.size() - 1) +
                " neighbour lists for a frontier of " + std::to_string(frontier_.size()));
  }
  // The lists may come from other processes: check they agree before indexing into them.
  const size_t edges = hop.neighbors.size();
  if (hop.offsets.back() != static_cast<int64_t>(edges) || hop.edge_ids.size() != edges ||
      (!hop.edge_types.empty() && hop.edge_types.size() != edges)) {
    throw Error("sample: a hop's neighbour lists are inconsistent (" + std::to_string(edges) +
                " neighbours, " + std::to_string(hop.edge_ids.size()) + " edge ids, " +
                std::to_string(hop.edge_types.size()) + " edge types, offsets ending at " +
                std::to_string(hop.offsets.back()) + ")");
  }
  const bool typed = !hop.edge_types.empty();
  const size_t edges_before = batch_.row.size();
  const int64_t nodes_before = static_cast<int64_t>(batch_.node_ids.size());
  // Room for the whole hop at once (each vector grows once per hop, not log2(edges) times).
  batch_.row.reserve(edges_before + edges);
  batch_.col.reserve(edges_before + edges);
  batch_.edge_ids.reserve(edges_before + edges);
  if (typed) batch_.edge_types.reserve(edges_before + edges);
  // Every neighbour's key first, so that each insert can fetch the slot kAhead inserts later:
  // the map's slots are random lines of a table beyond L2.
  keys_.resize(edges);
  for (size_t i = 0; i < frontier_.size(); ++i) {
    const int64_t tree = disjoint_ ? frontier_trees_[i] : 0;
    for (int64_t k = hop.offsets[i]; k < hop.offsets[i + 1]; ++k) keys_[k] = key_of(hop.neighbors[k], tree);
  }
  constexpr size_t kAhead = 16;
  for (size_t k = 0; k < std::min(edges, kAhead); ++k) map_.prefetch(keys_[k]);
  std::vector<int64_t>& next = next_;
  std::vector<int64_t>& next_trees = next_trees_;
  std::vector<int64_t>& next_times = next_times_;
  next.clear();
  next_trees.clear();
  next_times.clear();
  for (size_t i = 0; i < frontier_.size(); ++i) {
    const int64_t col = frontier_begin_ + static_cast<int64_t>(i);
    const int64_t tree = disjoint_ ? frontier_trees_[i] : 0;
    for (int64_t k = hop.offsets[i]; k < hop.offsets[i + 1]; ++k) {
      if (static_cast<size_t>(k) + kAhead < edges) map_.prefetch(keys_[k + kAhead]);
      const int64_t neighbor = hop.neighbors[k];
      const int64_t fresh = static_cast<int64_t>(batch_.node_ids.size());
      auto [local, inserted] = map_.insert(keys_[k], fresh);
      if (inserted) {
        batch_.node_ids.push_back(neighbor);
        next.push_back(neighbor);
        if (disjoint_) {
          batch_.batch.push_back(tree);
          next_trees.push_back(tree);
        }
        if (!frontier_times_.empty()) next_times.push_back(frontier_times_[i]);
      }
      batch_.row.push_back(local);
      batch_.col.push_back(col);
      batch_.edge_ids.push_back(hop.edge_ids[k]);
      if (typed) batch_.edge_types.push_back(hop.edge_types[k]);
    }
  }
  batch_.num_sampled_nodes.push_back(static_cast<int64_t>(batch_.node_ids.size()) - nodes_before);
  batch_.num_sampled_edges.push_back(static_cast<int64_t>(batch_.row.size() - edges_before));
  frontier_begin_ = nodes_before;
  frontier_.swap(next_);
  frontier_trees_.swap(next_trees_);
  frontier_times_.swap(next_times_);
}

MiniBatch SubgraphBuilder::finish() {
  MiniBatch out = std::move(batch_);
  batch_ = MiniBatch{};
  return out;
}

}  // namespace partita
