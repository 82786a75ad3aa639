// Partitioning from Python: what `partita partition` does (tools/partition_command.cpp),
// as one call. partita.partition() writes a PyG `Data` as an npy folder first (the layout
// read_npy_folder reads), so that one reader, one partitioner and one writer serve both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partitioner/partition_format.h"

namespace partita::python {

struct PartitionRequest {
  std::string input;            // a dataset file or folder
  std::string format = "npy";   // linqs, npy, edgelist, triples, movielens, movielens100k, ntriples
  std::string output;           // the partition folder to write
  int num_parts = 2;
  std::string method = "metis";  // or "random"
  uint64_t seed = 0;
  uint64_t split_seed = 0;       // formats without a split of their own (linqs), held-out edges
  // Link prediction's held-out edges (partitioner/splits.h: hold_out_edges, as a job's
  // data.holdout): fractions of the links moved out of the graph into val and test.
  // by_time: the latest links (edge times) are the test links, the ones before them the
  // validation links; keep_history (by_time only) leaves them in the graph as history.
  // holdout_edge_type: empty (every edge type), or [source type, relation, destination
  // type], the one edge type whose links are held out.
  double holdout_val = 0, holdout_test = 0;
  bool holdout_by_time = false, holdout_keep_history = false;
  std::vector<std::string> holdout_edge_type;
  bool overwrite = false;
  bool balance_train = true;
  std::vector<std::string> transforms;  // as --transform: normalize_features, standardize, multi_hot:COLUMNS
  int threads = 0;
};

// Reads, transforms, partitions and writes the folder (atomically); returns its META.json
// contents. Throws UsageError for a bad option or an output that exists without
// `overwrite` (before reading anything), Error naming the file and problem for bad input.
PartitionMeta partition_to_folder(const PartitionRequest& request);

}  // namespace partita::python
