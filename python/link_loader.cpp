#include "python/link_loader.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "base/random.h"
#include "embeddings/kg_triples.h"

namespace partita::python {

namespace {

constexpr const char* kName = "LinkNeighborLoader";

// Negatives a batch of `positives` draws: binary pairs or triplet destinations.
int64_t negatives_of(const LinkLoaderOptions& o, int64_t positives) {
  switch (o.negatives) {
    case NegativeMode::kNone:
      return 0;
    case NegativeMode::kBinary:
      return static_cast<int64_t>(std::ceil(o.amount * static_cast<double>(positives)));
    case NegativeMode::kTriplet:
      return static_cast<int64_t>(o.amount) * positives;
  }
  return 0;
}

std::string edge_type_name(const GraphHandle& graph, int32_t t) {
  const EdgeType& type = graph.meta().edge_types[static_cast<size_t>(t)];
  return "(" + type.src_type + ", " + type.relation + ", " + type.dst_type + ")";
}

// Throws UsageError naming the edge type unless `t` is -1 or one of the folder's.
void check_edge_type(const GraphHandle& graph, int32_t t, const std::string& what) {
  const auto types = static_cast<int32_t>(graph.meta().edge_types.size());
  if (t < -1 || t >= types) {
    throw UsageError(what + ": edge type " + std::to_string(t) + " is not one of the " + std::to_string(types) +
                     " edge types of '" + graph.dir() + "'");
  }
}

int32_t node_type_index(const GraphHandle& graph, const std::string& name) {
  const std::vector<std::string>& types = graph.meta().node_types;
  const auto it = std::find(types.begin(), types.end(), name);
  if (it == types.end()) throw Error(std::string(kName) + ": '" + graph.dir() + "' has no node type '" + name + "'");
  return static_cast<int32_t>(it - types.begin());
}

// The original ids of node type `type`, ascending.
std::vector<int64_t> nodes_of_type(const GraphHandle& graph, int32_t type) {
  const std::vector<int32_t>& type_of = graph.node_type_of();
  const std::vector<int64_t>& global = graph.global_of();
  std::vector<int64_t> nodes;
  for (int64_t v = 0; v < graph.meta().num_nodes; ++v) {
    if (type_of[static_cast<size_t>(global[static_cast<size_t>(v)])] == type) nodes.push_back(v);
  }
  if (nodes.empty()) {
    throw UsageError(std::string(kName) + ": node type '" + graph.meta().node_types[static_cast<size_t>(type)] +
                     "' has no nodes to draw negatives from");
  }
  return nodes;
}

// Throws UsageError naming the first end (global ids in `ends`) not of node type `type`.
void check_end_types(const GraphHandle& graph, const std::vector<int64_t>& ends, int32_t type, const std::string& what,
                     const std::string& edge_type) {
  const std::vector<int32_t>& type_of = graph.node_type_of();
  const std::vector<int64_t>& original = graph.original_of();
  for (size_t i = 0; i < ends.size(); ++i) {
    const int32_t t = type_of[static_cast<size_t>(ends[i])];
    if (t != type) {
      const std::vector<std::string>& names = graph.meta().node_types;
      throw UsageError(std::string(kName) + ": " + what + "[" + std::to_string(i) + "] is node " +
                       std::to_string(original[static_cast<size_t>(ends[i])]) + " of type '" +
                       names[static_cast<size_t>(t)] + "'; edge type " + edge_type + " needs '" +
                       names[static_cast<size_t>(type)] + "'");
    }
  }
}

void check_options(const GraphHandle& graph, const EdgeList& edges, const LinkLoaderOptions& o) {
  const std::string name(kName);
  check_edge_type(graph, o.edge_type, name);
  if (graph.meta().is_hetero && o.edge_type < 0) {
    throw UsageError(name + ": '" + graph.dir() + "' holds a heterogeneous graph: give edge_label_index as "
                     "(edge type, edges)");
  }
  if (!graph.meta().is_hetero && o.edge_type >= 0) {
    throw UsageError(name + ": '" + graph.dir() + "' holds a homogeneous graph: give edge_label_index without "
                     "an edge type");
  }
  if (o.batch_size < 1) throw UsageError(name + ": batch_size " + std::to_string(o.batch_size) + " (must be at least 1)");
  if (edges.dst.size() != edges.src.size()) {
    throw UsageError(name + ": edge_label_index has " + std::to_string(edges.src.size()) + " sources and " +
                     std::to_string(edges.dst.size()) + " destinations");
  }
  if (o.negatives == NegativeMode::kBinary && !(o.amount > 0 && o.amount <= 1e6)) {
    throw UsageError(name + ": neg_sampling amount " + std::to_string(o.amount) + " (binary: more than 0, at most 1e6)");
  }
  if (o.negatives == NegativeMode::kTriplet &&
      !(o.amount >= 1 && o.amount <= 1e6 && o.amount == std::floor(o.amount))) {
    throw UsageError(name + ": neg_sampling amount " + std::to_string(o.amount) +
                     " (triplet: a whole number of negative destinations per positive, 1 to 1e6)");
  }
  const bool temporal = o.session.temporal != "none";
  if (temporal) {
    if (!o.session.disjoint) {
      throw UsageError(name + ": temporal sampling (time_attr) samples one tree per seed: pass disjoint=True");
    }
    if (!graph.meta().has_edge_time) {
      throw UsageError(name + ": time_attr: '" + graph.dir() + "' has no edge times to sample by");
    }
    if (edges.time.size() != edges.src.size()) {
      throw UsageError(name + ": temporal sampling needs edge_label_time, one time per edge (got " +
                       std::to_string(edges.time.size()) + " for " + std::to_string(edges.src.size()) + " edges)");
    }
  } else if (!edges.time.empty()) {
    throw UsageError(name + ": edge_label_time is given without time_attr (temporal sampling)");
  }
}

// The held-out edges of `split` of every part, in original ids ordered by (src, dst).
EdgeList held_out_edges(const GraphHandle& graph, const KgTriples& triples, const std::string& split,
                        int32_t edge_type) {
  const std::vector<int64_t>& original = graph.original_of();
  EdgeList all;
  for (int p = 0; p < graph.meta().num_parts; ++p) {
    const TripleList part = triples.held_out(split, p);
    for (int64_t i = 0; i < part.size(); ++i) {
      if (edge_type >= 0 && part.relation[static_cast<size_t>(i)] != edge_type) continue;
      all.src.push_back(original[part.head[i]]);
      all.dst.push_back(original[part.tail[i]]);
      if (!part.time.empty()) all.time.push_back(part.time[i]);
    }
  }
  std::vector<size_t> order(all.src.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(all.src[a], all.dst[a]) < std::tie(all.src[b], all.dst[b]);
  });
  EdgeList sorted;
  for (size_t i : order) {
    sorted.src.push_back(all.src[i]);
    sorted.dst.push_back(all.dst[i]);
    if (!all.time.empty()) sorted.time.push_back(all.time[i]);
  }
  return sorted;
}

// `edges` in global ids, once every option and id is checked.
EdgeList checked_edges(const GraphHandle& graph, EdgeList edges, const LinkLoaderOptions& options) {
  check_options(graph, edges, options);
  graph.to_global(edges.src, std::string(kName) + ": edge_label_index[0]");
  graph.to_global(edges.dst, std::string(kName) + ": edge_label_index[1]");
  if (options.edge_type >= 0) {
    const EdgeType& type = graph.meta().edge_types[static_cast<size_t>(options.edge_type)];
    const std::string name = edge_type_name(graph, options.edge_type);
    check_end_types(graph, edges.src, node_type_index(graph, type.src_type), "edge_label_index[0]", name);
    check_end_types(graph, edges.dst, node_type_index(graph, type.dst_type), "edge_label_index[1]", name);
  }
  return edges;
}

// The pool a negative source (`source`) or destination is drawn from: the original ids of
// the edge type's node type; empty (every node) without an edge type.
std::vector<int64_t> negative_pool(const GraphHandle& graph, const LinkLoaderOptions& options, bool source) {
  if (options.edge_type < 0) return {};
  const EdgeType& type = graph.meta().edge_types[static_cast<size_t>(options.edge_type)];
  return nodes_of_type(graph, node_type_index(graph, source ? type.src_type : type.dst_type));
}

}  // namespace

