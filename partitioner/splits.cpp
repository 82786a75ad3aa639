#include "partitioner/splits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <map>

#include "base/error.h"
#include "base/random.h"

namespace partita {

namespace {

int64_t fraction_of(double fraction, int64_t n) {
  return static_cast<int64_t>(std::llround(fraction * static_cast<double>(n)));
}

struct SplitSizes {
  int64_t train, val, test;
};

SplitSizes split_sizes(const SplitOptions& o, int64_t n) {
  return {o.num_train > 0 ? o.num_train : fraction_of(o.train_fraction, n),
          fraction_of(o.val_fraction, n), fraction_of(o.test_fraction, n)};
}

void check_fraction(const char* flag, double value) {
  // Written so that NaN fails too.
  if (!(value >= 0.0 && value <= 1.0)) {
    throw UsageError(std::string(flag) + ": must be in [0, 1] (got " + std::to_string(value) +
                     ")");
  }
}

// "--train-nodes/--test-fraction": the flags behind the non-empty parts of a split, which
// are the ones to change when it does not fit (with fractions alone, rounding up can).
std::string responsible_flags(const SplitOptions& o, const SplitSizes& s) {
  std::string flags;
  auto add = [&](bool nonempty, const char* flag) {
    if (!nonempty) return;
    if (!flags.empty()) flags += "/";
    flags += flag;
  };
  add(s.train > 0, o.num_train > 0 ? "--train-nodes" : "--train-fraction");
  add(s.val > 0, "--val-fraction");
  add(s.test > 0, "--test-fraction");
  return flags;
}

}  // namespace

void check_split_options(const SplitOptions& o, int64_t num_candidates) {
  if (o.num_train < 0) {
    throw UsageError("--train-nodes: must not be negative (got " + std::to_string(o.num_train) +
                     ")");
  }
  check_fraction("--train-fraction", o.train_fraction);
  check_fraction("--val-fraction", o.val_fraction);
  check_fraction("--test-fraction", o.test_fraction);
  // When num_train is given, train_fraction is unused and must not make a valid split fail.
  double train = o.num_train > 0 ? 0.0 : o.train_fraction;
  if (train + o.val_fraction + o.test_fraction > 1.0 + 1e-9) {
    throw UsageError("--train-fraction/--val-fraction/--test-fraction: the fractions sum to " +
                     std::to_string(train + o.val_fraction + o.test_fraction) +
                     ", which is above 1");
  }
  SplitSizes s = split_sizes(o, num_candidates);
  if (s.train + s.val + s.test > num_candidates) {
    throw UsageError(responsible_flags(o, s) + ": " + std::to_string(s.train) + " training nodes plus " +
                     std::to_string(s.val) + " validation and " + std::to_string(s.test) +
                     " test nodes exceed the " + std::to_string(num_candidates) +
                     " nodes that can be split");
  }
}

NodeSplit random_node_split(std::vector<int64_t> candidates, const SplitOptions& options,
                            uint64_t seed) {
  const int64_t n = static_cast<int64_t>(candidates.size());
  check_split_options(options, n);
  SplitSizes s = split_sizes(options, n);
  const int64_t taken = s.train + s.val + s.test;

  // Forward Fisher-Yates, stopped once the split's prefix is drawn: each prefix position
  // gets a uniform pick from what is left, so the cost is the split's size, not n.
  Rng rng(seed);
  for (int64_t i = 0; i < taken; ++i) {
    int64_t j = i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - i)));
    std::swap(candidates[i], candidates[j]);
  }

  auto sorted_range = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> ids(candidates.begin() + begin, candidates.begin() + end);
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  NodeSplit split;
  split.train = sorted_range(0, s.train);
  split.val = sorted_range(s.train, s.train + s.val);
  split.test = sorted_range(s.train + s.val, taken);
  return split;
}

void assign_random_split(Dataset& d, int64_t num_candidates, const SplitOptions& options,
                         uint64_t seed) {
  std::vector<int64_t> candidates(static_cast<size_t>(num_candidates));
  for (int64_t i = 0; i < num_candidates; ++i) candidates[i] = i;
  NodeSplit split = random_node_split(std::move(candidates), options, seed);
  d.train_idx = std::move(split.train);
  d.val_idx = std::move(split.val);
  d.test_idx = std::move(split.test);
}

}  // namespace partita

