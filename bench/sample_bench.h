// `partita bench sample`: neighbour sampling throughput on a large power-law graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct SampleBenchOptions {
  std::string input;  // an npy folder; empty = generate RMAT with the options below
  int64_t num_nodes = 1 << 20;
  double avg_degree = 20;
  uint64_t seed = 1;
  int64_t batch_size = 1024;
  std::vector<std::vector<int>> fanouts{{15, 10, 5}, {25, 10}};
  std::vector<int> threads{1, 2};
  int num_batches = 64;  // measured batches per configuration (after warm-up)
  int64_t feature_dim = 128;  // float32 features gathered per sampled node; 0 skips it
  // Instead of the above: the heterogeneous generator's graph with `hetero_papers` papers
  // (authors, venues and edges in its default proportions), sampled by the hetero kernel
  // (every fanout per edge type) and, on the very same edges with the types dropped, by the
  // homogeneous kernel, in `rounds` interleaved rounds (the goal: hetero
  // edges/s >= 0.8 x homogeneous, as the types should cost little over the kernel they share).
  bool hetero = false;
  int64_t hetero_papers = 200000;
  // --hetero on a knowledge graph instead of the generator's: a folder of triples
  // (`format: triples`, FB15k-237: 237 relations, each an edge type), every entity a seed.
  std::string triples;
  int rounds = 5;
  // Instead of the above: temporal sampling ("edge" or "node" times) against uniform
  // sampling on the same graph (RMAT or `input`), both in disjoint mode (which temporal
  // sampling needs), the same seeds, in `rounds` interleaved rounds (the goal:
  // temporal edges/s >= 0.8 x uniform). Times are uniform in [0, 10^9) by original id, each
  // seed's bound too, so about half of a node's in-edges qualify. The same rounds also
  // sample with the times stored as int64 (graph/time_order.h's TimeWidth::kWide) and
  // print the 32-bit codes' rate over theirs.
  std::string temporal;
};

// Prints, per fanout and thread count, medians of `rounds` rounds of batches/s, sampled
// edges/s (by wall and by CPU time), minor page faults per batch and, interleaved, the same
// on the topology in 4 KB pages; the scaling against one thread measured in the same run,
// and the topology's bytes per edge; then the gather
// of the sampled nodes' features next to a memcpy of the same bytes (bench/gather_bench.h).
void run_sample_bench(const SampleBenchOptions& options);
void run_hetero_sample_bench(const SampleBenchOptions& options);
void run_temporal_sample_bench(const SampleBenchOptions& options);

}  // namespace partita::bench
