#include "base/checksum.h"

#include <algorithm>
#include <cstring>

namespace partita {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t mix_lane(uint64_t lane, uint64_t word) {
  lane += word * kPrime2;
  return rotl(lane, 31) * kPrime1;
}

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

// Four independent lanes (as in xxHash) so the multiply chains overlap and the hash
// runs near memory bandwidth; stripes are 32 bytes regardless of how updates are cut.
void Checksum::update(const void* data, size_t bytes) {
  if (bytes == 0) return;  // data may be null then, and memcpy(…, nullptr, 0) is undefined
  auto* p = static_cast<const uint8_t*>(data);
  total_bytes_ += bytes;
  if (num_pending_ > 0) {
    size_t take = std::min(bytes, sizeof(pending_) - num_pending_);
    std::memcpy(pending_ + num_pending_, p, take);
    num_pending_ += take;
    p += take;
    bytes -= take;
    if (num_pending_ < sizeof(pending_)) return;
    for (int i = 0; i < 4; ++i) lanes_[i] = mix_lane(lanes_[i], load64(pending_ + 8 * i));
    num_pending_ = 0;
  }
  while (bytes >= 32) {
    for (int i = 0; i < 4; ++i) lanes_[i] = mix_lane(lanes_[i], load64(p + 8 * i));
    p += 32;
    bytes -= 32;
  }
  std::memcpy(pending_, p, bytes);
  num_pending_ = bytes;
}

uint64_t Checksum::digest() const {
  uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
  h ^= total_bytes_ * kPrime1;
  for (size_t i = 0; i < num_pending_; ++i) h = rotl(h ^ (pending_[i] * kPrime2), 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  return h;
}

uint64_t checksum(const void* data, size_t bytes) {
  Checksum c;
  c.update(data, bytes);
  return c.digest();
}

}  // namespace partita
