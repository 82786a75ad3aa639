// Link-prediction batches: negatives, the seed-edge filter, the label step and the
// reference link sampler. See link_sampler.h for how the steps fit together.
#include "graph/link_sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>

#include "base/error.h"

namespace partita {

namespace {

// Separates the negatives' random stream from the hops' (hop_key mixes in small hop
// numbers): "negative" in ASCII.
constexpr uint64_t kNegativeStream = 0x6e65676174697665ull;

// More negatives than this in one batch is a wrong ratio, not a batch anyone trains on.
constexpr double kMaxNegatives = 1e10;

std::string str(int64_t v) { return std::to_string(v); }

// ceil(ratio * P), as PyG computes it, except that a product a rounding error above an
// integer (0.1 * 30 = 3.0000000000000004) is that integer, not one more.
int64_t binary_negatives(double ratio, int64_t positives) {
  const double exact = ratio * static_cast<double>(positives);
  const double nearest = std::round(exact);
  if (std::abs(exact - nearest) <= 1e-9 * std::max(1.0, exact)) return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::ceil(exact));
}

void check_input(const LinkInput& input, const NegativeNodes& nodes) {
  const size_t p = input.src.size();
  if (input.dst.size() != p) {
    throw UsageError("link batch: " + str(p) + " sources but " + str(input.dst.size()) + " destinations");
  }
  auto check_size = [&](size_t n, const char* what) {
    if (n != 0 && n != p) {
      throw UsageError(std::string("link batch: ") + what + " has " + str(n) + " entries for " +
                       str(p) + " seed edges");
    }
  };
  check_size(input.edge_types.size(), "edge_types");
  check_size(input.edge_ids.size(), "edge_ids");
  check_size(input.times.size(), "times");
  if (!input.edge_types.empty() && !nodes.typed()) {
    throw UsageError("link batch: edge types given for a graph without edge types");
  }
  const int64_t n = nodes.num_nodes();
  for (size_t i = 0; i < p; ++i) {
    for (int64_t v : {input.src[i], input.dst[i]}) {
      if (v < 0 || v >= n) {
        throw UsageError("link batch: seed edge " + str(i) + " has node " + str(v) +
                         ", outside the graph [0, " + str(n) + ")");
      }
    }
    if (!input.edge_types.empty() &&
        (input.edge_types[i] < 0 || input.edge_types[i] >= nodes.num_edge_types())) {
      throw UsageError("link batch: seed edge " + str(i) + " has edge type " + str(input.edge_types[i]) +
                       ", the graph has " + str(nodes.num_edge_types()));
    }
    if (!input.edge_ids.empty() && input.edge_ids[i] < 0) {
      throw UsageError("link batch: seed edge " + str(i) + " has edge id " + str(input.edge_ids[i]));
    }
  }
}

}  // namespace

void NegativeSampling::validate() const {
  if (!(ratio >= 0) || !std::isfinite(ratio)) {
    throw UsageError("negative sampling: ratio " + std::to_string(ratio) + " must be a number >= 0");
  }
  if (mode == NegativeMode::kTriplet && per_positive < 1) {
    throw UsageError("negative sampling: triplet mode needs per_positive >= 1, not " + str(per_positive));
  }
  if (max_retries < 0) {
    throw UsageError("negative sampling: max_retries " + str(max_retries) + " must be >= 0");
  }
}

bool has_edge(const Topology& topology, int64_t src, int64_t dst, int32_t edge_type) {
  if (!topology.owns(dst)) {
    throw Error("edge test: node " + str(dst) + " is not in partition " + str(topology.part()) + " [" +
                str(topology.node_begin()) + ", " + str(topology.node_end()) + ")");
  }
  if (edge_type >= topology.num_edge_types()) {
    throw Error("edge test: edge type " + str(edge_type) + " of " + str(topology.num_edge_types()));
  }
  const int64_t local = dst - topology.node_begin();
  // Columns are in original-edge-id order, not by source, so this is a scan; the columns
  // a batch tests are those of its endpoints, and a scan of one column is one or two cache
  // lines for most nodes.
  auto in_column = [&](int32_t type) {
    auto indptr = topology.csc(type).indptr.as<int64_t>();
    auto indices = topology.csc(type).indices.as<int64_t>();
    const int64_t* begin = indices.data() + indptr[local];
    const int64_t* end = indices.data() + indptr[local + 1];
    return std::find(begin, end, src) != end;
  };
  if (edge_type >= 0) return in_column(edge_type);
  for (int32_t type = 0; type < topology.num_edge_types(); ++type) {
    if (in_column(type)) return true;
  }
  return false;
}

