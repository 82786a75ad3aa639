// A column's draws and their order, shared by the one-hop sampler's general path
// (graph/hop_sampler.cpp) and its fast kernels (graph/hop_kernels.h): every kernel that
// draws `k` of a column's `n` entries draws them with choose_distinct, from the same key, so
// that the general path and the fast paths pick the same neighbours (partition invariance,
// graph/hop_sampler.h); and every kernel emits a column's picks in canonical order, which
// for a dozen picks is a sort per node.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/random.h"

namespace partita {

// Sorting a column's picks: each one's place among n distinct keys is how many of them are
// smaller (n^2 comparisons without a branch on the keys). An insertion sort of ten random
// keys, what std::sort does with so few, mispredicts a branch about every other comparison:
// it took a third of the temporal kernel's time ([10,10] on RMAT, perf), and placing the
// picks made the uniform kernel a fifth faster. Beyond kPlacedKeys keys the n^2 comparisons
// cost more than the mispredictions, and callers sort. (Comparing four keys at once with
// vector types was no faster for these n.)
constexpr size_t kPlacedKeys = 32;

// place[i] = the place of keys[i] among keys[0, n) in increasing order, for n <= kPlacedKeys
// distinct keys.
inline void place_distinct(const uint32_t* keys, size_t n, uint32_t* place) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t smaller = 0;
    for (size_t j = 0; j < n; ++j) smaller += keys[j] < keys[i];
    place[i] = smaller;
  }
}

// Floyd's algorithm: k distinct draws from [0, n) (k <= n) with exactly k random numbers.
// The membership test scans the picks, which beats any set for the fanouts GNNs use. The
// picks come sorted unless `sorted` is false (a caller that orders them by something else).
inline void choose_distinct(Rng& rng, int64_t n, int64_t k, std::vector<int64_t>& picks, bool sorted = true) {
  picks.resize(static_cast<size_t>(k));  // written in place: appends were calls, not inlined
  int64_t* drawn = picks.data();
  for (int64_t j = n - k; j < n; ++j, ++drawn) {
    const auto t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    *drawn = std::find(picks.data(), drawn, t) != drawn ? j : t;
  }
  if (!sorted || k < 2) return;
  if (k > static_cast<int64_t>(kPlacedKeys) || n > int64_t{1} << 32) {
    std::sort(picks.begin(), picks.end());
    return;
  }
  uint32_t keys[kPlacedKeys], place[kPlacedKeys];
  const auto count = static_cast<size_t>(k);
  for (size_t i = 0; i < count; ++i) keys[i] = static_cast<uint32_t>(picks[i]);
  place_distinct(keys, count, place);
  for (size_t i = 0; i < count; ++i) picks[place[i]] = keys[i];
}

}  // namespace partita
