// `partita bench allreduce`: the allreduce group against gloo's ring allreduce (what
// PyTorch's DDP uses on CPU), each rank in its own process over loopback.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct AllreduceBenchOptions {
  std::vector<int64_t> floats{int64_t{1} << 20, int64_t{16} << 20};
  std::vector<int> members{2, 4};
  int warmup = 3;       // operations before the measured ones
  int iterations = 10;  // measured operations per run
  int runs = 3;         // fresh processes per configuration and implementation, alternating
};

// For each (floats, members): `runs` times a group of `members` processes running gloo's
// ring allreduce and `runs` times one of Partita allreduce members (each process hosts one
// member and sums through its own Allreduce client, as a trainer does), alternating.
// Per run: the median over the measured operations of the slowest rank's time. Prints a
// table of the runs per row (bench/harness.h, gloo the baseline), the ratio and both CPU
// times per operation and rank; every run checks one exact sum.
// Then, for the 2-member rows, the time CAF messages (4 MiB each, all in flight) take to
// move the bytes one member sends and receives in an operation between two processes:
// what a ring over actor messages would spend on transport alone.
void run_allreduce_bench(const AllreduceBenchOptions& options);

// One rank of a run, in its own process (the hidden subcommands the benchmark starts).
struct AllreduceRankOptions {
  int rank = 0;
  int size = 1;
  int64_t floats = 0;
  int warmup = 0;
  int iterations = 1;
  std::string store;  // gloo: the rendezvous folder shared by the ranks
};

// Publishes an allreduce member on a loopback port (printed), sums once the benchmark has
// wired the group, prints its times and stays until the benchmark stops its member.
void run_allreduce_member_rank(const AllreduceRankOptions& options);
// Joins the gloo group through the rendezvous folder, sums, prints its times.
void run_gloo_rank(const AllreduceRankOptions& options);
// Publishes an actor that answers every byte buffer with itself (the CAF-messages row),
// until the benchmark stops it.
void run_echo_process();

}  // namespace partita::bench
