// The embedding shards the shard fuzz targets drive (fuzz_shard_request.cpp,
// fuzz_shard_checkpoint.cpp), and the form of their inputs, which the seeds
// (make_seeds.cpp) are written in.
//
// An input's first byte chooses the shard: dim 1 to 4 (bits 0-1), one or two trainers
// (bit 2), sparse Adagrad or SparseAdam (bit 3), and 0 to 7 rows (bits 4-6) from global id
// kFirstId, so that an id, a range or a checkpoint of another shard is one mutation away.
//
// shard_request: then request frames, each as a u16 length (little-endian) and that many
// bytes (a length past the input's end takes what is left), answered in order by one shard.
//
// shard_checkpoint: then a mode byte (bit 0: the harness writes the checkpoint's checksum,
// so that mutations reach the header's checks behind it) and the checkpoint's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "embeddings/embedding_shard.h"

namespace partita::fuzz {

constexpr int64_t kFirstId = 5;

inline EmbeddingShardConfig shard_config(uint8_t choice) {
  EmbeddingShardConfig config;
  config.part = 1;
  config.dim = 1 + (choice & 3);
  config.num_trainers = 1 + ((choice >> 2) & 1);
  config.optimizer = RowOptimizer::parse((choice >> 3) & 1 ? "sparse_adam" : "adagrad", 0.1, "optimizer");
  config.begin = kFirstId;
  config.end = kFirstId + ((choice >> 4) & 7);
  config.seed = 9;
  return config;
}

inline std::unique_ptr<EmbeddingShard> make_shard(uint8_t choice) {
  const EmbeddingShardConfig config = shard_config(choice);
  std::vector<int64_t> original(static_cast<size_t>(config.end - config.begin));
  for (size_t i = 0; i < original.size(); ++i) original[i] = static_cast<int64_t>(100 + i);
  return std::make_unique<EmbeddingShard>(config, original);
}

// One frame of a shard_request input: its length, then its bytes.
inline std::string request_piece(const std::vector<char>& frame) {
  const uint16_t length = static_cast<uint16_t>(frame.size());
  std::string piece{static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  return piece + std::string(frame.begin(), frame.end());
}

}  // namespace partita::fuzz
