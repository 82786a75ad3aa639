// Fetching rows (features, labels) of nodes spread over partitions: the ids split by owner,
// each owner's rows placed back where their ids were. A distributed sampler fetches each
// part's rows with one request and lands them in the batch with place().
#pragma once

#include <cstdint>
#include <vector>

#include "base/span.h"
#include "graph/partition_book.h"
#include "graph/row_copy.h"

namespace partita {

class RowSplit {
 public:
  // Throws Error naming the first id outside the graph.
  void split(const PartitionBook& book, Span<const int64_t> ids);

  int num_parts() const { return static_cast<int>(ids_.size()); }
  size_t size() const { return total_; }
  // The ids part p owns, in the order they appear in the input.
  Span<const int64_t> ids(int part) const { return Span<const int64_t>(ids_[part]); }

  // The input positions of part p's ids, in the order of ids(part).
  Span<const int64_t> positions(int part) const { return Span<const int64_t>(positions_[part]); }

  // Copies part p's rows (ids(p).size() rows of row_bytes each, contiguous at `rows`) to
  // their input positions in `out` (size() rows).
  void place(int part, const void* rows, size_t row_bytes, void* out) const;
  // Copies part p's rows straight from a store's rows (`store_rows`: data, row_bytes and
  // the range [begin, begin + rows) of ids it holds; its ids are ignored) to their input
  // positions in `out`. Throws Error naming the first id outside that range.
  void place_from(int part, const RowSource& store_rows, void* out) const;
  // Forgets every split id, keeping the memory for the next split.
  void clear();

 private:
  std::vector<std::vector<int64_t>> ids_;
  std::vector<std::vector<int64_t>> positions_;
  size_t total_ = 0;
};

}  // namespace partita
