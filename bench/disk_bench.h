// `partita bench disk`: the gather of features on disk (graph/disk_rows.h) under a memory
// budget smaller than the features, next to the device's own random-read rate for the same
// request size at the same queue depth, measured in the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct DiskBenchOptions {
  std::string input;  // npy folder (x.npy and edges); "" = generate RMAT
  std::string workdir;  // where the feature file goes ("" = a temporary folder)
  int64_t num_nodes = 1 << 20;  // RMAT, without --input
  int64_t dim = 128;            // RMAT float32 features per node: 1M x 128 is 512 MiB
  uint64_t seed = 1;
  // The batches whose rows are gathered: the distinct nodes the sampler reaches.
  int64_t batch_size = 1024;
  std::vector<int> fanouts{15, 10, 5};
  int num_batches = 4;
  int queue_depth = 64;  // of the store's reader and of the device baseline
  // The store's merge gaps to measure (DiskReadOptions::merge_gap_bytes), each in every round.
  std::vector<uint64_t> merge_gaps{0, 8192};
  int runs = 5;          // interleaved rounds; medians are reported
  // The memory the rounds run under (a cgroup the bench makes: v2 memory.max or v1
  // memory.limit_in_bytes; needs root); 0 = no cgroup.
  int64_t memory_limit_mb = 128;
};

// Generates or reads the graph, writes its features as an array file, samples the batches,
// frees the graph, moves itself into the memory cgroup, then in each round, every reader
// after the file's cached pages are dropped (POSIX_FADV_DONTNEED): the bare device (an
// io_uring loop of its own: O_DIRECT, the same queue depth, no copy) reading one row's span
// for as many uniformly random rows as the batches have; for each merge gap, the bare
// device replaying the store's reads for the batches (DiskRows::requests) and the disk
// store gathering them; and the pread fallback on 20,000 rows of the first batch. Prints
// the rounds' rows/s (bench/harness.h), then reads/s, rows/s and MB/s of each, store /
// device on the same reads, and the cgroup's peak memory. Returns the process exit code.
int run_disk_bench(const DiskBenchOptions& options);

}  // namespace partita::bench
