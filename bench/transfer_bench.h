// `partita bench transfer`: remote feature transfer next to raw loopback TCP moving the
// same bytes.
#pragma once

#include <cstdint>
#include <string>

namespace partita::bench {

struct TransferBenchOptions {
  int64_t num_nodes = 1 << 20;  // RMAT nodes of the served partition folder (2 parts)
  double avg_degree = 4;        // the edges do not matter here; few make generating fast
  int64_t feature_dim = 128;    // float32 features per node
  int64_t rows = 56000;         // random rows per request (a [15,10,5] batch's remote share)
  bool contiguous = false;      // the partition's first rows instead: no gather cost
  int requests = 10;            // measured requests per configuration and round
  int repeat = 5;               // interleaved rounds after one warm-up; medians are reported
  uint64_t seed = 1;
  std::string workdir;          // keeps (and reuses) the generated graph; empty: a temporary folder
};

// Partition 1 of an RMAT graph served by a partition actor on a `partita daemon` child;
// in each of the interleaved rounds (bench/harness.h, one warm-up round), the same bytes
// moved by:
//   (a) raw loopback TCP between two threads of this process (blocking sockets, default
//       buffers): the baseline;
//   (b) the transport's request channel between two threads of this process, the body
//       filled from a contiguous buffer: the channel's own cost, without a gather;
//   (c) the feature channel from the daemon: the partition gathers the random rows piece by
//       piece, this process receives them into one reused buffer (what a sampler in
//       another process does per batch, short of placing the rows); with `contiguous`,
//       rows in order, whose gather is a plain copy;
//   (d) a CAF message from the daemon (feature request and reply) for comparison.
// Prints a table of every round's GB/s, the medians and the medians of the rounds' ratios
// to (a), then whether (c) meets the goal of 0.8 of (a).
void run_transfer_bench(const TransferBenchOptions& options);

}  // namespace partita::bench
