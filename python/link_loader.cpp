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

void check_options(const GraphHandle& graph, const EdgeList& edges, const LinkLoaderOptions& o) {
  const std::string name(kName);
  if (graph.meta().is_hetero) {
    throw UsageError(name + ": '" + graph.dir() + "' holds a heterogeneous graph; this loader samples homogeneous graphs");
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
EdgeList held_out_edges(const GraphHandle& graph, const KgTriples& triples, const std::string& split) {
  const std::vector<int64_t>& original = graph.original_of();
  EdgeList all;
  for (int p = 0; p < graph.meta().num_parts; ++p) {
    const TripleList part = triples.held_out(split, p);
    for (int64_t i = 0; i < part.size(); ++i) {
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
  return edges;
}

}  // namespace

EdgeList read_edge_split(const GraphHandle& graph, const std::string& split) {
  if (split != "train" && split != "val" && split != "test") {
    throw UsageError("edge split '" + split + "' is not one of: train, val, test");
  }
  if (split != "train" && !graph.meta().has_edge_splits) {
    throw UsageError("edge split '" + split + "': '" + graph.dir() +
                     "' holds no held-out edges (partition with holdout={'val': ..., 'test': ...})");
  }
  const PartitionFolder folder(graph.dir());
  const KgTriples triples(folder);
  if (split != "train") return held_out_edges(graph, triples, split == "val" ? "valid" : "test");
  const std::vector<int64_t>& original = graph.original_of();
  const TripleList& train = triples.train();
  const std::vector<int64_t>& times = triples.train_times();
  EdgeList edges;
  for (int64_t e = 0; e < train.size(); ++e) {
    if (!triples.is_training_edge(e)) continue;
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
  const auto draw = [&] { return global[rng.below(static_cast<uint64_t>(num_nodes))]; };
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
      src.push_back(draw());
      dst.push_back(draw());
      if (!edges_.time.empty()) {
        src_time.push_back(edges_.time[positions[static_cast<size_t>(j % positives)]]);
        dst_time.push_back(src_time.back());
      }
    }
  } else if (options_.negatives == NegativeMode::kTriplet) {
    const auto per_positive = static_cast<int64_t>(options_.amount);
    for (int64_t i = 0; i < positives; ++i) {
      for (int64_t j = 0; j < per_positive; ++j) {
        dst.push_back(draw());
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
