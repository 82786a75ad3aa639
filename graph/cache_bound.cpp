#include "graph/cache_bound.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <string>

#include "base/error.h"

namespace partita {

RowDemand::RowDemand(int64_t num_ids) {
  if (num_ids < 0) throw Error("row demand: " + std::to_string(num_ids) + " ids");
  batches_asking_.assign(static_cast<size_t>(num_ids), 0);
  last_batch_.assign(static_cast<size_t>(num_ids), -1);
}

void RowDemand::add_batch(Span<const int64_t> ids) {
  for (int64_t id : ids) {
    if (id < 0 || id >= num_ids()) {
      throw Error("row demand: id " + std::to_string(id) + " outside [0, " + std::to_string(num_ids()) + ")");
    }
  }
  for (int64_t id : ids) {
    if (last_batch_[id] == batches_) continue;  // asked again by the same batch
    last_batch_[id] = batches_;
    ++batches_asking_[id];
    ++asked_;
  }
  ++batches_;
}

uint32_t RowDemand::batches_asking(int64_t id) const {
  return id < 0 || id >= num_ids() ? 0 : batches_asking_[id];
}

std::vector<int64_t> RowDemand::ranked(size_t limit) const {
  std::vector<int64_t> asked;
  for (int64_t id = 0; id < num_ids(); ++id) {
    if (batches_asking_[id] > 0) asked.push_back(id);
  }
  const auto better = [&](int64_t a, int64_t b) {
    return batches_asking_[a] != batches_asking_[b] ? batches_asking_[a] > batches_asking_[b] : a < b;
  };
  limit = std::min(limit, asked.size());
  std::partial_sort(asked.begin(), asked.begin() + static_cast<std::ptrdiff_t>(limit), asked.end(), better);
  asked.resize(limit);
  return asked;
}

std::vector<double> lookahead_coverage(const std::vector<std::vector<int64_t>>& batches, int64_t num_ids,
                                       int64_t window, Span<const int64_t> ranking, Span<const size_t> sizes) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  constexpr int64_t kRepeat = -1;  // an id asked again by the same batch
  if (window < 0) throw Error("look-ahead coverage: a window of " + std::to_string(window) + " batches");
  const auto num_batches = static_cast<int64_t>(batches.size());
  // next[t][j]: the next batch after t asking for batches[t][j] (kNever: none), from the end.
  std::vector<int64_t> asked_at(static_cast<size_t>(std::max<int64_t>(num_ids, 0)), kNever);
  std::vector<std::vector<int64_t>> next(batches.size());
  uint64_t asked = 0;
  for (int64_t t = num_batches - 1; t >= 0; --t) {
    const std::vector<int64_t>& ids = batches[t];
    next[t].resize(ids.size());
    for (size_t j = 0; j < ids.size(); ++j) {
      const int64_t id = ids[j];
      if (id < 0 || id >= num_ids) {
        throw Error("look-ahead coverage: id " + std::to_string(id) + " outside [0, " + std::to_string(num_ids) +
                    ") in batch " + std::to_string(t));
      }
      if (asked_at[id] == t) {
        next[t][j] = kRepeat;
        continue;
      }
      next[t][j] = asked_at[id];
      asked_at[id] = t;
      ++asked;
    }
  }
  // The place of each id in the ranking (kNever: not ranked; repeats keep their first place).
  std::vector<int64_t> place(asked_at.size(), kNever);
  for (size_t r = 0; r < ranking.size(); ++r) {
    const int64_t id = ranking[r];
    if (id >= 0 && id < num_ids && place[id] == kNever) place[id] = static_cast<int64_t>(r);
  }
  // What the cache knows after batch t of a row next asked for by batch `when`: that batch
  // when it lies in the window (t, t + window], else the row's place in the ranking, after
  // every row of the window; kNever: worth nothing, not kept.
  int64_t now = -1;
  const auto known = [&](const std::pair<int64_t, int64_t>& row) {
    if (row.first != kNever && row.first - now <= window) return row.first;
    return place[row.second] == kNever ? kNever : num_batches + place[row.second];
  };
  const auto keep_best = [&](std::vector<std::pair<int64_t, int64_t>>& rows, size_t k) {
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const auto& row) { return known(row) == kNever; }),
               rows.end());
    if (rows.size() <= k) return;
    std::nth_element(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(k), rows.end(),
                     [&](const auto& a, const auto& b) { return known(a) < known(b); });
    rows.resize(k);
  };
  // Before batch 0, asked_at holds each id's first batch: the warm start's candidates.
  std::vector<std::pair<int64_t, int64_t>> first;  // (next batch asking, id)
  for (int64_t id = 0; id < num_ids; ++id) {
    if (asked_at[id] != kNever || place[id] != kNever) first.emplace_back(asked_at[id], id);
  }
  std::vector<double> shares;
  std::vector<bool> held(asked_at.size(), false);
  std::vector<std::pair<int64_t, int64_t>> cache, kept;
  for (size_t k : sizes) {
    now = -1;
    cache = first;
    keep_best(cache, k);
    for (const auto& row : cache) held[row.second] = true;
    uint64_t served = 0;
    for (int64_t t = 0; t < num_batches; ++t) {
      now = t;
      kept.clear();
      for (const auto& row : cache) {
        if (row.first != t) kept.push_back(row);  // not asked now: its next batch stands
      }
      for (size_t j = 0; j < batches[t].size(); ++j) {
        if (next[t][j] == kRepeat) continue;
        if (held[batches[t][j]]) ++served;
        kept.emplace_back(next[t][j], batches[t][j]);
      }
      keep_best(kept, k);
      for (const auto& row : cache) held[row.second] = false;
      cache.swap(kept);
      for (const auto& row : cache) held[row.second] = true;
    }
    for (const auto& row : cache) held[row.second] = false;
    shares.push_back(asked == 0 ? 0.0 : static_cast<double>(served) / static_cast<double>(asked));
  }
  return shares;
}

std::vector<double> cache_coverage(Span<const int64_t> ranking, const RowDemand& scored, Span<const size_t> sizes) {
  // served[k]: the rows the first k distinct ids of the ranking serve.
  std::vector<uint64_t> served{0};
  std::vector<bool> seen(static_cast<size_t>(scored.num_ids()), false);
  for (int64_t id : ranking) {
    const bool known = id >= 0 && id < scored.num_ids();
    if (known && seen[id]) continue;
    if (known) seen[id] = true;
    served.push_back(served.back() + scored.batches_asking(id));
  }
  std::vector<double> shares;
  for (size_t k : sizes) {
    const uint64_t rows = served[std::min(k, served.size() - 1)];
    shares.push_back(scored.asked() == 0 ? 0.0 : static_cast<double>(rows) / static_cast<double>(scored.asked()));
  }
  return shares;
}

}  // namespace partita
