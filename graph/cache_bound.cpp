#include "graph/cache_bound.h"

#include <algorithm>
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
