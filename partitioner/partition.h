// Assigning nodes to partitions: METIS k-way or seeded random, both deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partitioner/dataset.h"

namespace partita {

enum class PartitionMethod { kMetis, kRandom };

// "metis" or "random"; anything else is a UsageError.
PartitionMethod parse_partition_method(const std::string& name);
std::string partition_method_name(PartitionMethod method);

struct PartitionOptions {
  int num_parts = 2;
  PartitionMethod method = PartitionMethod::kMetis;
  uint64_t seed = 0;
  // Balance training nodes (and, for heterogeneous graphs, every node type) across parts
  // as separate METIS constraints, so every trainer gets a similar share of seeds.
  bool balance_train = true;
  int threads = 0;  // 0 = hardware concurrency
};

// The partition of every node, in original ids: result[v] in [0, num_parts).
//
// METIS runs on the undirected, self-loop-free, deduplicated graph with one vertex weight
// per constraint: a node count (or, for heterogeneous graphs, one per node type) and, when
// the dataset has training nodes, a training-node count. Random assignment shuffles the
// nodes with the seed and cuts them into equal parts.
std::vector<int32_t> assign_partitions(const Dataset& dataset, const PartitionOptions& options);

// The METIS input: the symmetric adjacency (CSR, 32-bit as Debian's METIS uses) of the
// undirected graph without self-loops or parallel edges. Exposed for the benchmark, which
// times the bare METIS call on exactly this input.
struct MetisGraph {
  std::vector<int32_t> xadj;
  std::vector<int32_t> adjncy;
  std::vector<int32_t> vwgt;  // ncon weights per node, empty for unit weights
  int32_t ncon = 1;
};
MetisGraph build_metis_graph(const Dataset& dataset, const PartitionOptions& options);

// Calls METIS_PartGraphKway on `graph`; throws Error on a METIS failure.
std::vector<int32_t> run_metis(MetisGraph& graph, int num_parts, uint64_t seed);

}  // namespace partita
