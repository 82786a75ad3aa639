// Deduplication of sampled nodes: an open-addressing hash map from a node key to its local
// index in the mini-batch. Reused across batches; clear() costs the entries inserted, not
// the capacity, so a large map stays cheap for small batches (and, once they fill more than
// a quarter of it, one sequential fill of the table, cheaper than as many random writes:
// 1.9 against 3.4 ms for 189k of 524k slots, a [15,10,5] batch of the shared graph).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace partita {

class NodeMap {
 public:
  explicit NodeMap(size_t expected = 1024) { rehash(capacity_for(expected)); }

  // Looks key (>= 0) up; inserts it with `value` if absent. Returns the stored value and
  // whether it was inserted.
  std::pair<int64_t, bool> insert(int64_t key, int64_t value) {
    if ((used_.size() + 1) * 2 > slots_.size()) rehash(slots_.size() * 2);
    Slot& slot = slots_[find_slot(key)];
    if (slot.key == key) return {slot.value, false};
    slot = {key, value};
    used_.push_back(static_cast<size_t>(&slot - slots_.data()));
    return {value, true};
  }

  // Fetches the line where a lookup of `key` starts into the cache, ahead of insert(key):
  // a map of a batch's nodes (hundreds of thousands of slots) outgrows L2, so each insert
  // would otherwise wait for its slot. A hint only: a rehash in between just wastes it.
  void prefetch(int64_t key) const { __builtin_prefetch(slots_.data() + home_slot(key)); }

  // The value of key, or -1.
  int64_t find(int64_t key) const {
    const Slot& slot = slots_[find_slot(key)];
    return slot.key == key ? slot.value : -1;
  }

  size_t size() const { return used_.size(); }

  void clear() {
    if (used_.size() > slots_.size() / 4) {
      // Every slot of a batch's map is a random line of a table beyond L2: past a quarter
      // of it, resetting them one by one misses more lines than writing the table through.
      std::fill(slots_.begin(), slots_.end(), Slot{kEmpty, 0});
    } else {
      for (size_t slot : used_) slots_[slot].key = kEmpty;
    }
    used_.clear();
  }

 private:
  static constexpr int64_t kEmpty = -1;

  static size_t capacity_for(size_t expected) {
    size_t c = 16;
    while (c < expected * 2) c *= 2;
    return c;
  }

  // Key and value side by side: a lookup costs one cache miss, not two.
  struct Slot {
    int64_t key;
    int64_t value;
  };

  // Fibonacci hashing: sequential node ids spread over the table with one multiply.
  size_t home_slot(int64_t key) const {
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  size_t find_slot(int64_t key) const {
    size_t slot = home_slot(key);
    while (slots_[slot].key != kEmpty && slots_[slot].key != key) slot = (slot + 1) & mask_;
    return slot;
  }

  void rehash(size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    std::vector<size_t> old_used = std::move(used_);
    slots_.assign(capacity, Slot{kEmpty, 0});
    used_.clear();
    used_.reserve(capacity / 2);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    for (size_t i : old_used) {
      size_t s = find_slot(old[i].key);
      slots_[s] = old[i];
      used_.push_back(s);
    }
  }

  std::vector<Slot> slots_;
  std::vector<size_t> used_;  // occupied slots, in insertion order
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace partita