EdgeList read_edge_split(const GraphHandle& graph, const std::string& split, int32_t edge_type) {
  check_edge_type(graph, edge_type, "edge split '" + split + "'");
  if (split != "train" && split != "val" && split != "test") {
    throw UsageError("edge split '" + split + "' is not one of: train, val, test");
  }
  if (split != "train" && !graph.meta().has_edge_splits) {
    throw UsageError("edge split '" + split + "': '" + graph.dir() +
                     "' holds no held-out edges (partition with holdout={'val': ..., 'test': ...})");
  }
  const PartitionFolder folder(graph.dir());
  const KgTriples triples(folder);
  if (split != "train") return held_out_edges(graph, triples, split == "val" ? "valid" : "test", edge_type);
  const std::vector<int64_t>& original = graph.original_of();
  const TripleList& train = triples.train();
  const std::vector<int64_t>& times = triples.train_times();
  EdgeList edges;
  for (int64_t e = 0; e < train.size(); ++e) {
    if (!triples.is_training_edge(e)) continue;
    if (edge_type >= 0 && train.relation[static_cast<size_t>(e)] != edge_type) continue;
    edges.src.push_back(original[train.head[e]]);
    edges.dst.push_back(original[train.tail[e]]);
    if (!times.empty()) edges.time.push_back(times[e]);
  }
  return edges;
}

