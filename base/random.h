// Deterministic randomness. Partita's results must not depend on the platform's standard
// library (std::shuffle and std::uniform_int_distribution are implementation-defined) nor
// on thread counts, so everything random is built from these two primitives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace partita {

// A strong 64-bit mix (SplitMix64's finaliser): a counter-based generator, hash(key) gives
// an independent-looking value for every key, so work can be split across threads freely.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t mix64(uint64_t a, uint64_t b) { return mix64(mix64(a) ^ b); }
inline uint64_t mix64(uint64_t a, uint64_t b, uint64_t c) { return mix64(mix64(a, b) ^ c); }

// A small sequential generator (SplitMix64) for streams within one thread.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((__uint128_t(next()) * n) >> 64); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller; one value per call, simple and deterministic).
  double normal();

 private:
  uint64_t state_;
};

// Fisher-Yates with Rng: the same permutation on every platform.
template <typename T>
void shuffle(std::vector<T>& values, Rng& rng) {
  for (size_t i = values.size(); i > 1; --i) {
    std::swap(values[i - 1], values[rng.below(i)]);
  }
}

}  // namespace partita
