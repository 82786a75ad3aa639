#include "embeddings/bucket_order.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace partita {

void check_buffer_shape(int num_partitions, int capacity, const char* field) {
  const std::string f(field);
  if (num_partitions < 1) {
    throw UsageError(f + ".partitions: must be at least 1, got " + std::to_string(num_partitions));
  }
  if (capacity < 2) {
    throw UsageError(f + ".buffer: must hold at least 2 partitions (a bucket needs both its ends), got " +
                     std::to_string(capacity));
  }
  if (capacity > num_partitions) {
    throw UsageError(f + ".buffer: " + std::to_string(capacity) + " is more than the " + std::to_string(num_partitions) +
                     " partitions");
  }
}

int64_t swap_lower_bound(int num_partitions, int capacity) {
  check_buffer_shape(num_partitions, capacity, "embeddings");
  const int64_t p = num_partitions, c = capacity;
  const int64_t pairs = p * (p - 1) / 2 - c * (c - 1) / 2;
  return (pairs + c - 2) / (c - 1);
}

namespace {

// The walk's bookkeeping: which unordered pairs have been resident together.
class Walk {
 public:
  Walk(int p, int c) : p_(p), met_(static_cast<size_t>(p) * p, false) {
    order_.num_partitions = p;
    order_.capacity = c;
    std::vector<int> first(static_cast<size_t>(c));
    for (int i = 0; i < c; ++i) first[i] = i;
    enter(first, -1);
  }

  const std::vector<int>& state() const { return order_.states.back(); }
  bool resident(int i) const {
    const auto& s = state();
    return std::find(s.begin(), s.end(), i) != s.end();
  }
  bool met(int i, int j) const { return met_[static_cast<size_t>(i) * p_ + j]; }
  bool done(int i) const {
    for (int j = 0; j < p_; ++j) {
      if (!met(i, j)) return false;
    }
    return true;
  }
  void swap(size_t slot, int admitted) {
    std::vector<int> next = state();
    next[slot] = admitted;
    enter(next, admitted);
  }
  BucketOrder take() { return std::move(order_); }

 private:
  // Records state `s`, whose new pairs all involve `admitted` (or every pair of the first).
  void enter(const std::vector<int>& s, int admitted) {
    std::vector<std::pair<int, int>> buckets;
    for (int a : s) {
      for (int b : s) {
        if (met(a, b) || (admitted >= 0 && a != admitted && b != admitted)) continue;
        buckets.emplace_back(a, b);
      }
    }
    for (const auto& [a, b] : buckets) met_[static_cast<size_t>(a) * p_ + b] = true;
    std::sort(buckets.begin(), buckets.end());
    order_.states.push_back(s);
    order_.buckets.push_back(std::move(buckets));
  }

  int p_;
  std::vector<bool> met_;  // [p * p], symmetric once both orders are entered
  BucketOrder order_;
};

}  // namespace

BucketOrder beta_order(int num_partitions, int capacity) {
  check_buffer_shape(num_partitions, capacity, "embeddings");
  const int p = num_partitions, c = capacity;
  Walk walk(p, c);
  for (;;) {
    std::vector<int> undone;
    for (int i = 0; i < p; ++i) {
      if (!walk.done(i)) undone.push_back(i);
    }
    if (undone.empty()) break;
    auto slot_of = [&](int partition) {
      const auto& s = walk.state();
      return static_cast<size_t>(std::find(s.begin(), s.end(), partition) - s.begin());
    };
    auto done_slot = [&](const std::vector<bool>& taken) {
      for (size_t slot = 0; slot < walk.state().size(); ++slot) {
        if (!taken[slot] && walk.done(walk.state()[slot])) return slot;
      }
      return walk.state().size();
    };
    std::vector<bool> fixed(static_cast<size_t>(c), false);
    if (static_cast<int>(undone.size()) <= c) {
      // The rest fit: bring every partition not yet done in, over partitions that are.
      for (int u : undone) {
        if (walk.resident(u)) fixed[slot_of(u)] = true;
      }
      for (int u : undone) {
        if (walk.resident(u)) continue;
        const size_t slot = done_slot(fixed);
        walk.swap(slot, u);
        fixed[slot] = true;
      }
      break;
    }
    // The fixed set: c - 1 partitions not yet done, those resident first.
    int fixed_count = 0;
    for (size_t slot = 0; slot < fixed.size() && fixed_count < c - 1; ++slot) {
      if (!walk.done(walk.state()[slot])) {
        fixed[slot] = true;
        ++fixed_count;
      }
    }
    for (int u : undone) {
      if (fixed_count == c - 1) break;
      if (walk.resident(u)) continue;
      size_t slot = done_slot(fixed);
      if (slot == fixed.size()) slot = static_cast<size_t>(std::find(fixed.begin(), fixed.end(), false) - fixed.begin());
      walk.swap(slot, u);
      fixed[slot] = true;
      ++fixed_count;
    }
    const size_t cycling = static_cast<size_t>(std::find(fixed.begin(), fixed.end(), false) - fixed.begin());
    // Cycle the free slot through every partition some fixed one has not met.
    for (int u : undone) {
      if (walk.resident(u)) continue;
      bool needed = false;
      for (size_t slot = 0; slot < fixed.size(); ++slot) {
        if (fixed[slot] && !walk.met(walk.state()[slot], u)) needed = true;
      }
      if (needed) walk.swap(cycling, u);
    }
  }
  return walk.take();
}

}  // namespace partita
