#include "graph/row_split.h"

#include <string>

#include "base/error.h"
#include "graph/row_copy.h"

namespace partita {

void RowSplit::clear() {
  for (auto& ids : ids_) ids.clear();
  for (auto& positions : positions_) positions.clear();
  total_ = 0;
}

void RowSplit::split(const PartitionBook& book, Span<const int64_t> ids) {
  // Vectors cleared, not freed: a sampler splits every batch's nodes, and keeps the memory.
  ids_.resize(book.num_parts());
  positions_.resize(book.num_parts());
  clear();
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
  RowSource from;
  from.data = static_cast<const char*>(rows);
  from.row_bytes = row_bytes;
  copy_rows(from, positions_[part].data(), positions_[part].size(), static_cast<char*>(out), total_ * row_bytes);
}

void RowSplit::place_from(int part, const RowSource& store_rows, void* out) const {
  RowSource from = store_rows;
  from.ids = ids_[part].data();
  const size_t n = ids_[part].size();
  const size_t placed = copy_rows(from, positions_[part].data(), n, static_cast<char*>(out), total_ * from.row_bytes);
  if (placed < n) {
    throw Error("rows: node " + std::to_string(ids_[part][placed]) + " is outside the rows [" +
                std::to_string(from.begin) + ", " + std::to_string(from.begin + from.rows) + ") of partition " +
                std::to_string(part));
  }
}

}  // namespace partita
