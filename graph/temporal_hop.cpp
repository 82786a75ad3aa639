// The temporal one-hop kernel (graph/hop_kernels.h). Its draws are those of the general
// path (graph/hop_sampler.cpp) over the qualifying ranks of each column's time order
// (graph/time_order.h), emitted in canonical order.
#include "graph/hop_kernels.h"

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/random.h"
#include "graph/draws.h"
#include "graph/time_order.h"

namespace partita {

namespace {

// Temporal sampling, but for weighted `uniform` draws: any edge types, either strategy,
// with or without replacement. The draws are made over ranks of the columns' time order
// (graph/time_order.h), whose qualifying entries are the prefix [0, count): `last` takes the
// top ranks (the most recent; among equal times the later entry in canonical order),
// `uniform` draws ranks as select draws candidates (Floyd's, or independently with
// replacement; keyed as the general path keys a column). A column's picks are emitted in
// canonical order (with replacement: in draw order), its columns in type order, as the
// general path emits them.
//
// Software-pipelined over blocks of nodes, as sample_uniform_homogeneous_hop and
// sample_uniform_hetero_hop are: two blocks ahead a node's column bounds (homogeneous:
// indptr; heterogeneous: its type run offsets) are prefetched, one block ahead the first
// probe of its search, at the time order's estimate (homogeneous), or its type runs
// (heterogeneous). Then a block's columns are searched in lockstep (from the estimate's
// line, galloping by lines, then bisecting: graph/time_order.h), one line per column per
// round with the next one prefetched, so their cache misses overlap instead of each search
// paying its misses in a row; then each column's ranks are drawn and their entries
// (neighbour and offset side by side) prefetched; then read, each column's picks placed in
// canonical order as they are (graph/draws.h); then emitted. (Blocks of 64 or 128 nodes,
// which overlap more of the searches' later rounds, were no faster.)
template <bool kHetero, typename Time>
void sample_temporal(const Topology& t, const SamplerConfig& config, uint64_t key, int hop, const HopInput& input,
                     HopOutput& out, std::vector<int64_t>& ranks) {
  struct Column {
    const Time* time;  // its times (int64) or codes (uint32): TimeOrder::narrow
    const TimeOrder::Entry* entry;
    const uint32_t* neighbor_high;  // null: every neighbour's id is below 2^32
    const int64_t* edge_ids;  // null: edge_begin + position
    int fanout;
  };
  const TimeOrder& order = *config.time_order;
  std::vector<Column> columns;
  for (int type = 0; type < t.num_edge_types(); ++type) {
    const CscColumns& csc = t.csc(type);
    const Time* time;
    if constexpr (std::is_same_v<Time, uint32_t>) {
      time = order.codes(type).data();
    } else {
      time = order.times(type).data();
    }
    columns.push_back({time, order.entries(type).data(),
                       order.neighbor_high(type).empty() ? nullptr : order.neighbor_high(type).data(),
                       csc.edge_ids.empty() ? nullptr : csc.edge_ids.as<int64_t>().data(), config.fanouts[type][hop]});
  }
  constexpr bool hetero = kHetero;  // homogeneous: one column per node, edge ids by position, no edge types
  const bool last = config.temporal_strategy == TemporalStrategy::kLast;
  const bool replace = config.replace && !last;  // "the most recent k" has no replacement variant
  // Whether a homogeneous column whose qualifying prefix holds `count` entries is drawn from
  // (its node's original id then keys the draws): not under `last`, nor when the fanout
  // takes the prefix whole.
  const int fanout0 = config.fanouts[0][hop];
  const auto draws_need_key = [&](int64_t count) {
    return !last && fanout0 >= 0 && count > 0 && (replace || count > fanout0);
  };
  const int64_t* indptr = t.csc(0).indptr.as<int64_t>().data();  // homogeneous
  const int64_t* run_offsets = hetero ? t.type_run_offsets().data() : nullptr;
  const TypeRun* runs = hetero ? t.type_runs().data() : nullptr;
  const int64_t* bounds = hetero ? run_offsets : indptr;  // what locates a node's columns
  const int64_t* orig = t.orig_node_ids().data();
  const Time* time0 = columns[0].time;
  const int64_t node_begin = t.node_begin(), edge_begin = t.edge_begin();
  const size_t n = input.nodes.size();
  constexpr size_t kBlock = 32;
  for (size_t i = 0; i < std::min(n, 2 * kBlock); ++i) {
    __builtin_prefetch(bounds + (input.nodes[i] - node_begin));
    if (hetero && !last) __builtin_prefetch(orig + (input.nodes[i] - node_begin));
  }
  // One column of one node of the block: its search, then its picks [previous picks_end, picks_end).
  struct Item {
    int64_t begin;  // the column's first CSC position
    int64_t lo;     // the count lies in [lo, lo + len] (positions); once len is 0, begin + the count
    int64_t len;
    int64_t step;   // the search's next probe: lo + step - 1 (> 0), lo + len + step (< 0), bisect (0)
    int64_t bound;  // the node's time bound, as a code when the times are (TimeOrder::code_bound)
    int64_t local;  // the node's local id
    int32_t type;
    bool first;               // the next probe is the first, at the estimate
    bool in_canonical_order;  // its picks are sorted by position (all but draws with replacement)
    size_t picks_end;
  };
  // Where a column's search starts: its count if its times were spread as its type's.
  const auto estimate = [&](int type, int64_t degree, int64_t bound) {
    return std::min<int64_t>(degree - 1, static_cast<int64_t>(order.share_until(type, bound) * static_cast<double>(degree)));
  };
  std::vector<Item> items;
  std::vector<size_t> node_items;  // each node's end in `items`
  std::vector<size_t> searching;   // items whose search is not done
  // A block's picks: each one's index in the order (begin + rank), then its CSC position;
  // and its neighbour. Two arrays of scalars: a 16-byte pick built on the stack and copied
  // into a vector waited on a store that could not be forwarded (perf: an eighth of the
  // kernel's time).
  std::vector<int64_t> pick_at, pick_neighbor;
  std::vector<std::pair<uint32_t, int64_t>> by_position;  // a column of more than kPlacedKeys picks
  for (size_t block = 0; block < n; block += kBlock) {
    const size_t block_end = std::min(n, block + kBlock);
    items.clear();
    node_items.clear();
    searching.clear();
    pick_at.clear();
    for (size_t i = block; i < block_end; ++i) {
      if (i + 2 * kBlock < n) {
        const int64_t ahead = input.nodes[i + 2 * kBlock] - node_begin;
        __builtin_prefetch(bounds + ahead);
        if (hetero && !last) __builtin_prefetch(orig + ahead);
      }
      if (i + kBlock < n) {
        const int64_t ahead = input.nodes[i + kBlock] - node_begin;
        if (hetero) {
          prefetch_type_runs(runs, run_offsets, ahead);
        } else {
          const int64_t degree = indptr[ahead + 1] - indptr[ahead];
          if (degree > 0) __builtin_prefetch(time0 + indptr[ahead] + estimate(0, degree, input.times[i + kBlock]));  // the first probe
        }
      }
      const int64_t local = input.nodes[i] - node_begin;
      const auto add = [&](int32_t type, int64_t begin, int64_t degree) {
        if (degree == 0 || columns[type].fanout == 0) return;
        searching.push_back(items.size());
        const int64_t bound = input.times[i];
        const int64_t search_bound = std::is_same_v<Time, uint32_t> ? order.code_bound(type, bound) : bound;
        items.push_back({begin, begin, degree, estimate(type, degree, bound) + 1, search_bound, local, type, true, true, 0});
      };
      if (hetero) {
        for (const TypeRun* run = runs + run_offsets[local]; run != runs + run_offsets[local + 1]; ++run) {
          add(run->type, run->begin, run->degree);
        }
      } else {
        add(0, indptr[local], indptr[local + 1] - indptr[local]);
      }
      node_items.push_back(items.size());
    }
    // The searches: upper_bound of the node's bound in each column's times, in lockstep, a
    // cache line of times per probe. A probe reads the whole line holding its position (what
    // of it lies in the bracket) and either finds the count there (some of its times are at
    // most the bound, the rest above) or moves the bracket past the line. The first probe is
    // the estimate's line; then the search gallops away from it a line (16 codes or 8
    // times), two, four... until the count is bracketed, then bisects the bracket.
    constexpr int64_t kLine = 64 / sizeof(Time);
    while (!searching.empty()) {
      size_t still = 0;
      for (size_t k : searching) {
        Item& item = items[k];
        const Time* time = hetero ? columns[item.type].time : time0;
        const int64_t at = item.step == 0  ? item.lo + (item.len >> 1)
                           : item.step > 0 ? item.lo + item.step - 1
                                           : item.lo + item.len + item.step;
        const int64_t line = at - static_cast<int64_t>(reinterpret_cast<uintptr_t>(time + at) % 64 / sizeof(Time));
        const int64_t first = std::max(line, item.lo), end = std::min(line + kLine, item.lo + item.len);
        int64_t qualifying = 0;  // a prefix of [first, end): times ascend
        for (int64_t j = first; j < end; ++j) qualifying += static_cast<int64_t>(time[j]) <= item.bound;
        if (qualifying == end - first) {  // the count is end or more
          item.len -= end - item.lo;
          item.lo = end;
          item.step = item.step < 0 ? 0 : item.first ? kLine : 2 * item.step;
        } else if (qualifying > 0 || first == item.lo) {  // the count is in this line
          item.lo = first + qualifying;
          item.len = 0;
        } else {  // the count is first or less
          item.len = first - item.lo;
          item.step = item.step > 0 ? (item.first ? -kLine : 0) : 2 * item.step;
        }
        item.first = false;
        if (item.step > item.len || -item.step > item.len) item.step = 0;  // past the bracket: bisect it
        if (item.len == 0) {
          // Found: a homogeneous column drawn from needs its node's id, prefetched now that
          // the count says so (a column's degree does not: about half its entries qualify).
          if (!hetero && draws_need_key(item.lo - item.begin)) __builtin_prefetch(orig + item.local);
        } else {
          const int64_t next = item.step == 0  ? item.lo + (item.len >> 1)
                               : item.step > 0 ? item.lo + item.step - 1
                                               : item.lo + item.len + item.step;
          __builtin_prefetch(time + next);
          searching[still++] = k;
        }
      }
      searching.resize(still);
    }
    // The draws, over each column's qualifying ranks [0, count).
    size_t k = 0;
    for (size_t i = block; i < block_end; ++i) {
      const int64_t local = input.nodes[i] - node_begin;
      const auto node_key = [&] {  // read only by draws: `last`, and columns taken whole, need none
        const uint64_t node = mix64(key, static_cast<uint64_t>(orig[local]));
        return input.trees.empty() ? node : mix64(node, static_cast<uint64_t>(input.trees[i]));
      };
      for (; k < node_items[i - block]; ++k) {
        Item& item = items[k];
        const Column& col = columns[hetero ? item.type : 0];
        const int64_t count = item.lo - item.begin, fanout = col.fanout;
        // Room for the column's picks, then written in place (appends one by one were calls
        // the compiler did not inline).
        const auto room = [&](int64_t picks) {
          const size_t at = pick_at.size();
          pick_at.resize(at + static_cast<size_t>(picks));
          return pick_at.data() + at;
        };
        const auto pick_range = [&](int64_t first, int64_t end) {  // the ranks [first, end)
          int64_t* at = room(end - first);
          for (int64_t r = first; r < end; ++r) *at++ = item.begin + r;
          for (int64_t r = first; r < end; r += 8) __builtin_prefetch(col.entry + item.begin + r);  // 8 a line
          __builtin_prefetch(col.entry + item.begin + end - 1);
        };
        const auto pick = [&](int64_t*& at, int64_t rank) {
          *at++ = item.begin + rank;
          __builtin_prefetch(col.entry + item.begin + rank);
          if (col.neighbor_high != nullptr) __builtin_prefetch(col.neighbor_high + item.begin + rank);
        };
        if (count > 0) {
          if (fanout < 0 || (!replace && fanout >= count)) {
            pick_range(0, count);
          } else if (last) {
            pick_range(count - fanout, count);
          } else {
            Rng rng(hetero ? mix64(node_key(), static_cast<uint64_t>(item.type)) : node_key());
            int64_t* at = room(fanout);
            if (replace) {
              for (int64_t d = 0; d < fanout; ++d) pick(at, static_cast<int64_t>(rng.below(static_cast<uint64_t>(count))));
              item.in_canonical_order = false;  // draw order, as select emits draws with replacement
            } else {
              choose_distinct(rng, count, fanout, ranks, false);  // ordered by position below
              for (int64_t r : ranks) pick(at, r);
            }
          }
        }
        item.picks_end = pick_at.size();
      }
    }
    // The picks' neighbours and positions, read side by side, each column's put in canonical
    // order (place_distinct: no branch on the positions; more than kPlacedKeys picks are
    // sorted); emitted. Heterogeneous columns' edge ids are another array, read a pass later.
    const size_t emitted = out.neighbors.size(), picked = pick_at.size();
    pick_neighbor.resize(picked);
    size_t first = 0;
    for (const Item& item : items) {
      const Column& col = columns[hetero ? item.type : 0];
      int64_t* at = pick_at.data() + first;
      int64_t* neighbor = pick_neighbor.data() + first;
      const size_t count = item.picks_end - first;
      const auto read = [&](size_t j, uint32_t& offset, int64_t& id) {
        const TimeOrder::Entry& entry = col.entry[at[j]];
        const uint64_t high = col.neighbor_high == nullptr ? 0 : col.neighbor_high[at[j]];
        offset = entry.offset;
        id = static_cast<int64_t>(high << 32 | entry.neighbor_low);
      };
      if (!item.in_canonical_order || count < 2) {
        for (size_t j = 0; j < count; ++j) {
          uint32_t offset;
          read(j, offset, neighbor[j]);
          at[j] = item.begin + offset;
        }
      } else if (count <= kPlacedKeys) {
        uint32_t offsets[kPlacedKeys], place[kPlacedKeys];
        int64_t ids[kPlacedKeys];
        for (size_t j = 0; j < count; ++j) read(j, offsets[j], ids[j]);
        place_distinct(offsets, count, place);
        for (size_t j = 0; j < count; ++j) {
          at[place[j]] = item.begin + offsets[j];
          neighbor[place[j]] = ids[j];
        }
      } else {
        by_position.resize(count);
        for (size_t j = 0; j < count; ++j) read(j, by_position[j].first, by_position[j].second);
        std::sort(by_position.begin(), by_position.end());  // offsets are distinct
        for (size_t j = 0; j < count; ++j) {
          at[j] = item.begin + by_position[j].first;
          neighbor[j] = by_position[j].second;
        }
      }
      if (hetero && col.edge_ids != nullptr) {
        for (size_t j = 0; j < count; ++j) __builtin_prefetch(col.edge_ids + at[j]);
      }
      first = item.picks_end;
    }
    out.neighbors.insert(out.neighbors.end(), pick_neighbor.begin(), pick_neighbor.end());
    out.edge_ids.resize(emitted + picked);
    int64_t* edge_ids = out.edge_ids.data() + emitted;
    if (hetero) {
      out.edge_types.resize(emitted + picked);
      int32_t* edge_types = out.edge_types.data() + emitted;
      first = 0;
      for (const Item& item : items) {
        const Column& col = columns[item.type];
        for (size_t j = first; j < item.picks_end; ++j) {
          edge_ids[j] = col.edge_ids != nullptr ? col.edge_ids[pick_at[j]] : edge_begin + pick_at[j];
          edge_types[j] = item.type;
        }
        first = item.picks_end;
      }
    } else {
      for (size_t j = 0; j < picked; ++j) edge_ids[j] = edge_begin + pick_at[j];
    }
    for (size_t e : node_items) {
      out.offsets.push_back(static_cast<int64_t>(emitted + (e == 0 ? 0 : items[e - 1].picks_end)));
    }
  }
}

}  // namespace

void sample_temporal_hop(const Topology& topology, const SamplerConfig& config, uint64_t hop_key, int hop,
                         const HopInput& input, HopOutput& out) {
  std::vector<int64_t> ranks;
  const bool narrow = config.time_order->narrow();
  if (topology.is_hetero()) {
    if (narrow) {
      sample_temporal<true, uint32_t>(topology, config, hop_key, hop, input, out, ranks);
    } else {
      sample_temporal<true, int64_t>(topology, config, hop_key, hop, input, out, ranks);
    }
  } else if (narrow) {
    sample_temporal<false, uint32_t>(topology, config, hop_key, hop, input, out, ranks);
  } else {
    sample_temporal<false, int64_t>(topology, config, hop_key, hop, input, out, ranks);
  }
}

}  // namespace partita