// ---- NegativeNodes ----

NegativeNodes::NegativeNodes(int64_t num_nodes, ArrayRef to_global)
    : num_nodes_(num_nodes), to_global_ref_(std::move(to_global)) {
  if (num_nodes_ < 0) throw UsageError("negative sampling: " + str(num_nodes_) + " nodes");
  if (!to_global_ref_.empty()) {
    to_global_ = to_global_ref_.as<int64_t>();
    if (static_cast<int64_t>(to_global_.size()) != num_nodes_) {
      throw Error("negative sampling: the node map has " + str(to_global_.size()) + " entries for " +
                  str(num_nodes_) + " nodes");
    }
    for (size_t v = 0; v < to_global_.size(); ++v) {
      if (to_global_[v] < 0 || to_global_[v] >= num_nodes_) {
        throw Error("negative sampling: the node map sends node " + str(v) + " to " + str(to_global_[v]) +
                    ", outside [0, " + str(num_nodes_) + ")");
      }
    }
  }
}

NegativeNodes::NegativeNodes(std::vector<int32_t> node_type, std::vector<EdgeTypeEnds> ends,
                             ArrayRef to_global)
    : NegativeNodes(static_cast<int64_t>(node_type.size()), std::move(to_global)) {
  if (ends.empty()) throw UsageError("negative sampling: a typed graph needs its edge types' ends");
  ends_ = std::move(ends);
  for (size_t v = 0; v < node_type.size(); ++v) {
    const int32_t t = node_type[v];
    if (t < 0) throw Error("negative sampling: node " + str(v) + " has node type " + str(t));
    if (static_cast<size_t>(t) >= of_type_.size()) of_type_.resize(t + 1);
    of_type_[t].push_back(static_cast<int64_t>(v));  // increasing, as v is
  }
  for (const EdgeTypeEnds& e : ends_) {
    if (e.src_type < 0 || e.dst_type < 0) throw Error("negative sampling: an edge type has a negative node type");
    const size_t needed = static_cast<size_t>(std::max(e.src_type, e.dst_type)) + 1;
    if (of_type_.size() < needed) of_type_.resize(needed);
  }
}

NegativeNodes NegativeNodes::of(const Topology& t) {
  const int64_t n = t.num_nodes();
  if (n != t.book().num_nodes()) {
    throw UsageError("negative sampling over one topology needs the whole graph in it (" + str(n) + " of " +
                     str(t.book().num_nodes()) + " nodes)");
  }
  auto orig = t.orig_node_ids();
  bool identity = true;
  std::vector<int64_t> to_global(n, -1);
  for (int64_t v = 0; v < n; ++v) {
    if (orig[v] < 0 || orig[v] >= n || to_global[orig[v]] >= 0) {
      throw Error("negative sampling: original node ids are not a permutation (node " + str(v) + ")");
    }
    to_global[orig[v]] = v;
    identity = identity && orig[v] == v;
  }
  ArrayRef map = identity ? ArrayRef{} : ArrayRef::from_vector(std::move(to_global));
  if (!t.is_hetero()) return NegativeNodes(n, std::move(map));
  std::vector<int32_t> types(n);
  for (int64_t v = 0; v < n; ++v) types[orig[v]] = t.node_type(v);
  return NegativeNodes(std::move(types), t.edge_type_ends(), std::move(map));
}

