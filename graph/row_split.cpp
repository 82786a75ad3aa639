#include "graph/row_split.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace partita {

void RowSplit::split(const PartitionBook& book, Span<const int64_t> ids) {
  ids_.assign(book.num_parts(), {});
  positions_.assign(book.num_parts(), {});
  total_ = ids.size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= book.num_nodes()) {
      throw Error("rows: node " + std::to_string(ids[i]) + " is outside the graph [0, " +
                  std::to_string(book.num_nodes()) + ")");
    }
    int p = book.owner(ids[i]);
    ids_[p].push_back(ids[i]);
    positions_[p].push_back(static_cast<int64_t>(i));
  }
}

void RowSplit::place(int part, const void* rows, size_t row_bytes, void* out) const {
  auto* from = static_cast<const char*>(rows);
  auto* to = static_cast<char*>(out);
  for (size_t k = 0; k < positions_[part].size(); ++k) {
    std::memcpy(to + static_cast<size_t>(positions_[part][k]) * row_bytes, from + k * row_bytes, row_bytes);
  }
}

}  // namespace partita
