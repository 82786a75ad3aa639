// A partition folder opened for Python: what a PyG user speaks of in the dataset's own node
// ids ("original ids"), next to the global ids the partitioner gave (each part a contiguous
// range; partitioner/partition_format.h), and edges likewise. Loaders take seeds in original
// ids and hand back n_id and e_id in original ids, so the same code reads a folder of 1 part
// or of 8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partitioner/partition_format.h"

namespace partita::python {

class GraphHandle {
 public:
  // Opens and checks the folder's structure (partitioner/partition_format.h, Verify::kStructure).
  // Throws Error naming the folder and the problem: no such folder, no META.json, a
  // corrupt array.
  explicit GraphHandle(const std::string& dir);

  const std::string& dir() const { return dir_; }  // absolute
  const PartitionMeta& meta() const { return folder_.meta(); }
  const PartitionBook& book() const { return folder_.book(); }

  // Original id -> global id, and back; each [num_nodes].
  const std::vector<int64_t>& global_of() const { return global_of_; }
  const std::vector<int64_t>& original_of() const { return original_of_; }
  // Global edge id (the parts' CSC positions, part after part) -> original edge id.
  const std::vector<int64_t>& original_edge_of() const { return original_edge_of_; }

  // A heterogeneous graph's node types by global id (indices into meta().node_types); empty
  // for a homogeneous one.
  const std::vector<int32_t>& node_type_of() const { return node_type_of_; }

  // A heterogeneous graph by type, as a PyG HeteroData holds it: each node type's nodes
  // numbered 0, 1, ... in the order of their original ids (the row a node has in
  // HeteroData[node type]; a HeteroData's to_homogeneous() lays the types out in blocks,
  // so that is its original id less the block's start), and each edge type's edges
  // likewise in original edge id order. All empty for a homogeneous graph.
  //   original_node_type()[v], node_index_in_type()[v]: original node v's type and row;
  //   nodes_by_type(): the original ids of type 0's nodes in row order, then type 1's, ...
  //     (type t's from type_node_offsets()[t] to type_node_offsets()[t + 1]);
  //   original_edge_type()[e], edge_index_in_type()[e]: original edge e's type and row;
  //   type_num_edges()[t]: the edges of edge type t in the graph (held-out edges aside).
  const std::vector<int32_t>& original_node_type() const { return original_node_type_; }
  const std::vector<int64_t>& node_index_in_type() const { return node_index_in_type_; }
  const std::vector<int64_t>& nodes_by_type() const { return nodes_by_type_; }
  const std::vector<int64_t>& type_node_offsets() const { return type_node_offsets_; }
  const std::vector<int32_t>& original_edge_type() const { return original_edge_type_; }
  const std::vector<int64_t>& edge_index_in_type() const { return edge_index_in_type_; }
  const std::vector<int64_t>& type_num_edges() const { return type_num_edges_; }
  // Node types of which some node has a label (y >= 0): those a HeteroData gives a y.
  const std::vector<int32_t>& labelled_node_types() const { return labelled_node_types_; }

  // The nodes of split "train", "val" or "test" in original ids, sorted. Throws UsageError
  // naming the split for any other name.
  const std::vector<int64_t>& split(const std::string& name) const;

  // `ids` (original) as global ids, in place. Throws UsageError naming `what`, the first id
  // outside [0, num_nodes) and its position.
  void to_global(std::vector<int64_t>& ids, const std::string& what) const;

 private:
  std::string dir_;
  PartitionFolder folder_;
  std::vector<int64_t> global_of_, original_of_, original_edge_of_;
  std::vector<int32_t> node_type_of_;
  std::vector<int32_t> original_node_type_, original_edge_type_, labelled_node_types_;
  std::vector<int64_t> node_index_in_type_, nodes_by_type_, type_node_offsets_, edge_index_in_type_,
      type_num_edges_;

  // A heterogeneous part's node types, its edges' types (by original edge id) and which node
  // types it labels, as the constructor reads each part once; its edges' original ids are
  // original_edge_of_ from first_edge on.
  void take_types(int part, const PartitionData& data, size_t first_edge, std::vector<uint8_t>& labelled);
  // Fills the by-type arrays above from node_type_of_, original_edge_type_ and `labelled`.
  void index_types(const std::vector<uint8_t>& labelled);
  std::vector<int64_t> train_, val_, test_;
};

}  // namespace partita::python