namespace partita {

namespace {

// History kept: a held-out link's seed is bounded strictly before the link's time, which
// hides the link's own edges only if they all have that time; and a time split puts every
// training edge before the held-out links only if no link has a later edge than its first.
// Throws UsageError naming the first link of `links` whose edges differ in time, or an
// edge at the earliest int64 time (nothing is strictly before it).
void check_one_time_per_link(const Dataset& d, const std::vector<int64_t>& links, const std::vector<int64_t>& first_edge,
                             const std::vector<int64_t>& link_of_edge) {
  std::vector<uint8_t> candidate(first_edge.size(), 0);
  for (int64_t l : links) candidate[static_cast<size_t>(l)] = 1;
  for (size_t e = 0; e < link_of_edge.size(); ++e) {
    const size_t l = static_cast<size_t>(link_of_edge[e]);
    if (!candidate[l]) continue;
    const int64_t first = first_edge[l];
    if (d.edge_time[e] == std::numeric_limits<int64_t>::min()) {
      throw UsageError("data.holdout.history: keep: edge " + std::to_string(e) + " of dataset '" + d.name +
                       "' has the earliest int64 time, before which no seed can be bounded");
    }
    if (d.edge_time[e] != d.edge_time[first]) {
      throw UsageError("data.holdout.history: keep needs every edge of a link (an edge, its reverse, parallel edges) "
                       "at one time, and edges " + std::to_string(first) + " and " + std::to_string(e) + " of dataset '" +
                       d.name + "' link nodes " + std::to_string(d.edges.src[first]) + " and " +
                       std::to_string(d.edges.dst[first]) + " at times " + std::to_string(d.edge_time[first]) + " and " +
                       std::to_string(d.edge_time[e]));
    }
  }
}

}  // namespace

void hold_out_edges(Dataset& d, double val_fraction, double test_fraction, uint64_t seed, bool by_time,
                    int32_t edge_type, HeldOut held_out) {
  check_fraction("data.holdout.val", val_fraction);
  check_fraction("data.holdout.test", test_fraction);
  if (val_fraction + test_fraction > 1.0) {
    throw UsageError("data.holdout: val and test hold out " + std::to_string(val_fraction + test_fraction) +
                     " of the edges, more than all of them");
  }
  if (d.val_edges.size() > 0 || d.test_edges.size() > 0) {
    throw UsageError("data.holdout: dataset '" + d.name + "' has held-out edges of its own already");
  }
  if (held_out == HeldOut::kKeepAsHistory && !by_time) {
    throw UsageError("data.holdout.history: keep keeps held-out links in the graph as history, for a time split "
                     "(data.holdout.by: time) only: a random split's held-out links would be history of earlier "
                     "training links");
  }
  if (by_time && d.edge_time.empty()) {
    throw UsageError("data.holdout.by: time, but dataset '" + d.name + "' has no edge times");
  }
  const int32_t num_types = static_cast<int32_t>(d.edge_types.size());
  if (edge_type >= 0 && edge_type >= std::max(num_types, int32_t{1})) {
    throw UsageError("model.target_edge: edge type " + std::to_string(edge_type) + " is not one of dataset '" +
                     d.name + "''s " + std::to_string(num_types) + " edge types");
  }
  // A type and its reverse are one kind of link: both map to the smaller of the two.
  const auto link_type = [&](int32_t t) {
    const int32_t r = d.reverse_edge_type.empty() ? -1 : d.reverse_edge_type[static_cast<size_t>(t)];
    return r >= 0 ? std::min(t, r) : t;
  };
  const int64_t m = d.num_edges();
  // Links in order of first appearance: an edge and its reverse (and repeats) share one.
  std::map<std::tuple<int64_t, int64_t, int32_t>, int64_t> link_of_pair;
  std::vector<int64_t> link(static_cast<size_t>(m));
  std::vector<int64_t> first_edge;
  const bool typed = !d.edges.type.empty();
  for (int64_t e = 0; e < m; ++e) {
    const auto key = std::make_tuple(std::min(d.edges.src[e], d.edges.dst[e]), std::max(d.edges.src[e], d.edges.dst[e]),
                                     typed ? link_type(d.edges.type[e]) : 0);
    auto [it, fresh] = link_of_pair.emplace(key, static_cast<int64_t>(first_edge.size()));
    if (fresh) first_edge.push_back(e);
    link[static_cast<size_t>(e)] = it->second;
  }
  // The links that may be held out: all, or those of the target type.
  std::vector<int64_t> order;
  for (int64_t l = 0; l < static_cast<int64_t>(first_edge.size()); ++l) {
    const int64_t e = first_edge[static_cast<size_t>(l)];
    if (edge_type < 0 || (typed ? link_type(d.edges.type[e]) : 0) == link_type(edge_type)) order.push_back(l);
  }
  if (held_out == HeldOut::kKeepAsHistory) check_one_time_per_link(d, order, first_edge, link);
  const int64_t links = static_cast<int64_t>(order.size());
  const int64_t num_val = fraction_of(val_fraction, links), num_test = fraction_of(test_fraction, links);
  // 0: kept, 1: val, 2: test.
  std::vector<uint8_t> where(first_edge.size(), 0);
  if (by_time) {
    // Latest first: the test links, then the validation links before them.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return d.edge_time[first_edge[static_cast<size_t>(a)]] > d.edge_time[first_edge[static_cast<size_t>(b)]];
    });
    for (int64_t i = 0; i < num_val + num_test; ++i) {
      where[static_cast<size_t>(order[static_cast<size_t>(i)])] = i < num_test ? 2 : 1;
    }
  } else {
    Rng rng(mix64(seed, 0x686f6c646f7574ull /* "holdout" */));
    shuffle(order, rng);
    for (int64_t i = 0; i < num_val + num_test; ++i) {
      where[static_cast<size_t>(order[static_cast<size_t>(i)])] = i < num_val ? 1 : 2;
    }
  }
  EdgeList kept;
  std::vector<float> kept_attr;
  std::vector<int64_t> kept_time;
  const int64_t width = d.edge_feature_dim;
  // Held out in link order (their first edge's): the result does not depend on the draw's order.
  for (size_t l = 0; l < first_edge.size(); ++l) {
    if (where[l] == 0) continue;
    const int64_t e = first_edge[l];
    EdgeList& to = where[l] == 1 ? d.val_edges : d.test_edges;
    // As an edge of the target type: a link first seen as its reverse turns round.
    const bool turn = edge_type >= 0 && typed && d.edges.type[e] != edge_type;
    to.push_back(turn ? d.edges.dst[e] : d.edges.src[e], turn ? d.edges.src[e] : d.edges.dst[e]);
    if (typed) to.type.push_back(edge_type >= 0 ? edge_type : d.edges.type[e]);
    // Its features go with it (its first edge's: MovieLens' two edges of a rating agree).
    std::vector<float>& attr = where[l] == 1 ? d.val_edge_attr : d.test_edge_attr;
    attr.insert(attr.end(), d.edge_attr.begin() + e * width, d.edge_attr.begin() + (e + 1) * width);
    if (!d.edge_time.empty()) (where[l] == 1 ? d.val_edge_time : d.test_edge_time).push_back(d.edge_time[e]);
  }
  if (held_out == HeldOut::kKeepAsHistory) {
    d.held_out_in_graph = true;
    return;
  }
  for (int64_t e = 0; e < m; ++e) {
    if (where[static_cast<size_t>(link[static_cast<size_t>(e)])] != 0) continue;
    kept.push_back(d.edges.src[e], d.edges.dst[e]);
    if (typed) kept.type.push_back(d.edges.type[e]);
    if (!d.edge_time.empty()) kept_time.push_back(d.edge_time[e]);
    if (width > 0) {
      kept_attr.insert(kept_attr.end(), d.edge_attr.begin() + e * width, d.edge_attr.begin() + (e + 1) * width);
    }
  }
  d.edges = std::move(kept);
  if (!d.edge_time.empty()) d.edge_time = std::move(kept_time);
  if (width > 0) d.edge_attr = std::move(kept_attr);
}

}  // namespace partita
