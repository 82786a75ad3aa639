// A column's draws and their order, shared by the one-hop kernels (graph/hop_sampler.cpp,
// graph/temporal_hop.cpp): every kernel that draws `k` of a column's `n` entries draws them
// with choose_distinct, from the same key, so that the general path and the fast paths pick
// the same neighbours (partition invariance, graph/hop_sampler.h); and every kernel emits a
// column's picks in canonical order, which for a dozen picks is a sort per node.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/random.h"

namespace partita {

// Sorting a column's picks: each one's place among n distinct keys is how many of them are
// smaller (n^2 comparisons without a branch on the keys, which the compiler vectorises for
// 32-bit keys). An insertion sort of ten random keys, what std::sort does with so few,
// mispredicts a branch about every other comparison: it took a third of the temporal
// kernel's time ([10,10] on RMAT, perf). Beyond kPlacedKeys keys the n^2 comparisons cost
// more than the mispredictions, and callers sort.
constexpr size_t kPlacedKeys = 32;
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
  picks.clear();
  for (int64_t j = n - k; j < n; ++j) {
    int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    bool taken = std::find(picks.begin(), picks.end(), t) != picks.end();
    picks.push_back(taken ? j : t);
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

// Orders a column's picks by their positions in it, which are distinct: how a temporal
// draw's picks, found in time order, are emitted in canonical order. Up to kPlacedKeys
// picks without a branch on the positions (place_distinct); more, std::sort.
class PositionOrder {
 public:
  // For `n` picks (n >= 2), whose offsets in the column key(j, offset) then gives.
  void start(size_t n) {
    n_ = n;
    offset_.resize(n);
  }
  void key(size_t j, uint32_t offset) { offset_[j] = offset; }

  // Permutes at[0, n) and neighbor[0, n) alike, into increasing offset.
  void apply(int64_t* at, int64_t* neighbor) {
    order_.resize(n_);
    if (n_ <= kPlacedKeys) {
      place_distinct(offset_.data(), n_, place_);
      for (size_t i = 0; i < n_; ++i) order_[place_[i]] = static_cast<uint32_t>(i);
    } else {
      for (size_t i = 0; i < n_; ++i) order_[i] = static_cast<uint32_t>(i);
      std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return offset_[a] < offset_[b]; });
    }
    sorted_.resize(2 * n_);
    for (size_t i = 0; i < n_; ++i) {
      sorted_[i] = at[order_[i]];
      sorted_[n_ + i] = neighbor[order_[i]];
    }
    std::copy(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(n_), at);
    std::copy(sorted_.begin() + static_cast<std::ptrdiff_t>(n_), sorted_.end(), neighbor);
  }

 private:
  size_t n_ = 0;
  uint32_t place_[kPlacedKeys];
  std::vector<uint32_t> offset_, order_;  // order_[i]: the pick that goes i-th
  std::vector<int64_t> sorted_;
};

}  // namespace partita
