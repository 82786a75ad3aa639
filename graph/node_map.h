// Deduplication of sampled nodes: an open-addressing hash map from a node key to its local
// index in the mini-batch. Reused across batches; clear() costs the entries inserted, not
// the capacity, so a large map stays cheap for small batches.
#pragma once

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
    if ((used_.size() + 1) * 2 > keys_.size()) rehash(keys_.size() * 2);
    size_t slot = find_slot(key);
    if (keys_[slot] == key) return {values_[slot], false};
    keys_[slot] = key;
    values_[slot] = value;
    used_.push_back(slot);
    return {value, true};
  }

  // The value of key, or -1.
  int64_t find(int64_t key) const {
    size_t slot = find_slot(key);
    return keys_[slot] == key ? values_[slot] : -1;
  }

  size_t size() const { return used_.size(); }

  void clear() {
    for (size_t slot : used_) keys_[slot] = kEmpty;
    used_.clear();
  }

 private:
  static constexpr int64_t kEmpty = -1;

  static size_t capacity_for(size_t expected) {
    size_t c = 16;
    while (c < expected * 2) c *= 2;
    return c;
  }

  // Fibonacci hashing: sequential node ids spread over the table with one multiply.
  size_t find_slot(int64_t key) const {
    size_t slot = static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
    while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask_;
    return slot;
  }

  void rehash(size_t capacity) {
    std::vector<int64_t> old_keys = std::move(keys_), old_values = std::move(values_);
    std::vector<size_t> old_used = std::move(used_);
    keys_.assign(capacity, kEmpty);
    values_.resize(capacity);
    used_.clear();
    used_.reserve(capacity / 2);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    for (size_t slot : old_used) {
      size_t s = find_slot(old_keys[slot]);
      keys_[s] = old_keys[slot];
      values_[s] = old_values[slot];
      used_.push_back(s);
    }
  }

  std::vector<int64_t> keys_, values_;
  std::vector<size_t> used_;  // occupied slots, in insertion order
  size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace partita
