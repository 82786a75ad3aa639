#include "graph/frontier_split.h"

#include "base/error.h"

namespace partita {

void FrontierSplit::split(const PartitionBook& book, Span<const int64_t> nodes,
                          Span<const int64_t> trees, Span<const int64_t> times) {
  const int k = book.num_parts();
  nodes_.assign(k, {});
  trees_.assign(k, {});
  times_.assign(k, {});
  owner_.resize(nodes.size());
  rank_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= book.num_nodes()) {
      throw Error("sample: node " + std::to_string(nodes[i]) + " is outside the graph [0, " +
                  std::to_string(book.num_nodes()) + ")");
    }
    int p = book.owner(nodes[i]);
    owner_[i] = p;
    rank_[i] = static_cast<int64_t>(nodes_[p].size());
    nodes_[p].push_back(nodes[i]);
    if (!trees.empty()) trees_[p].push_back(trees[i]);
    if (!times.empty()) times_[p].push_back(times[i]);
  }
}

HopInput FrontierSplit::input(int part) const {
  return {Span<const int64_t>(nodes_[part]), Span<const int64_t>(trees_[part]),
          Span<const int64_t>(times_[part])};
}

void FrontierSplit::join(const std::vector<const HopOutput*>& outputs, HopOutput& out) const {
  out.clear();
  int typed_parts = 0, answering_parts = 0;
  for (int p = 0; p < num_parts(); ++p) {
    if (nodes_[p].empty()) continue;
    const HopOutput* o = outputs[p];
    if (o == nullptr || o->offsets.size() != nodes_[p].size() + 1 || o->offsets.front() != 0 ||
        o->offsets.back() != static_cast<int64_t>(o->neighbors.size()) ||
        o->edge_ids.size() != o->neighbors.size() ||
        (!o->edge_types.empty() && o->edge_types.size() != o->neighbors.size())) {
      throw Error("sample: partition " + std::to_string(p) + " answered inconsistent neighbour " +
                  "lists for " + std::to_string(nodes_[p].size()) + " nodes");
    }
    for (size_t i = 1; i < o->offsets.size(); ++i) {
      if (o->offsets[i] < o->offsets[i - 1]) {
        throw Error("sample: partition " + std::to_string(p) + " answered decreasing offsets");
      }
    }
    ++answering_parts;
    typed_parts += !o->edge_types.empty() || o->neighbors.empty();
  }
  // Edge types come from every partition or from none: a mix would misalign them.
  bool typed = false;
  for (int p = 0; p < num_parts(); ++p) {
    if (!nodes_[p].empty() && !outputs[p]->edge_types.empty()) typed = true;
  }
  if (typed && typed_parts != answering_parts) {
    throw Error("sample: some partitions sent edge types and others did not");
  }
  for (size_t i = 0; i < owner_.size(); ++i) {
    const HopOutput& from = *outputs[owner_[i]];
    const int64_t begin = from.offsets[rank_[i]], end = from.offsets[rank_[i] + 1];
    out.neighbors.insert(out.neighbors.end(), from.neighbors.begin() + begin, from.neighbors.begin() + end);
    out.edge_ids.insert(out.edge_ids.end(), from.edge_ids.begin() + begin, from.edge_ids.begin() + end);
    if (!from.edge_types.empty()) {
      out.edge_types.insert(out.edge_types.end(), from.edge_types.begin() + begin, from.edge_types.begin() + end);
    }
    out.offsets.push_back(static_cast<int64_t>(out.neighbors.size()));
  }
}

}  // namespace partita
