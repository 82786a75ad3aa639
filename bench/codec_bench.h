// `partita bench codec`: encode and decode of the protocol's large messages (messages/
// codec.h) next to a memcpy of the same bytes, in the same run, all buffers reused.
#pragma once

#include <cstdint>

namespace partita::bench {

struct CodecBenchOptions {
  // A feature reply: rows x dim float32, about the remote rows of one batch with fanouts
  // [15,10,5] on RMAT 1M in 2 partitions (56k x 128 = 29 MB).
  int64_t feature_rows = 56000;
  int64_t feature_dim = 128;
  // A hop reply of `hop_neighbors` sampled neighbours (with edge ids) for
  // hop_neighbors / fanout input nodes.
  int64_t hop_neighbors = 800000;
  int64_t fanout = 15;
  int warmup_runs = 2;  // rounds not counted
  int runs = 9;  // interleaved rounds; the median is reported
};

// Prints, per message, its encoded size and a table of interleaved rounds (bench/harness.h):
// memcpy of the payload (the floor), encode and encode+decode GB/s (tensor payload bytes per
// second), then the decode's median time (zero-copy: validation only). Throws UsageError
// for invalid options.
void run_codec_bench(const CodecBenchOptions& options);

}  // namespace partita::bench
