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
  int warmup_runs = 2;
  int runs = 9;  // the median is reported
};

// Prints, per message, the encoded size, encode GB/s (tensor payload bytes per second),
// decode time (zero-copy: validation only) and encode+decode GB/s, next to a memcpy of the
// payload. Throws UsageError for invalid options.
void run_codec_bench(const CodecBenchOptions& options);

}  // namespace partita::bench
