// A graph the user brings to a benchmark (`--input DIR`, an npy folder; partitioner/readers.h).
// Benchmarks partition it into a work folder and reuse those partitions on the next run, as
// partitioning a graph of 20M edges takes longer than most measurements; so they must know
// when the folder changed: its fingerprint is each file's name, size and modification time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/workdir.h"
#include "partitioner/dataset.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_format.h"

namespace partita::bench {

// workdir/`folder`: `graph()` partitioned with `options`, unless a folder made from the
// same `params` (a text naming everything the graph and its partitioning depend on) is
// there already. Returns the folder's path.
std::string partitioned_graph(const Workdir& workdir, const std::string& folder, const std::string& params,
                              const PartitionOptions& options, const std::function<Dataset()>& graph);

// R-MAT with `num_nodes`, `avg_degree`, `feature_dim` and `seed` in 2 random parts (the
// benchmarks that move a partition's bytes: its edges do not matter) in workdir/parts.
std::string rmat_in_two_random_parts(const Workdir& workdir, int64_t num_nodes, double avg_degree, int64_t feature_dim,
                                     uint64_t seed);

// An SBM graph of `num_nodes` (4 classes, 16 features, `seed`) in `num_parts` METIS parts in
// workdir/parts: the small job of the benchmarks that measure a cluster's faults.
std::string sbm_in_metis_parts(const Workdir& workdir, int64_t num_nodes, int num_parts, uint64_t seed);

// The graph a benchmark measures: `input` read as an npy folder, or, without one, R-MAT
// generated from `rmat`.
Dataset input_or_rmat(const std::string& input, const RmatOptions& rmat);

// Throws UsageError naming --input unless `dir` is an npy folder holding `required` (file
// names such as "x.npy") besides its edges.
void check_input_graph(const std::string& dir, const std::vector<std::string>& required);

// "name size mtime" per regular file of `dir`, sorted by name, one per line.
std::string input_fingerprint(const std::string& dir);

// Removes the `partition_dirs` made from another state of `input` (or from a run that left
// no record), then records `input`'s fingerprint in `work_dir`, so that the caller
// partitions it again and the next run can reuse what it writes.
void forget_stale_partitions(const std::string& input, const std::string& work_dir,
                             const std::vector<std::string>& partition_dirs);

}  // namespace partita::bench
