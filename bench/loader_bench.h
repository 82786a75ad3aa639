// `partita bench loader`: distributed mini-batches, in one process and on two daemons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct LoaderBenchOptions {
  std::string input;     // an npy folder with features, labels and a training split; empty: RMAT
  int64_t num_nodes = 1 << 20;  // RMAT (without input)
  double avg_degree = 20;
  int64_t feature_dim = 128;
  std::vector<int> fanouts{15, 10, 5};
  int64_t batch_size = 1024;
  int num_batches = 40;  // measured per sampler and configuration, at most, after 2 warm-up
  double seconds = 1.5;  // samplers start no batch after this much of a measurement
  int prefetch = 2;      // batches in flight per sampler actor
  int repeat = 3;        // rounds of every measurement; medians are reported
  uint64_t seed = 1;
  std::string workdir;   // keeps (and reuses) the generated graph; empty: a temporary folder
  // (c) again with a cache of each of these percentages of partition 1's rows
  // (graph/row_cache.h), for each policy; empty: none.
  std::vector<double> cache_percents;
  std::vector<std::string> cache_policies{"degree", "frequency", "sieve"};
  // With cache_percents: batches sampled in this process for the bound of any cache
  // (graph/cache_bound.h), half to rank the rows, half to score the ranking.
  int64_t cache_bound_batches = 256;
};

// Generates RMAT with features and labels (or reads `input`), partitions it into 1 and 2
// parts (METIS; reused from `workdir` while the options and the input are unchanged) and
// measures the one sampling pipeline as trainers use it: sampler actors, each with
// `prefetch` batches in flight, drained by a consumer thread per sampler through
// SamplerClient (epoch, then next; batches by move), features and labels included:
//   (a) 1 partition in-process: one sampler;
//   (b) 2 partitions in-process: a partition actor and a sampler per partition, both
//       samplers at once, each reading its own partition directly and the other by message;
//   (c) 2 partitions, partition 1 on a `partita daemon` over loopback: the sampler of
//       partition 0 in this process, as its trainer's process hosts it, fetching partition
//       1's rows over its feature channel.
// With cache_percents, (c) is measured again with each cache size and policy, next to (c)
// without cache in the same rounds: batches/s, and the remote bytes per batch (what crosses
// the channel: the misses). The caches are warmed by one untimed round first. Before that,
// the bound of any cache (graph/cache_bound.h) is measured without daemons, from
// cache_bound_batches batches partition 0's sampler would build, sampled in this process:
// the share of the asked rows the static top k by batches asking covers, in-sample and held
// out, for 5, 10, 20, 30, 50% and the measured sizes, with the degree and frequency
// policies' rankings scored alike, caches that see the next batches or every batch to come
// (lookahead_coverage), and per hop (which hop asks for the rows that miss).
// Samplers measured together run for the same time (`seconds`, at most `num_batches`
// each; remote feature transfer alone: `partita bench transfer`). The rounds interleave
// the configurations, so that load from elsewhere on the machine
// spreads over all of them.
void run_loader_bench(const LoaderBenchOptions& options);

}  // namespace partita::bench
