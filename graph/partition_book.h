// Which partition owns a node. After partitioning, each partition owns a contiguous range
// of global ids, so the book is k+1 offsets (O(k) memory, as DistDGL) and a lookup is a
// binary search over them, instead of a per-node table (O(N), as PyG).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita {

class PartitionBook {
 public:
  PartitionBook() = default;
  // offsets: k+1 non-decreasing values starting at 0; partition p owns
  // [offsets[p], offsets[p+1]). Throws Error if they are not.
  explicit PartitionBook(std::vector<int64_t> offsets);

  int num_parts() const { return static_cast<int>(offsets_.size()) - 1; }
  int64_t num_nodes() const { return offsets_.back(); }
  int64_t begin(int part) const { return offsets_[part]; }
  int64_t end(int part) const { return offsets_[part + 1]; }
  int64_t size(int part) const { return end(part) - begin(part); }
  const std::vector<int64_t>& offsets() const { return offsets_; }

  // The partition owning global id `node` (0 <= node < num_nodes()).
  int owner(int64_t node) const;

 private:
  std::vector<int64_t> offsets_{0};
};

// "partition 3": how every error names a partition.
std::string part_name(int part);

}  // namespace partita