LinkLoader::LinkLoader(std::shared_ptr<const GraphHandle> graph, EdgeList edges, const LinkLoaderOptions& options)
    : graph_(std::move(graph)),
      options_(options),
      edges_(checked_edges(*graph_, std::move(edges), options)),
      src_pool_(negative_pool(*graph_, options, true)),
      dst_pool_(negative_pool(*graph_, options, false)),
      session_(*graph_, 0, options.session, kName),
      epoch_(session_, kName) {
  const int64_t n = edges_.size();
  num_batches_ = options_.drop_last ? n / options_.batch_size : (n + options_.batch_size - 1) / options_.batch_size;
}

void LinkLoader::add_batch(EpochPlan& plan, Span<const int64_t> positions, uint64_t epoch, int64_t b) const {
  const auto positives = static_cast<int64_t>(positions.size());
  const int64_t negatives = negatives_of(options_, positives);
  const int64_t num_nodes = graph_->meta().num_nodes;
  const std::vector<int64_t>& global = graph_->global_of();
  // Drawn as original ids, keyed by the batch: the same negatives on any number of parts.
  Rng rng(mix64(mix64(options_.seed, 0x6c6e6567ull /* "lneg" */), epoch, static_cast<uint64_t>(b)));
  const auto draw_from = [&](const std::vector<int64_t>& pool) {
    if (pool.empty()) return global[rng.below(static_cast<uint64_t>(num_nodes))];
    return global[static_cast<size_t>(pool[rng.below(static_cast<uint64_t>(pool.size()))])];
  };
  std::vector<int64_t> src, dst, src_time, dst_time;
  for (int64_t k : positions) {
    src.push_back(edges_.src[k]);
    dst.push_back(edges_.dst[k]);
  }
  if (!edges_.time.empty()) {
    for (int64_t k : positions) src_time.push_back(edges_.time[k]);
    dst_time = src_time;
  }
  if (options_.negatives == NegativeMode::kBinary) {
    for (int64_t j = 0; j < negatives; ++j) {
      src.push_back(draw_from(src_pool_));
      dst.push_back(draw_from(dst_pool_));
      if (!edges_.time.empty()) {
        src_time.push_back(edges_.time[positions[static_cast<size_t>(j % positives)]]);
        dst_time.push_back(src_time.back());
      }
    }
  } else if (options_.negatives == NegativeMode::kTriplet) {
    const auto per_positive = static_cast<int64_t>(options_.amount);
    for (int64_t i = 0; i < positives; ++i) {
      for (int64_t j = 0; j < per_positive; ++j) {
        dst.push_back(draw_from(dst_pool_));
        if (!edges_.time.empty()) dst_time.push_back(src_time[static_cast<size_t>(i)]);
      }
    }
  }
  plan.order.insert(plan.order.end(), src.begin(), src.end());
  plan.order.insert(plan.order.end(), dst.begin(), dst.end());
  plan.offsets.push_back(static_cast<int64_t>(plan.order.size()));
  plan.times.insert(plan.times.end(), src_time.begin(), src_time.end());
  plan.times.insert(plan.times.end(), dst_time.begin(), dst_time.end());
}

void LinkLoader::start_epoch(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  EpochPlan positions = EpochCursor::plan_positions(edges_.size(), options_.batch_size, options_.seed, epoch,
                                                    options_.shuffle, options_.drop_last);
  EpochPlan plan;
  plan.job_seed = positions.job_seed;
  plan.epoch = positions.epoch;
  plan.offsets = {0};
  for (int64_t b = 0; b < positions.num_batches(); ++b) add_batch(plan, positions.batch(b), epoch, b);
  epoch_.start(std::move(positions), plan);
}

LoadedLinkBatch LinkLoader::next() {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t b = 0;
  MiniBatch batch = epoch_.next(b);
  const Span<const int64_t> positions = epoch_.positions().batch(b);
  const auto positives = static_cast<int64_t>(positions.size());
  const int64_t negatives = negatives_of(options_, positives);
  LoadedLinkBatch out;
  out.num_positives = positives;
  const std::vector<int64_t>& local = batch.input_local;
  const int64_t pairs = options_.negatives == NegativeMode::kBinary ? positives + negatives : positives;
  const int64_t seeds = options_.negatives == NegativeMode::kBinary ? 2 * pairs : 2 * positives + negatives;
  if (static_cast<int64_t>(local.size()) != seeds) {
    throw Error(std::string(kName) + ": batch " + std::to_string(b) + " came with " + std::to_string(local.size()) +
                " seed positions for " + std::to_string(seeds) + " seeds");
  }
  const auto at = [&](int64_t i) { return local.begin() + static_cast<std::ptrdiff_t>(i); };
  out.src_index.assign(at(0), at(pairs));
  out.dst_index.assign(at(pairs), at(2 * pairs));
  if (options_.negatives == NegativeMode::kTriplet) out.dst_neg_index.assign(at(2 * pairs), at(seeds));
  if (!edges_.time.empty()) {
    for (int64_t j = 0; j < pairs; ++j) out.seed_time.push_back(edges_.time[positions[static_cast<size_t>(j % positives)]]);
  }
  out.batch = loaded_batch(std::move(batch), *graph_, session_.recycler());
  out.batch.input_id.assign(positions.begin(), positions.end());
  return out;
}

}  // namespace partita::python
