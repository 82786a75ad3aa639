#include "graph/time_order.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/huge_pages.h"

namespace partita {

TimeOrder::TimeOrder(const Topology& topology, TemporalMode mode, Span<const int64_t> node_time,
                     Span<const int64_t> edge_time, TimeWidth width)
    : mode_(mode),
      narrow_(width == TimeWidth::kNarrowWhereTheyFit),
      part_(topology.part()),
      node_begin_(topology.node_begin()),
      num_nodes_(topology.num_nodes()),
      num_edges_(topology.num_edges()) {
  if (mode == TemporalMode::kNone) throw Error("time order: no time mode given");
  if (mode == TemporalMode::kNodeTime && static_cast<int64_t>(node_time.size()) != topology.book().num_nodes()) {
    throw Error("time order: " + std::to_string(node_time.size()) + " node times for a graph of " +
                std::to_string(topology.book().num_nodes()) + " nodes");
  }
  if (mode == TemporalMode::kEdgeTime && static_cast<int64_t>(edge_time.size()) != topology.num_edges()) {
    throw Error("time order: " + std::to_string(edge_time.size()) + " edge times for a partition of " +
                std::to_string(topology.num_edges()) + " edges");
  }
  const int64_t edge_begin = topology.edge_begin();
  // The time of the entry at CSC position `pos` of `type`'s columns.
  const auto time_of = [&](int type, int64_t pos) {
    const CscColumns& csc = topology.csc(type);
    if (mode == TemporalMode::kNodeTime) return node_time[csc.indices.as<int64_t>()[pos]];
    return edge_time[(csc.edge_ids.empty() ? edge_begin + pos : csc.edge_ids.as<int64_t>()[pos]) - edge_begin];
  };
  // Narrow when every type's times span less than 2^32 (the difference in uint64: any two
  // int64 differ by less than 2^64).
  columns_.resize(static_cast<size_t>(topology.num_edge_types()));
  std::vector<int64_t> latest(columns_.size(), 0);
  for (int type = 0; type < topology.num_edge_types(); ++type) {
    const int64_t m = topology.csc(type).indptr.as<int64_t>()[num_nodes_];
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
    for (int64_t pos = 0; pos < m; ++pos) {
      const int64_t time = time_of(type, pos);
      lo = std::min(lo, time);
      hi = std::max(hi, time);
    }
    columns_[type].base = m > 0 ? lo : 0;
    latest[type] = m > 0 ? hi : 0;
    if (m > 0 && static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) > std::numeric_limits<uint32_t>::max()) {
      narrow_ = false;
    }
  }
  std::vector<std::pair<int64_t, uint32_t>> ranked;  // one column's (time, offset), sorted
  for (int type = 0; type < topology.num_edge_types(); ++type) {
    const CscColumns& csc = topology.csc(type);
    const int64_t* indptr = csc.indptr.as<int64_t>().data();
    const int64_t* indices = csc.indices.as<int64_t>().data();
    Column& column = columns_[type];
    const int64_t m = indptr[num_nodes_];
    if (narrow_) {
      resize_on_huge_pages(column.code, static_cast<size_t>(m));
    } else {
      resize_on_huge_pages(column.time, static_cast<size_t>(m));
    }
    resize_on_huge_pages(column.entry, static_cast<size_t>(m));
    // The high bits are kept when any neighbour's id has some (an exact split of any int64).
    const bool wide = std::any_of(indices, indices + m, [](int64_t v) { return (static_cast<uint64_t>(v) >> 32) != 0; });
    if (wide) resize_on_huge_pages(column.neighbor_high, static_cast<size_t>(m));
    for (int64_t local = 0; local < num_nodes_; ++local) {
      const int64_t begin = indptr[local], degree = indptr[local + 1] - begin;
      if (degree >= static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
        throw Error("time order: node " + std::to_string(node_begin_ + local) + " has " + std::to_string(degree) +
                    " in-edges of type " + std::to_string(type) + ", more than 32-bit ranks hold");
      }
      ranked.resize(static_cast<size_t>(degree));
      for (int64_t r = 0; r < degree; ++r) ranked[r] = {time_of(type, begin + r), static_cast<uint32_t>(r)};
      std::sort(ranked.begin(), ranked.end());  // by time, ties by canonical position
      for (int64_t r = 0; r < degree; ++r) {
        if (narrow_) {
          column.code[begin + r] = static_cast<uint32_t>(ranked[r].first - column.base);
        } else {
          column.time[begin + r] = ranked[r].first;
        }
        const auto neighbor = static_cast<uint64_t>(indices[begin + ranked[r].second]);
        column.entry[begin + r] = {static_cast<uint32_t>(neighbor), ranked[r].second};
        if (wide) column.neighbor_high[begin + r] = static_cast<uint32_t>(neighbor >> 32);
      }
    }
    build_share(type, latest[type]);
  }
}

void TimeOrder::build_share(int type, int64_t latest) {
  Column& column = columns_[type];
  column.share.assign(kShareBuckets + 1, 1.0f);
  const auto m = static_cast<int64_t>(column.entry.size());
  if (m == 0) return;
  column.first = static_cast<double>(column.base);
  // Every time falls in a bucket: the last bucket ends just past the largest time.
  column.per_time = kShareBuckets / (static_cast<double>(latest) - column.first + 1.0);
  std::vector<int64_t> counts(kShareBuckets, 0);
  for (int64_t at = 0; at < m; ++at) {
    const int64_t t = time_at(type, at);
    const auto b = static_cast<int64_t>((static_cast<double>(t) - column.first) * column.per_time);
    ++counts[static_cast<size_t>(std::clamp<int64_t>(b, 0, kShareBuckets - 1))];
  }
  int64_t before = 0;
  const double total = static_cast<double>(m);
  for (int b = 0; b < kShareBuckets; ++b) {
    column.share[b] = static_cast<float>(static_cast<double>(before) / total);
    before += counts[b];
  }
}

bool TimeOrder::fits(const Topology& topology, TemporalMode mode) const {
  return mode == mode_ && topology.part() == part_ && topology.node_begin() == node_begin_ &&
         topology.num_nodes() == num_nodes_ && topology.num_edges() == num_edges_ &&
         topology.num_edge_types() == static_cast<int>(columns_.size());
}

int64_t TimeOrder::count_until(int type, int64_t begin, int64_t end, int64_t bound) const {
  if (narrow_) {
    const int64_t code = code_bound(type, bound);
    const uint32_t* first = columns_[type].code.data() + begin;
    return std::partition_point(first, first + (end - begin), [&](uint32_t c) { return c <= code; }) - first;
  }
  const int64_t* time = columns_[type].time.data();
  return std::upper_bound(time + begin, time + end, bound) - (time + begin);
}

size_t TimeOrder::bytes() const {
  size_t total = 0;
  for (const Column& c : columns_) {
    total += c.time.size() * sizeof(int64_t) + c.code.size() * sizeof(uint32_t) + c.entry.size() * sizeof(Entry) +
             c.neighbor_high.size() * sizeof(uint32_t) + c.share.size() * sizeof(float);
  }
  return total;
}

}  // namespace partita
