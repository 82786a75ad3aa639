#include "graph/partition_book.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace partita {

PartitionBook::PartitionBook(std::vector<int64_t> offsets) : offsets_(std::move(offsets)) {
  if (offsets_.size() < 2) throw Error("partition book needs at least 2 offsets");
  if (offsets_.front() != 0) throw Error("partition book must start at 0");
  for (size_t i = 1; i < offsets_.size(); ++i) {
    if (offsets_[i] < offsets_[i - 1]) {
      throw Error("partition book offsets decrease at part " + std::to_string(i - 1));
    }
  }
}

int PartitionBook::owner(int64_t node) const {
  // The first offset greater than node ends the owning range; empty parts are skipped.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), node);
  return static_cast<int>(it - offsets_.begin()) - 1;
}

std::string part_name(int part) { return "partition " + std::to_string(part); }

}  // namespace partita
