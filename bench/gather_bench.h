// The feature gather of `partita bench sample`: FeatureStore::gather against a memcpy of
// the same number of bytes, in the same rounds.
#pragma once

#include <cstdint>
#include <vector>

namespace partita::bench {

struct GatherBenchOptions {
  int64_t num_nodes = 1 << 20;  // rows of the feature matrix
  int64_t dim = 128;            // float32 columns: 1M x 128 is 512 MiB
  // Ids per batch: about the distinct nodes that 1024 seeds with fanouts [15,10,5] reach on
  // an RMAT graph of 1M nodes. Ids within a batch are distinct, in random order.
  int64_t batch_nodes = 300000;
  int num_batches = 8;  // distinct batches in the stream; one pass gathers them all
  int warmup_runs = 2;  // rounds not counted
  int runs = 7;  // interleaved rounds; the median is reported
  std::vector<int> threads{1, 2};
  // Prefetch distances (rows ahead, graph/row_copy.h) the kernel is timed with on one
  // thread, next to memcpy in the same rounds; empty: no sweep.
  std::vector<int> prefetch_sweep;
  uint64_t seed = 1;
};

// Builds the matrix (deterministic values) as an array file, opens it mapped and in
// huge-page memory (partitioner/partition_stores.h), draws the batches, then for each
// thread count prints a table of interleaved rounds (bench/harness.h), each case a pass over
// every batch into one reused output buffer: a memcpy of the same bytes from a contiguous
// source (the floor), the gather from the mapping, the gather from memory into a 64-byte
// aligned buffer (as a torch tensor's) and into a buffer 16 bytes off that alignment (as a
// plain malloc's), and the row copy kernel with plain stores only; in GB/s (output bytes
// per second) with the ratios to memcpy by wall time, and below it the same ratios by CPU
// time and the memory gather's page faults per batch. Then, when asked, a table of the row
// copy kernel alone at each prefetch distance. Returns the process exit code.
int run_gather_bench(const GatherBenchOptions& options);

}  // namespace partita::bench
