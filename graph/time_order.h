// A partition's in-edges in time order: what makes temporal sampling cost its fanout per
// node, as uniform sampling does, instead of the node's in-degree.
//
// Temporal sampling keeps, of a node's in-edges, those whose time (the edge's, or the
// neighbour's node time) is at most the seed's. Finding them by scanning the column read
// every in-edge's time: on RMAT's hubs that made temporal sampling 0.07-0.18x as fast as
// uniform sampling (BENCHMARKS.md, "Temporal sampling against uniform sampling"). With each
// column's entries ranked by time, the qualifying ones are a prefix of the ranks, whose
// length is a binary search. Each rank also holds its neighbour beside its canonical offset
// (one 8-byte entry), so a pick costs one cache miss instead of two dependent ones (the
// offset, then the CSC's neighbour there: the costliest stage of the sampler before,
// BENCHMARKS.md). The times are an array of their own, so that a search reads 16 of them
// (32-bit codes, below) or 8 (int64) per cache line.
//
// An entry holds the low 32 bits of its neighbour's global id; the high bits, on a graph of
// 2^32 nodes or more, are an array beside (neighbor_high), read only there. With the whole
// id in the entry (16 bytes, padded) a line held 4 entries instead of 8, so a `uniform`
// draw's picks, spread over the qualifying prefix, read up to twice the lines: the 8-byte
// entry took temporal over uniform sampling by CPU time from 0.76 / 0.72 to 0.79 / 0.74
// (`uniform`, [15,10,5] / [10,10]) and from 0.86 / 0.83 to 0.87 / 0.84 (`last`), medians
// on a quiet machine (BENCHMARKS.md, "Temporal sampling against uniform sampling").
//
// Memory: 12 bytes per edge (a 32-bit time code, below; a uint32 neighbour's low bits and
// a uint32 offset; 4 more on graphs of 2^32 nodes or more, 4 more where times span 2^32 or
// more), beside the topology's 8 (homogeneous) or 16 (heterogeneous) per edge: 240 MB for
// the shared graph's 20M edges (320 MB with int64 times, 480 MB at 24 bytes before). The
// codes sample as fast as int64 times (1.00-1.03x for `uniform`, 0.92-1.10x for `last`, in
// the same process: BENCHMARKS.md): they are kept for the quarter of the memory.
// The arrays are backed by 2 MB pages where the kernel gives them (transparent huge pages,
// `madvise` mode): every search probe and pick reads a random line of a 160 MB array, which
// on 4 KB pages is also a TLB miss and a page walk (BENCHMARKS.md, "Temporal sampling
// against uniform sampling": the temporal kernel 1.3-1.45x as fast; temporal
// `uniform` over uniform sampling from 0.71-0.74 to 0.86-0.90 by CPU time on a loaded
// machine), at no memory cost. A tree of fences over the
// times (an 8-ary search, one line per level) was tried there and not kept: fewer lines and
// steps per search, but no faster than this binary search on huge pages, for 8/7 bytes an
// edge more.
//
// A search starts where the count would be if the column's times were spread as all its
// type's are (share_until: a 512-bucket histogram per edge type, 2 KB), then gallops away a
// line (16 codes or 8 times), two, four... and bisects the bracket found. On RMAT's
// columns, whose times are spread as the graph's, the count is mostly within a line of that
// estimate: replaying 200,000 degree-biased searches (mean column 171 entries), a search
// probing one time at a time read 2.00 lines of times where bisecting the column read
// 3.39; the temporal `uniform` / uniform ratio by CPU time went from 0.76 to 0.85 for
// [10,10] and 0.87 to 0.91 for [15,10,5]. Each probe now reads the
// whole line it lands in, so a count inside the estimate's line costs that one line: on a
// quiet machine the ratios went from 0.79 / 0.74 to 0.82 / 0.77 (`uniform`) and 0.87 / 0.84
// to 0.92 / 0.87 (`last`). A column spread otherwise costs at most
// about twice the bisection's lines.
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

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "base/span.h"
#include "graph/hop_sampler.h"
#include "graph/topology.h"

namespace partita {

// How a time order stores its times (narrow(), below): as 32-bit codes wherever every edge
// type's times span less than 2^32, or as int64 always (what benchmarks compare them with).
enum class TimeWidth { kNarrowWhereTheyFit, kWide };

class TimeOrder {
 public:
  // Ranks every column of `topology` by time: for kNodeTime the neighbour's, `node_time`
  // by global node id (all nodes of the graph); for kEdgeTime the edge's, `edge_time` by
  // global edge id - edge_begin. Throws Error when the times do not cover the topology, or
  // a column has 2^32 entries or more (ranks are stored as 32-bit offsets).
  TimeOrder(const Topology& topology, TemporalMode mode, Span<const int64_t> node_time,
            Span<const int64_t> edge_time, TimeWidth width = TimeWidth::kNarrowWhereTheyFit);