int64_t NegativeNodes::draw(Rng& rng, int32_t edge_type, bool dst) const {
  if (num_nodes_ == 0) throw Error("negative sampling: the graph has no nodes");
  if (!typed() || edge_type < 0) return global(static_cast<int64_t>(rng.below(num_nodes_)));
  const int32_t type = dst ? ends_[edge_type].dst_type : ends_[edge_type].src_type;
  const std::vector<int64_t>& pool = of_type_[type];
  if (pool.empty()) {
    throw Error("negative sampling: edge type " + str(edge_type) + " ends in node type " + str(type) +
                ", which has no nodes");
  }
  return global(pool[rng.below(pool.size())]);
}

// ---- Seeds ----

LinkSeeds make_link_seeds(const LinkInput& input, const NegativeSampling& negatives,
                          const NegativeNodes& nodes, const SampleKey& key, const EdgeTest& is_edge) {
  negatives.validate();
  check_input(input, nodes);
  const bool strict = negatives.strict && negatives.mode != NegativeMode::kNone;
  if (strict && !is_edge) throw UsageError("negative sampling: strict mode needs an edge test");
  const int64_t p = static_cast<int64_t>(input.src.size());
  const bool typed = !input.edge_types.empty();
  const bool timed = !input.times.empty();

  LinkSeeds s;
  s.mode = negatives.mode;
  s.num_positives = p;
  s.src.assign(input.src.begin(), input.src.end());
  s.dst.assign(input.dst.begin(), input.dst.end());
  if (typed) s.edge_types.assign(input.edge_types.begin(), input.edge_types.end());
  auto type_of = [&](int64_t positive) { return typed ? input.edge_types[positive] : int32_t{-1}; };

  // Each negative has its own stream, keyed by its index: negatives can be drawn in any
  // order or in parallel, and strict redraws of one never shift another's draws.
  const uint64_t stream = mix64(mix64(key.seed, key.epoch, key.batch), kNegativeStream);
  // Draws until the pair is not an edge or the retries run out (then keeps the last one).
  auto draw = [&](uint64_t index, int64_t fixed_src, int32_t type, int64_t& src, int64_t& dst) {
    Rng rng(mix64(stream, index));
    for (int attempt = 0;; ++attempt) {
      src = fixed_src >= 0 ? fixed_src : nodes.draw_src(rng, type);
      dst = nodes.draw_dst(rng, type);
      if (!strict || !is_edge(src, dst, type)) return;
      if (attempt == negatives.max_retries) {
        ++s.num_unverified_negatives;
        return;
      }
    }
  };

  if (negatives.mode == NegativeMode::kBinary) {
    if (negatives.ratio * static_cast<double>(p) > kMaxNegatives) {
      throw UsageError("negative sampling: ratio " + std::to_string(negatives.ratio) + " asks for more than " +
                       std::to_string(kMaxNegatives) + " negatives");
    }
    const int64_t n = binary_negatives(negatives.ratio, p);
    s.src.reserve(p + n);
    s.dst.reserve(p + n);
    for (int64_t j = 0; j < n; ++j) {
      // Negatives cycle through the positives for their type (and time).
      const int32_t type = type_of(j % p);
      int64_t src = 0, dst = 0;
      draw(static_cast<uint64_t>(j), -1, type, src, dst);
      s.src.push_back(src);
      s.dst.push_back(dst);
      if (typed) s.edge_types.push_back(type);
    }
  } else if (negatives.mode == NegativeMode::kTriplet) {
    const int64_t k = negatives.per_positive;
    if (static_cast<double>(k) * static_cast<double>(p) > kMaxNegatives) {
      throw UsageError("negative sampling: per_positive " + str(k) + " asks for too many negatives");
    }
    s.per_positive = k;
    s.neg_dst.reserve(p * k);
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < k; ++j) {
        int64_t src = 0, dst = 0;
        draw(static_cast<uint64_t>(i * k + j), input.src[i], type_of(i), src, dst);
        s.neg_dst.push_back(dst);
      }
    }
  }

  const int64_t pairs = static_cast<int64_t>(s.src.size());
  s.endpoints.reserve(2 * pairs + s.neg_dst.size());
  for (int64_t i = 0; i < pairs; ++i) {
    s.endpoints.push_back(s.src[i]);
    s.endpoints.push_back(s.dst[i]);
  }
  s.endpoints.insert(s.endpoints.end(), s.neg_dst.begin(), s.neg_dst.end());
  if (timed) {
    s.endpoint_times.reserve(s.endpoints.size());
    for (int64_t i = 0; i < pairs; ++i) {
      const int64_t time = input.times[i % p];
      s.endpoint_times.push_back(time);
      s.endpoint_times.push_back(time);
    }
    for (size_t j = 0; j < s.neg_dst.size(); ++j) {
      s.endpoint_times.push_back(input.times[j / s.per_positive]);
    }
  }
  return s;
}

