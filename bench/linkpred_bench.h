// `partita bench linkpred`: training speed of knowledge-graph embeddings (DistMult on
// FB15k-237) in edges per second (positives with both sides' negatives), in one process,
// with the table on disk behind a partition buffer (prefetching the next swap, and not),
// and with 2 partitions on 2 daemons,
// next to a dense single-process libtorch loop (one
// Embedding table with sparse gradients, index_select, torch's Adagrad) in the same run; and
// filtered ranking of the test triples against every entity, next to its GEMM floor.
#pragma once

#include <cstdint>
#include <string>

namespace partita::bench {

struct LinkpredBenchOptions {
  std::string dataset;  // a triples folder; default: FB15k-237 of the shared data
  int64_t dim = 200;
  int64_t batch_size = 1000;  // positives per step
  int64_t negatives = 1000;   // per chunk and side
  int64_t chunk_size = 500;
  int64_t steps = 60;         // timed training steps per configuration and round
  int rounds = 3;
  int cores = 2;              // torch threads in one process; split over the daemons
  int buffer_partitions = 8;  // (d): the table in this many partitions on disk
  int buffer = 4;             // (d): of which the buffer holds this many
  std::string configs = "adebc";  // the configurations to run, in this order each round
  // (d), (e): drop the table files' pages from the page cache while the job runs, so that
  // the buffer's reads come from the device (see run_linkpred_bench).
  bool drop_cache = false;
  std::string work_dir;       // keeps the partitions between runs
  uint64_t seed = 1;
};

// Rounds interleave (a) 1 partition, 1 trainer on `cores` threads in this process, (d) the
// same with the entity table on disk in `buffer_partitions` partitions, `buffer` of them in
// memory (embeddings/partition_buffer.h), prefetching every file of the next swap, (e) (d)
// without prefetching, (b) 2 partitions on 2 `partita daemon` children, 1 trainer each on
// cores / 2 threads, (c) the dense loop on `cores` threads in this process, each `steps`
// steps (after the first step, which the job's set-up and the dense loop's warm-up
// include; steps past the epoch's end are not run, so a large `steps` times one whole
// epoch). Positives per step are counted exactly (a buffer state's last step is short).
// For (d) and (e): the swaps against the walk's and the lower bound, the seconds training
// stood still in swaps and waiting for reads, and the bytes this process read from the
// block device (/proc/self/io read_bytes) from the job's start to its last step next to
// the bytes the buffer read: whether the
// figure measures the device or the page cache. With `drop_cache`, a thread syncs and
// drops (fdatasync, POSIX_FADV_DONTNEED) every table file's pages every 20 ms while (d) and
// (e) run. After each of (a), (d) and (b): the job's filtered ranking of the 20,466 test
// triples both ways over all entities, and (in this process, `cores` threads) the floor:
// the products of every query with every entity block alone (torch::mm, the same shapes).
// Prints medians over rounds.
void run_linkpred_bench(const LinkpredBenchOptions& options);

}  // namespace partita::bench