  TemporalMode mode() const { return mode_; }
  // Whether this order ranks `topology`'s columns by `mode` (same partition, same edges).
  bool fits(const Topology& topology, TemporalMode mode) const;

  // An entry of a column in time order: where it sits in the column, and its neighbour
  // (the CSC's indices at begin + offset), whose global id is neighbor(type, at).
  struct Entry {
    uint32_t neighbor_low;  // the neighbour's global id's low 32 bits
    uint32_t offset;        // its canonical position - the column's begin
  };

  // Column [begin, end) of edge type `type` (CSC positions): its entry of rank r (r <
  // end - begin) has time time_at(type, begin + r) and is entries(type)[begin + r]. Times
  // ascend within a column.
  int64_t time_at(int type, int64_t at) const {
    const Column& column = columns_[type];
    return narrow_ ? column.base + column.code[static_cast<size_t>(at)] : column.time[static_cast<size_t>(at)];
  }
  Span<const Entry> entries(int type) const { return columns_[type].entry; }

  // How the times are stored, by the same index as the entries. Narrow: every edge type's
  // times span less than 2^32 (seconds over 136 years; the shared benchmark's [0, 1e9)),
  // and each is kept as a 32-bit code, its time - the type's earliest: 16 a cache line
  // instead of 8, so that a search's first line holds the count more often. Wide: as int64.
  // A time qualifies for a bound if its code is <= code_bound(type, bound), its time <= bound.
  bool narrow() const { return narrow_; }
  Span<const uint32_t> codes(int type) const { return columns_[type].code; }  // narrow
  Span<const int64_t> times(int type) const { return columns_[type].time; }   // wide
  // Narrow: the largest code whose time is <= bound, clamped to [-1, 2^32 - 1] (-1: none).
  int64_t code_bound(int type, int64_t bound) const {
    const int64_t base = columns_[type].base;
    if (bound < base) return -1;
    return static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(bound) - static_cast<uint64_t>(base),
                                                   std::numeric_limits<uint32_t>::max()));
  }
  // The high 32 bits of each entry's neighbour, by the same index; empty when every
  // neighbour's id is below 2^32 (the high bits are 0).
  Span<const uint32_t> neighbor_high(int type) const { return columns_[type].neighbor_high; }
  // The neighbour of the entry at `at` (begin + rank) of `type`'s columns.
  int64_t neighbor(int type, int64_t at) const {
    const Column& column = columns_[type];
    const uint64_t high = column.neighbor_high.empty() ? 0 : column.neighbor_high[static_cast<size_t>(at)];
    return static_cast<int64_t>(high << 32 | column.entry[static_cast<size_t>(at)].neighbor_low);
  }

  // How many entries of column [begin, end) of `type` have a time <= bound: the qualifying
  // entries are the ranks [0, count).
  int64_t count_until(int type, int64_t begin, int64_t end, int64_t bound) const;

  // The share of all entries of `type` whose time is <= bound, in [0, 1], read off a
  // histogram of the type's times (kShareBuckets buckets, linear within one): where a
  // column's count lies when its times are spread as its type's are. The sampler's searches
  // start there (an estimate: any value gives the same counts, only their cost changes).
  double share_until(int type, int64_t bound) const {
    const Column& column = columns_[type];
    const double x = (static_cast<double>(bound) - column.first + 1.0) * column.per_time;  // buckets at or below bound
    if (!(x > 0)) return 0.0;
    if (x >= kShareBuckets) return 1.0;
    const auto b = static_cast<int>(x);
    return column.share[b] + (x - b) * (column.share[b + 1] - column.share[b]);
  }
  static constexpr int kShareBuckets = 512;

  size_t bytes() const;

 private:
  struct Column {
    std::vector<int64_t> time;   // wide orders
    std::vector<uint32_t> code;  // narrow orders: time - base
    int64_t base = 0;            // the type's earliest time (0 without entries)
    std::vector<Entry> entry;
    std::vector<uint32_t> neighbor_high;  // empty unless a neighbour's id is 2^32 or more
    // share_until's histogram: bucket b holds the times [first + b / per_time, first + (b +
    // 1) / per_time); share[b] is the share of the entries in buckets before b
    // (share[kShareBuckets] is 1). per_time: buckets per unit of time (a product, not a
    // division, on the sampler's path).
    double first = 0, per_time = 1;
    std::vector<float> share;
  };
  // Once the type's times are in place; `latest`: the largest (base is the smallest).
  void build_share(int type, int64_t latest);
  TemporalMode mode_;
  bool narrow_ = false;
  int part_ = 0;
  int64_t node_begin_ = 0, num_nodes_ = 0, num_edges_ = 0;
  std::vector<Column> columns_;  // one per edge type
};

}  // namespace partita
