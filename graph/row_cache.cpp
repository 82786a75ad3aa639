#include "graph/row_cache.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/error.h"

namespace partita {

const char* cache_policy_name(CachePolicy policy) {
  switch (policy) {
    case CachePolicy::kDegree:
      return "degree";
    case CachePolicy::kFrequency:
      return "frequency";
    case CachePolicy::kSieve:
      break;
  }
  return "sieve";
}

CachePolicy parse_cache_policy(const std::string& text, const std::string& what) {
  for (CachePolicy p : {CachePolicy::kDegree, CachePolicy::kFrequency, CachePolicy::kSieve}) {
    if (text == cache_policy_name(p)) return p;
  }
  throw UsageError(what + ": '" + text + "' is not a cache policy (degree, frequency or sieve)");
}

namespace {

size_t index_slots_for(size_t capacity) {
  if (capacity == 0) return 0;
  size_t n = 16;
  while (n < capacity * 2) n *= 2;  // load factor at most 1/2: short probes
  return n;
}

size_t sum(const std::vector<size_t>& v) {
  size_t total = 0;
  for (size_t x : v) total += x;
  return total;
}

}  // namespace

uint64_t RowCache::budget_for(size_t capacity, size_t row_bytes) {
  return static_cast<uint64_t>(capacity) * (row_bytes + sizeof(Meta)) +
         static_cast<uint64_t>(index_slots_for(capacity)) * sizeof(IndexSlot);
}

RowCache::RowCache(CachePolicy policy, uint64_t budget_bytes, std::vector<size_t> column_bytes)
    : policy_(policy), budget_(budget_bytes), columns_(std::move(column_bytes)), row_bytes_(sum(columns_)) {
  if (columns_.empty()) throw UsageError("row cache: no columns");
  for (size_t c : columns_) {
    if (c == 0) throw UsageError("row cache: a column of 0 bytes");
  }
  // The most rows whose rows, bookkeeping and index fit the budget.
  // Slots are 32-bit ids, kNone excluded: a budget of narrow rows past 2^32 - 1 of them
  // caches no more (a 1 TiB budget of 68-byte rows would otherwise wrap the ids).
  size_t lo = 0, hi = std::min<size_t>(budget_ / row_bytes_, kNone - 1);
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (budget_for(mid, row_bytes_) <= budget_) lo = mid;
    else hi = mid - 1;
  }
  capacity_ = lo;
  if (policy_ == CachePolicy::kFrequency && capacity_ > 0) {
    // Counting first, in the room of the rows (allocated once it ends): a power of two of
    // slots, filled to 3/4 at most.
    size_t slots = 16;
    while (slots * 2 * sizeof(IndexSlot) <= capacity_ * row_bytes_) slots *= 2;
    if (slots * sizeof(IndexSlot) <= capacity_ * row_bytes_) {
      counted_.assign(slots, IndexSlot{kEmptyKey, 0});
      counted_.shrink_to_fit();
      lookups_to_count_ = kCountedLookups;
    }
  }
  if (lookups_to_count_ == 0) {
    rows_.resize(capacity_ * row_bytes_);
    rows_.shrink_to_fit();
  }
  meta_.resize(capacity_);
  meta_.shrink_to_fit();
  index_.assign(index_slots_for(capacity_), IndexSlot{kEmptyKey, kNone});
  index_.shrink_to_fit();
  index_mask_ = index_.empty() ? 0 : index_.size() - 1;
  for (size_t n = index_.size(); n > 1; n >>= 1) --index_shift_;
}

bool RowCache::contains(int64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0 || id < 0) return false;
  const IndexSlot& entry = index_[probe(id)];
  return entry.key == id && entry.slot != kNone;
}

size_t RowCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

uint64_t RowCache::memory_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rows_.capacity() + meta_.capacity() * sizeof(Meta) + index_.capacity() * sizeof(IndexSlot) +
         counted_.capacity() * sizeof(IndexSlot);
}

RowCacheCounts RowCache::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

size_t RowCache::probe(int64_t key) const {
  // Fibonacci hashing, as graph/node_map.h: consecutive ids spread with one multiply.
  size_t at = static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> index_shift_);
  while (index_[at].key != kEmptyKey && index_[at].key != key) at = (at + 1) & index_mask_;
  return at;
}

