// One partition's graph structure: the in-edges (CSC) of the nodes it owns, per edge type.
//
// Ids: a partition owns the contiguous global node ids [node_begin, node_end) and the
// contiguous global edge ids [edge_begin, edge_end), so global <-> local is a subtraction.
// Original ids (the dataset's own) are kept beside, because partition-invariant sampling
// keys its randomness on them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/array_ref.h"
#include "graph/partition_book.h"

namespace partita {

// The in-edges of every local node for one edge type. Columns list neighbours in canonical
// order (by original edge id), which is what makes sampling independent of partitioning.
struct CscColumns {
  ArrayRef indptr;    // int64 [num_nodes + 1]
  ArrayRef indices;   // int64 [m]: global id of each in-edge's source
  ArrayRef edge_ids;  // int64 [m]: global edge id; empty when it is edge_begin + position
};

// Node and edge type names of a heterogeneous graph, as indices: the sampler needs, for a
// node of type t, the edge types that end in t.
struct EdgeTypeEnds {
  int32_t src_type = 0;
  int32_t dst_type = 0;
};

// One edge type a node has in-edges of: the node's column in csc(type) is
// [begin, begin + degree). A heterogeneous topology lists, per node, only the types it has
// in-edges of, in increasing type order: the sampler visits those instead of reading every
// type's indptr (FB15k-237: 237 relations, a few per node; reading all 237 cost 88% of the
// hetero kernel's time, BENCHMARKS.md).
struct TypeRun {
  int64_t begin = 0;
  int32_t type = 0;
  int32_t degree = 0;
};

// Fetches the lines of local node `local`'s runs (runs[run_offsets[local] ..
// run_offsets[local + 1])) ahead of their use: the first run's line and the last's, as a
// node's runs (16 bytes each, two or three on a paper) cross a line about every other node;
// fetching the first alone left a third of the hetero kernel's time waiting on the second
// (BENCHMARKS.md, "Heterogeneous sampling"). Reads run_offsets[local] and [local + 1]. Always inlined: GCC
// 12 takes a function that only prefetches for one without effects and drops its calls
// before inlining it (the kernels lost both prefetches, and 40% of their speed).
[[gnu::always_inline]] inline void prefetch_type_runs(const TypeRun* runs, const int64_t* run_offsets, int64_t local) {
  const int64_t first = run_offsets[local];
  __builtin_prefetch(runs + first);
  __builtin_prefetch(runs + std::max(first, run_offsets[local + 1] - 1));
}

class Topology {
 public:
  struct Parts {
    PartitionBook book;
    int part = 0;
    int64_t edge_begin = 0;   // first global edge id of this partition
    ArrayRef orig_node_ids;   // int64 [num_nodes]
    ArrayRef orig_edge_ids;   // int64 [num_edges], by global edge id - edge_begin
    std::vector<CscColumns> csc;  // one per edge type (one for homogeneous graphs)
    ArrayRef node_type;           // int32 [num_nodes]; empty for homogeneous graphs
    std::vector<EdgeTypeEnds> edge_type_ends;  // one per edge type; empty for homogeneous
  };

  Topology() = default;
  // Checks the arrays' dtypes and shapes against each other; throws Error naming the
  // first mismatch.
  explicit Topology(Parts parts);

  const PartitionBook& book() const { return p_.book; }
  int part() const { return p_.part; }
  int64_t node_begin() const { return node_begin_; }
  int64_t node_end() const { return node_end_; }
  int64_t num_nodes() const { return node_end_ - node_begin_; }
  int64_t edge_begin() const { return p_.edge_begin; }
  int64_t num_edges() const { return num_edges_; }
  bool owns(int64_t node) const { return node >= node_begin_ && node < node_end_; }

  int num_edge_types() const { return static_cast<int>(p_.csc.size()); }
  bool is_hetero() const { return !p_.node_type.empty(); }
  const CscColumns& csc(int edge_type) const { return p_.csc[edge_type]; }
  const std::vector<EdgeTypeEnds>& edge_type_ends() const { return p_.edge_type_ends; }

  Span<const int64_t> orig_node_ids() const { return orig_nodes_; }
  int64_t original_node_id(int64_t node) const { return orig_nodes_[node - node_begin_]; }
  int64_t original_edge_id(int64_t edge) const { return orig_edges_[edge - p_.edge_begin]; }
  int32_t node_type(int64_t node) const {
    return node_types_.empty() ? 0 : node_types_[node - node_begin_];
  }
  // Heterogeneous topologies: the runs of local node `local` (node - node_begin()) are
  // type_runs()[type_run_offsets()[local] .. type_run_offsets()[local + 1]). Empty for
  // homogeneous ones (their one column is csc(0)).
  Span<const int64_t> type_run_offsets() const { return run_offsets_; }
  Span<const TypeRun> type_runs() const { return runs_; }

  // Bytes of the structure the sampler reads (CSC arrays, original node ids, type runs); the
  // original edge ids are only read to report results and stay on disk when mapped.
  size_t sampling_bytes() const;

 private:
  void build_type_runs();

  Parts p_;
  int64_t node_begin_ = 0, node_end_ = 0, num_edges_ = 0;
  Span<const int64_t> orig_nodes_, orig_edges_;
  Span<const int32_t> node_types_;
  // Built from the per-type columns by the constructor (hetero only).
  std::vector<int64_t> run_offsets_;
  std::vector<TypeRun> runs_;
};

// Regroups one CSC whose columns mix edge types into one CSC per type, each column keeping
// its canonical order; the result carries explicit global edge ids.
std::vector<CscColumns> split_by_edge_type(Span<const int64_t> indptr, Span<const int64_t> indices,
                                           Span<const int32_t> edge_type, int num_edge_types,
                                           int64_t edge_begin);

}  // namespace partita
