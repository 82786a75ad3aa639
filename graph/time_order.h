// A partition's in-edges in time order: what makes temporal sampling cost its fanout per
// node, as uniform sampling does, instead of the node's in-degree.
//
// Temporal sampling keeps, of a node's in-edges, those whose time (the edge's, or the
// neighbour's node time) is at most the seed's. Finding them by scanning the column read
// every in-edge's time: on RMAT's hubs that made temporal sampling 0.07-0.18x as fast as
// uniform sampling (BENCHMARKS.md, "Temporal sampling against uniform sampling"). With each
// column's entries ranked by time, the qualifying ones are a prefix of the ranks, whose
// length is a binary search. Each rank also holds its neighbour, so a pick reads its
// neighbour and its canonical offset side by side (two independent loads) instead of going
// through the offset to the CSC (two dependent cache misses: the costliest stage of the
// sampler before, BENCHMARKS.md).
//
// Memory: 20 bytes per edge (an int64 time, an int64 neighbour id, a uint32 offset), beside
// the topology's 8 (homogeneous) or 16 (heterogeneous) per edge: 420 MB for RMAT's 21M
// edges.
//
// Built once when a sampler or partition actor opens its partition for a temporal job, not
// stored in the partition folder: the order depends on the job's time (node or edge), it
// costs 1-7 s for RMAT's 21M edges on one thread (tens of batches; an epoch there is 1,024
// batches: BENCHMARKS.md), and the folder's CSC keeps the canonical order that every
// non-temporal sampler keys its draws on.
//
// Invariant (partition invariance): a column's ranks are its entries sorted by (time,
// canonical position), and the canonical order is the order by original edge id, so the
// ranks are a function of the graph and its times alone, whichever partition holds the
// column.
#pragma once

#include <cstdint>
#include <vector>

#include "base/span.h"
#include "graph/hop_sampler.h"
#include "graph/topology.h"

namespace partita {

class TimeOrder {
 public:
  // Ranks every column of `topology` by time: for kNodeTime the neighbour's, `node_time`
  // by global node id (all nodes of the graph); for kEdgeTime the edge's, `edge_time` by
  // global edge id - edge_begin. Throws Error when the times do not cover the topology, or
  // a column has 2^32 entries or more (ranks are stored as 32-bit offsets).
  TimeOrder(const Topology& topology, TemporalMode mode, Span<const int64_t> node_time,
            Span<const int64_t> edge_time);

  TemporalMode mode() const { return mode_; }
  // Whether this order ranks `topology`'s columns by `mode` (same partition, same edges).
  bool fits(const Topology& topology, TemporalMode mode) const;

  // Column [begin, end) of edge type `type` (CSC positions): its entry of rank r (r <
  // end - begin) has time times(type)[begin + r], sits at position
  // begin + offsets(type)[begin + r] and its neighbour (the CSC's indices there) is
  // neighbors(type)[begin + r]. Times ascend within a column.
  Span<const int64_t> times(int type) const { return columns_[type].time; }
  Span<const uint32_t> offsets(int type) const { return columns_[type].offset; }
  Span<const int64_t> neighbors(int type) const { return columns_[type].neighbor; }

  // How many entries of column [begin, end) of `type` have a time <= bound: the qualifying
  // entries are the ranks [0, count).
  int64_t count_until(int type, int64_t begin, int64_t end, int64_t bound) const;

  size_t bytes() const;

 private:
  struct Column {
    std::vector<int64_t> time;
    std::vector<uint32_t> offset;
    std::vector<int64_t> neighbor;
  };
  TemporalMode mode_;
  int part_ = 0;
  int64_t node_begin_ = 0, num_nodes_ = 0, num_edges_ = 0;
  std::vector<Column> columns_;  // one per edge type
};

}  // namespace partita