void RowCache::erase_index(size_t at) {
  // Backward-shift deletion: entries after the hole that may live in it move up, so that
  // every probe still finds its key before an empty slot (no tombstones).
  size_t next = at;
  for (;;) {
    next = (next + 1) & index_mask_;
    if (index_[next].key == kEmptyKey) break;
    const size_t home =
        static_cast<size_t>((static_cast<uint64_t>(index_[next].key) * 0x9E3779B97F4A7C15ull) >> index_shift_);
    // The entry stays when its home lies cyclically in (at, next].
    const bool stays = at <= next ? (home > at && home <= next) : (home > at || home <= next);
    if (stays) continue;
    index_[at] = index_[next];
    at = next;
  }
  index_[at] = IndexSlot{kEmptyKey, kNone};
}

void RowCache::check_columns(Span<const CacheColumn> columns) const {
  bool ok = columns.size() == columns_.size();
  for (size_t c = 0; ok && c < columns.size(); ++c) ok = columns[c].row_bytes == columns_[c];
  if (!ok) throw Error("row cache: the batch's columns are not the cache's");
}

void RowCache::set_hot(Span<const int64_t> ids_by_rank) {
  if (policy_ != CachePolicy::kDegree) throw Error("row cache: a hot set is for the degree policy only");
  std::lock_guard<std::mutex> lock(mutex_);
  hot_set(ids_by_rank);
}

void RowCache::count(Span<const int64_t> ids) {
  const size_t mask = counted_.size() - 1;
  int shift = 64;
  for (size_t n = counted_.size(); n > 1; n >>= 1) --shift;
  for (int64_t id : ids) {
    size_t at = static_cast<size_t>((static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> shift);
    while (counted_[at].key != kEmptyKey && counted_[at].key != id) at = (at + 1) & mask;
    if (counted_[at].key == id) {
      if (counted_[at].slot < UINT32_MAX) ++counted_[at].slot;
    } else if ((counted_entries_ + 1) * 4 <= counted_.size() * 3) {  // full: ids first seen now are not counted
      counted_[at] = IndexSlot{id, 1};
      ++counted_entries_;
    }
  }
}

void RowCache::choose_frequent() {
  std::vector<IndexSlot> seen;
  seen.reserve(counted_entries_);
  for (const IndexSlot& e : counted_) {
    if (e.key != kEmptyKey) seen.push_back(e);
  }
  std::vector<IndexSlot>().swap(counted_);  // the room goes to the rows
  const size_t n = std::min(capacity_, seen.size());
  std::partial_sort(seen.begin(), seen.begin() + static_cast<std::ptrdiff_t>(n), seen.end(),
                    [](const IndexSlot& a, const IndexSlot& b) { return a.slot != b.slot ? a.slot > b.slot : a.key < b.key; });
  std::vector<int64_t> hot(n);
  for (size_t k = 0; k < n; ++k) hot[k] = seen[k].key;
  std::vector<IndexSlot>().swap(seen);
  rows_.resize(capacity_ * row_bytes_);
  rows_.shrink_to_fit();
  hot_set(hot);
}

void RowCache::hot_set(Span<const int64_t> ids_by_rank) {
  for (auto& slot : index_) slot = IndexSlot{kEmptyKey, kNone};
  used_ = held_ = 0;
  size_t hot = 0;
  for (size_t k = 0; k < ids_by_rank.size() && hot < capacity_; ++k) {
    const int64_t id = ids_by_rank[k];
    if (id < 0) throw Error("row cache: hot id " + std::to_string(id) + " is negative");
    const size_t at = probe(id);
    if (index_[at].key == id) continue;
    index_[at] = IndexSlot{id, kNone};  // hot, not fetched yet
    ++hot;
  }
}

void RowCache::lookup(Span<const int64_t> ids, Span<const int64_t> positions, Span<const CacheColumn> columns,
                      std::vector<size_t>& misses) {
  check_columns(columns);
  std::lock_guard<std::mutex> lock(mutex_);
  counts_.lookups += ids.size();
  if (capacity_ == 0 || lookups_to_count_ > 0) {
    for (size_t k = 0; k < ids.size(); ++k) misses.push_back(k);
    if (lookups_to_count_ > 0) {
      count(ids);
      if (--lookups_to_count_ == 0) choose_frequent();
    }
    return;
  }
  for (size_t k = 0; k < ids.size(); ++k) {
    const IndexSlot& entry = index_[probe(ids[k])];
    if (entry.key != ids[k] || entry.slot == kNone) {
      misses.push_back(k);
      continue;
    }
    const char* row = rows_.data() + static_cast<size_t>(entry.slot) * row_bytes_;
    for (const CacheColumn& column : columns) {
      std::memcpy(column.base + static_cast<size_t>(positions[k]) * column.row_bytes, row, column.row_bytes);
      row += column.row_bytes;
    }
    meta_[entry.slot].visited = true;
    ++counts_.hits;
  }
}

uint32_t RowCache::take_slot() {
  if (used_ < capacity_) return static_cast<uint32_t>(used_++);
  // SIEVE: from the hand (or the oldest row) towards the newest, wrapping round, clear
  // visited rows and evict the first unvisited one; the hand rests on the row after it.
  uint32_t at = hand_ != kNone ? hand_ : oldest_;
  while (meta_[at].visited) {
    meta_[at].visited = false;
    at = meta_[at].newer != kNone ? meta_[at].newer : oldest_;
  }
  Meta& victim = meta_[at];
  hand_ = victim.newer;
  if (victim.newer != kNone) meta_[victim.newer].older = victim.older;
  else newest_ = victim.older;
  if (victim.older != kNone) meta_[victim.older].newer = victim.newer;
  else oldest_ = victim.newer;
  erase_index(probe(victim.id));
  --held_;
  ++counts_.evicted;
  return at;
}

void RowCache::store(uint32_t slot, int64_t id, size_t position, Span<const CacheColumn> columns) {
  char* row = rows_.data() + static_cast<size_t>(slot) * row_bytes_;
  for (const CacheColumn& column : columns) {
    std::memcpy(row, column.base + position * column.row_bytes, column.row_bytes);
    row += column.row_bytes;
  }
  meta_[slot] = Meta{id, kNone, kNone, false};
  ++held_;
  ++counts_.admitted;
}

void RowCache::admit(Span<const int64_t> ids, Span<const int64_t> positions, Span<const CacheColumn> columns,
                     Span<const size_t> which) {
  check_columns(columns);
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ == 0 || lookups_to_count_ > 0) return;
  for (size_t k : which) {
    const int64_t id = ids[k];
    if (id < 0) continue;
    size_t at = probe(id);
    if (policy_ != CachePolicy::kSieve) {
      if (index_[at].key != id || index_[at].slot != kNone) continue;  // not hot, or held
      const uint32_t slot = static_cast<uint32_t>(used_++);              // hot ids <= capacity
      store(slot, id, static_cast<size_t>(positions[k]), columns);
      index_[at].slot = slot;
      continue;
    }
    if (index_[at].key == id) continue;  // held (another sampler fetched it meanwhile)
    const uint32_t slot = take_slot();
    at = probe(id);  // an eviction may have moved index entries
    index_[at] = IndexSlot{id, slot};
    store(slot, id, static_cast<size_t>(positions[k]), columns);
    // The newest row of the queue.
    meta_[slot].older = newest_;
    if (newest_ != kNone) meta_[newest_].newer = slot;
    else oldest_ = slot;
    newest_ = slot;
  }
}

