// A fast streaming 64-bit checksum for array files. Not cryptographic: it catches
// truncation, bit rot and torn writes, at memory speed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace partita {

class Checksum {
 public:
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  uint64_t lanes_[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull,
                        0x85EBCA77C2B2AE63ull};
  uint8_t pending_[32] = {};  // bytes not yet forming a full 32-byte stripe
  size_t num_pending_ = 0;
  uint64_t total_bytes_ = 0;
};

uint64_t checksum(const void* data, size_t bytes);

}  // namespace partita
