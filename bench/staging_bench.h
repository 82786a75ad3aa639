// `partita bench staging`: data staging (runtime/staging/) of a partition folder to a
// node's cache next to raw TCP and the bare request channel moving the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct StagingBenchOptions {
  int64_t num_nodes = 1 << 20;  // RMAT nodes of the staged partition folder (2 parts)
  double avg_degree = 4;
  int64_t feature_dim = 128;    // float32 features per node: most of the bytes
  int repeat = 5;               // interleaved rounds; medians are reported
  uint64_t seed = 1;
  std::string workdir;          // keeps (and reuses) the generated graph; empty: a temporary folder
  std::vector<int> in_flight{4};  // (b) and (c) once per value: the staging's requests in flight
};

// The folder's META.json, partition_book.bin and both part<i>/ (the whole 1M-node graph by
// default), served by a StageServer and staged by a StageCache in this process over
// loopback (TLS unless --insecure: the bench's own cluster CA). Each round, one after the
// other:
//   (t) raw TCP (bench/raw_tcp.h): the same bytes over a plain loopback socket, no TLS, in
//       writes of the staging chunk size, from memory into a reused buffer;
//   (a) the request channel alone: the same bytes in replies of the staging chunk size,
//       filled from memory and received into a reused buffer (the transport's own rate);
//   (b) staging into an empty cache: reading the files, sending, writing them under
//       temporary names, checking every file's checksum, renaming;
//   (c) staging again into that cache: every file checked, nothing copied (its bytes
//       copied are printed, and must be 0).
// (b) and (c) run once for each number of requests in flight (StageCacheOptions) given,
// one after the other in each round (every other round in the reverse order). Prints each round with the process's CPU seconds per
// GB of (t), (a) and (b) (both ends), then medians and the medians of the rounds' ratios.
void run_staging_bench(const StagingBenchOptions& options);

}  // namespace partita::bench