std::vector<int64_t> rank_remote_by_edges(const Topology& local, size_t limit) {
  // One counter per node of the graph, for the time of the ranking.
  std::vector<uint32_t> edges(static_cast<size_t>(local.book().num_nodes()), 0);
  for (int t = 0; t < local.num_edge_types(); ++t) {
    for (int64_t source : local.csc(t).indices.as<int64_t>()) {
      if (!local.owns(source) && edges[source] < UINT32_MAX) ++edges[source];
    }
  }
  std::vector<int64_t> remote;
  for (size_t v = 0; v < edges.size(); ++v) {
    if (edges[v] > 0) remote.push_back(static_cast<int64_t>(v));
  }
  const auto better = [&](int64_t a, int64_t b) { return edges[a] != edges[b] ? edges[a] > edges[b] : a < b; };
  limit = std::min(limit, remote.size());
  std::partial_sort(remote.begin(), remote.begin() + static_cast<std::ptrdiff_t>(limit), remote.end(), better);
  remote.resize(limit);
  return remote;
}

std::shared_ptr<RowCache> make_remote_row_cache(CachePolicy policy, uint64_t budget_bytes,
                                                std::vector<size_t> column_bytes, const Topology& local) {
  auto cache = std::make_shared<RowCache>(policy, budget_bytes, std::move(column_bytes));
  if (policy == CachePolicy::kDegree) cache->set_hot(rank_remote_by_edges(local, cache->capacity()));
  return cache;
}

}  // namespace partita