// ---- SeedEdgeFilter ----

void SeedEdgeFilter::clear() {
  ids_.clear();
  pairs_.clear();
  first_pair_.clear();
}

void SeedEdgeFilter::reset(const LinkInput& input, bool reverse) {
  clear();
  const bool typed = !input.edge_types.empty();
  for (size_t i = 0; i < input.src.size(); ++i) {
    const int32_t type = typed ? input.edge_types[i] : -1;
    if (input.edge_ids.empty()) {
      pairs_.push_back({input.dst[i], input.src[i], type});
    } else {
      ids_.insert(input.edge_ids[i], 0);
    }
    if (reverse) pairs_.push_back({input.src[i], input.dst[i], type});
  }
  auto order = [](const Pair& a, const Pair& b) {
    return std::tie(a.dst, a.src, a.type) < std::tie(b.dst, b.src, b.type);
  };
  auto same = [](const Pair& a, const Pair& b) {
    return a.dst == b.dst && a.src == b.src && a.type == b.type;
  };
  std::sort(pairs_.begin(), pairs_.end(), order);
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end(), same), pairs_.end());
  for (size_t k = 0; k < pairs_.size(); ++k) first_pair_.insert(pairs_[k].dst, static_cast<int64_t>(k));
}

void SeedEdgeFilter::apply(Span<const int64_t> frontier, HopOutput& hop) const {
  if (empty()) return;
  if (hop.offsets.size() != frontier.size() + 1) {
    throw Error("exclude seed edges: " + str(hop.offsets.size() - 1) + " neighbour lists for a frontier of " +
                str(frontier.size()));
  }
  const bool typed = !hop.edge_types.empty();
  const bool by_id = ids_.size() > 0;
  // Compacts in place: kept <= k always, and offsets[i + 1] is read before it is rewritten.
  int64_t kept = 0;
  for (size_t i = 0; i < frontier.size(); ++i) {
    const int64_t begin = hop.offsets[i], end = hop.offsets[i + 1];
    hop.offsets[i] = kept;
    // One lookup per list: only a destination of a seed pair can lose edges by pair.
    const int64_t first = pairs_.empty() ? -1 : first_pair_.find(frontier[i]);
    for (int64_t k = begin; k < end; ++k) {
      const int32_t type = typed ? hop.edge_types[k] : -1;
      bool drop = by_id && ids_.find(hop.edge_ids[k]) >= 0;
      for (int64_t q = first; !drop && q >= 0 && q < static_cast<int64_t>(pairs_.size()) &&
                              pairs_[q].dst == frontier[i];
           ++q) {
        drop = pairs_[q].src == hop.neighbors[k] && (pairs_[q].type < 0 || pairs_[q].type == type);
      }
      if (drop) continue;
      hop.neighbors[kept] = hop.neighbors[k];
      hop.edge_ids[kept] = hop.edge_ids[k];
      if (typed) hop.edge_types[kept] = hop.edge_types[k];
      ++kept;
    }
  }
  hop.offsets[frontier.size()] = kept;
  hop.neighbors.resize(kept);
  hop.edge_ids.resize(kept);
  if (typed) hop.edge_types.resize(kept);
}

// ---- Labels ----

