// `partita bench checkpoint`: saving and loading a job's training state (models/checkpoint.h)
// next to a memcpy of the same bytes and to torch's own archive (what checkpoints were
// before format version 2), in the same interleaved rounds. The default model has AIFB's
// R-GCN shapes (examples/aifb.yaml: one-hot input over 8,285 nodes, 90 relations, 30 bases,
// 16 hidden units), whose state with Adam's is 49 MB: a job saves it after every epoch.
#pragma once

#include <cstdint>

namespace partita::bench {

struct CheckpointBenchOptions {
  int64_t num_nodes = 8285;  // the one-hot input's width
  int64_t hidden = 16;
  int relations = 90;
  int bases = 30;
  int rounds = 7;  // interleaved; the median is reported
};

// Prints the state's bytes and a table of interleaved rounds (bench/harness.h, one warm-up
// round): seconds of memcpy (the floor), save, load and torch's archive (the baseline), then
// save's GB/s and speed-up over the archive. Throws UsageError for invalid options.
void run_checkpoint_bench(const CheckpointBenchOptions& options);

}  // namespace partita::bench
