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
  std::vector<int64_t> train_, val_, test_;
};

}  // namespace partita::python