LinkBatch assemble_link_batch(LinkSeeds seeds, MiniBatch subgraph) {
  if (subgraph.input_ids != seeds.endpoints || subgraph.input_local.size() != seeds.endpoints.size()) {
    throw Error("link batch: the subgraph was not sampled from the batch's endpoints (" +
                str(subgraph.input_ids.size()) + " seeds for " + str(seeds.endpoints.size()) + " endpoints)");
  }
  const std::vector<int64_t>& local = subgraph.input_local;
  const int64_t pairs = static_cast<int64_t>(seeds.src.size());
  LinkBatch b;
  b.mode = seeds.mode;
  b.num_positives = seeds.num_positives;
  b.num_unverified_negatives = seeds.num_unverified_negatives;
  b.edge_types = std::move(seeds.edge_types);
  if (seeds.mode == NegativeMode::kTriplet) {
    b.per_positive = seeds.per_positive;
    b.src_index.resize(pairs);
    b.dst_pos_index.resize(pairs);
    for (int64_t i = 0; i < pairs; ++i) {
      b.src_index[i] = local[2 * i];
      b.dst_pos_index[i] = local[2 * i + 1];
    }
    b.dst_neg_index.assign(local.begin() + 2 * pairs, local.end());
  } else {
    b.edge_label_index.resize(2 * pairs);
    b.edge_label.resize(pairs);
    for (int64_t j = 0; j < pairs; ++j) {
      b.edge_label_index[j] = local[2 * j];
      b.edge_label_index[pairs + j] = local[2 * j + 1];
      b.edge_label[j] = j < seeds.num_positives ? 1.f : 0.f;
    }
  }
  b.subgraph = std::move(subgraph);
  return b;
}

// ---- The reference sampler ----

LinkSampler::LinkSampler(const Topology& topology, LinkSamplerConfig config)
    : topology_(topology),
      config_(std::move(config)),
      builder_(config_.sampler.disjoint) {
  config_.sampler.order_by_time(topology_);
  config_.sampler.validate(topology_);
  config_.negatives.validate();
  if (config_.exclude_reverse_edges && !config_.exclude_seed_edges) {
    throw UsageError("exclude_reverse_edges needs exclude_seed_edges");
  }
  nodes_ = NegativeNodes::of(topology_);
  // Captures the topology, not this: a moved or copied sampler keeps a valid test.
  is_edge_ = [topology = &topology_](int64_t src, int64_t dst, int32_t type) {
    return has_edge(*topology, src, dst, type);
  };
}

LinkBatch LinkSampler::sample(const LinkInput& input, const SampleKey& key) {
  if (config_.sampler.temporal != TemporalMode::kNone && input.times.size() != input.src.size()) {
    throw UsageError("temporal link sampling needs one time per seed edge");
  }
  for (size_t i = 0; i < input.edge_ids.size(); ++i) {
    const int64_t e = input.edge_ids[i];
    if (e < topology_.edge_begin() || e >= topology_.edge_begin() + topology_.num_edges()) {
      throw UsageError("link batch: seed edge " + str(i) + " has edge id " + str(e) + ", outside the graph [" +
                       str(topology_.edge_begin()) + ", " + str(topology_.edge_begin() + topology_.num_edges()) +
                       ")");
    }
  }
  LinkSeeds seeds = make_link_seeds(input, config_.negatives, nodes_, key, is_edge_);
  if (config_.exclude_seed_edges) {
    filter_.reset(input, config_.exclude_reverse_edges);
  } else {
    filter_.clear();
  }
  builder_.start(seeds.endpoints, seeds.endpoint_times);
  for (int hop = 0; hop < config_.sampler.num_hops(); ++hop) {
    HopInput in{builder_.frontier_nodes(), builder_.frontier_trees(), builder_.frontier_times()};
    sample_hop(topology_, config_.sampler, key, hop, in, hop_);
    filter_.apply(builder_.frontier_nodes(), hop_);
    builder_.add_hop(hop_);
  }
  return assemble_link_batch(std::move(seeds), builder_.finish());
}

}  // namespace partita
