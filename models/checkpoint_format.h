// The bytes of a saved training state (models/checkpoint.h): a checkpoint file's, and what a
// replica that rejoins receives. Integers are little-endian.
//
//   envelope (32 bytes)   "PRTTCKPT", u32 version, u32 0, u64 payload bytes, u64 checksum
//                         of the payload (base/checksum.h)
//   payload (version 2)   text structure     the model's ModelConfig::structure()
//                         text optimizer     make_optimizer's name ("adam", "sgd")
//                         u32 count, then `count` records, each:
//                           text name
//                           u8 element type (base/dtype.h's DType code), u8 rank (<= kMaxRank)
//                           rank x i64 sizes (each >= 0)
//                           u64 data bytes (= the sizes' product x the type's size)
//                           zeros to the next multiple of 8 bytes from the payload's start
//                           the data, row-major
//   text                  u32 bytes, then the bytes (at most kMaxText)
//
// Record names:
//   parameter/NAME, buffer/NAME   the model's tensors, NAME their module path
//                                 (torch::nn::Module::named_parameters, named_buffers)
//   options/G                     the settings of the optimiser's G-th parameter group, f64:
//                                 adam: lr, beta1, beta2, eps, weight_decay, amsgrad (0/1)
//                                 sgd: lr, momentum, dampening, weight_decay, nesterov (0/1)
//   state/I/FIELD                 the optimiser's state of its I-th parameter (counted
//                                 over its groups in order), when it has one:
//                                 adam: step (i64, rank 0), exp_avg, exp_avg_sq,
//                                 max_exp_avg_sq (amsgrad only); sgd: momentum_buffer
//
// Version 1's payload was torch's archive (a zip). It is read, never written: torch's writer
// computes a CRC32 of every byte (AIFB's R-GCN: 49 MB of weights and Adam state took
// 0.22-0.6 s to save, more than its epoch's training); version 2 saves in 0.03 s, 3-4
// memcpys of the same bytes (bench/checkpoint_bench.h).
#pragma once

#include <cstdint>

namespace partita::checkpoint_format {

constexpr char kMagic[8] = {'P', 'R', 'T', 'T', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 2;              // what save_training_state writes
constexpr uint32_t kTorchArchiveVersion = 1;  // read only

struct Envelope {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t length;
  uint64_t checksum;
};
static_assert(sizeof(Envelope) == 32, "the envelope is a fixed 32-byte header");

constexpr uint8_t kMaxRank = 8;
constexpr uint32_t kMaxText = 4096;
constexpr uint64_t kDataAlignment = 8;

}  // namespace partita::checkpoint_format
