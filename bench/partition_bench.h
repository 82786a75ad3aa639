// `partita bench partition`: the whole partition command against the bare METIS call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct PartitionBenchOptions {
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;
  std::vector<int> parts{2, 4};
  uint64_t seed = 1;
  std::string workdir;  // empty: a fresh folder under $TMPDIR, removed afterwards
  int threads = 0;
  int repeat = 3;  // interleaved rounds of both children; medians are compared
  double timeout_seconds = 1800;
};

// Generates the RMAT graph once (npy layout), then for each part count runs, each as a
// fresh child process so that its peak memory is its own: (1) `partita partition` on the
// files, end to end (read, METIS, relabel, write); (2) the baseline: read the same files,
// build METIS's input and time METIS_PartGraphKway alone. Prints a table of interleaved
// rounds per part count (bench/harness.h), then the time ratio and both peaks.
void run_partition_bench(const PartitionBenchOptions& options);

// The baseline child: prints one JSON line {"metis_seconds": ...}.
void run_bare_metis(const std::string& npy_dir, int parts, uint64_t seed, int threads);

}  // namespace partita::bench
