#include "graph/topology.h"

#include <climits>
#include <string>

#include "base/error.h"

namespace partita {

namespace {

void expect(bool ok, const std::string& what) {
  if (!ok) throw Error("topology: " + what);
}

}  // namespace

Topology::Topology(Parts parts) : p_(std::move(parts)) {
  expect(p_.part >= 0 && p_.part < p_.book.num_parts(), "part " + std::to_string(p_.part) +
                                                             " is not in the partition book");
  node_begin_ = p_.book.begin(p_.part);
  node_end_ = p_.book.end(p_.part);
  const int64_t n = node_end_ - node_begin_;
  orig_nodes_ = p_.orig_node_ids.as<int64_t>();
  expect(static_cast<int64_t>(orig_nodes_.size()) == n, "original node ids do not match the node count");
  orig_edges_ = p_.orig_edge_ids.as<int64_t>();
  num_edges_ = static_cast<int64_t>(orig_edges_.size());
  expect(!p_.csc.empty(), "no CSC columns");
  int64_t total = 0;
  for (size_t t = 0; t < p_.csc.size(); ++t) {
    auto indptr = p_.csc[t].indptr.as<int64_t>();
    auto indices = p_.csc[t].indices.as<int64_t>();
    expect(static_cast<int64_t>(indptr.size()) == n + 1, "indptr of edge type " + std::to_string(t) +
                                                             " does not have num_nodes + 1 entries");
    expect(indptr[0] == 0 && indptr[n] == static_cast<int64_t>(indices.size()),
           "indptr of edge type " + std::to_string(t) + " does not span its indices");
    if (!p_.csc[t].edge_ids.empty()) {
      expect(p_.csc[t].edge_ids.as<int64_t>().size() == indices.size(),
             "edge ids of edge type " + std::to_string(t) + " do not match its indices");
    } else {
      expect(p_.csc.size() == 1, "implicit edge ids need a single edge type");
    }
    total += static_cast<int64_t>(indices.size());
  }
  expect(total == num_edges_, "CSC edges do not match the original edge ids");
  if (!p_.node_type.empty()) {
    node_types_ = p_.node_type.as<int32_t>();
    expect(static_cast<int64_t>(node_types_.size()) == n, "node types do not match the node count");
    expect(p_.edge_type_ends.size() == p_.csc.size(), "edge type ends do not match the edge types");
    build_type_runs();
  }
}

void Topology::build_type_runs() {
  // Type by type, so each node's runs come out in increasing type order and every indptr is
  // read front to back once.
  const int64_t n = num_nodes();
  run_offsets_.assign(static_cast<size_t>(n + 1), 0);
  for (const CscColumns& c : p_.csc) {
    const int64_t* indptr = c.indptr.as<int64_t>().data();
    for (int64_t v = 0; v < n; ++v) run_offsets_[v + 1] += indptr[v + 1] > indptr[v];
  }
  for (int64_t v = 0; v < n; ++v) run_offsets_[v + 1] += run_offsets_[v];
  runs_.resize(static_cast<size_t>(run_offsets_[n]));
  std::vector<int64_t> next(run_offsets_.begin(), run_offsets_.end() - 1);
  for (int32_t t = 0; t < num_edge_types(); ++t) {
    const int64_t* indptr = p_.csc[t].indptr.as<int64_t>().data();
    for (int64_t v = 0; v < n; ++v) {
      const int64_t degree = indptr[v + 1] - indptr[v];
      if (degree == 0) continue;
      expect(degree <= INT32_MAX, "node " + std::to_string(node_begin_ + v) + " has " + std::to_string(degree) +
                                      " in-edges of edge type " + std::to_string(t) + ", more than 2^31 - 1");
      runs_[next[v]++] = {indptr[v], t, static_cast<int32_t>(degree)};
    }
  }
}

size_t Topology::sampling_bytes() const {
  size_t bytes = p_.orig_node_ids.bytes() + p_.node_type.bytes() + run_offsets_.size() * sizeof(int64_t) +
                 runs_.size() * sizeof(TypeRun);
  for (const auto& c : p_.csc) bytes += c.indptr.bytes() + c.indices.bytes() + c.edge_ids.bytes();
  return bytes;
}

std::vector<CscColumns> split_by_edge_type(Span<const int64_t> indptr, Span<const int64_t> indices,
                                           Span<const int32_t> edge_type, int num_edge_types,
                                           int64_t edge_begin) {
  const int64_t n = static_cast<int64_t>(indptr.size()) - 1;
  std::vector<std::vector<int64_t>> type_indptr(num_edge_types, std::vector<int64_t>(n + 1, 0));
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = indptr[v]; k < indptr[v + 1]; ++k) ++type_indptr[edge_type[k]][v + 1];
  }
  std::vector<std::vector<int64_t>> type_indices(num_edge_types), type_edges(num_edge_types);
  for (int t = 0; t < num_edge_types; ++t) {
    for (int64_t v = 0; v < n; ++v) type_indptr[t][v + 1] += type_indptr[t][v];
    type_indices[t].reserve(type_indptr[t][n]);
    type_edges[t].reserve(type_indptr[t][n]);
  }
  // Visiting each column in order keeps every per-type column in canonical order.
  for (int64_t k = 0; k < indptr[n]; ++k) {
    type_indices[edge_type[k]].push_back(indices[k]);
    type_edges[edge_type[k]].push_back(edge_begin + k);
  }
  std::vector<CscColumns> out(num_edge_types);
  for (int t = 0; t < num_edge_types; ++t) {
    out[t].indptr = ArrayRef::from_vector(std::move(type_indptr[t]));
    out[t].indices = ArrayRef::from_vector(std::move(type_indices[t]));
    out[t].edge_ids = ArrayRef::from_vector(std::move(type_edges[t]));
  }
  return out;
}

}  // namespace partita
