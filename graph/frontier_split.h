// Splitting a hop's frontier by owning partition and joining the partitions' answers back
// in frontier order: how a sampler spreads one hop over partitions without changing its
// result.
#pragma once

#include <cstdint>
#include <vector>

#include "base/span.h"
#include "graph/hop_sampler.h"
#include "graph/partition_book.h"

namespace partita {

class FrontierSplit {
 public:
  // Groups the frontier (with its trees and time bounds, which may be empty) by owner.
  void split(const PartitionBook& book, Span<const int64_t> nodes, Span<const int64_t> trees,
             Span<const int64_t> times);

  int num_parts() const { return static_cast<int>(nodes_.size()); }
  // The request for partition p: its frontier nodes, in frontier order.
  HopInput input(int part) const;
  bool empty(int part) const { return nodes_[part].empty(); }

  // Reassembles the partitions' outputs (outputs[p] answers input(p)) in frontier order.
  void join(const std::vector<const HopOutput*>& outputs, HopOutput& out) const;

 private:
  std::vector<std::vector<int64_t>> nodes_, trees_, times_;
  std::vector<int32_t> owner_;       // per frontier position
  std::vector<int64_t> rank_;        // position within its owner's request
};

}  // namespace partita
