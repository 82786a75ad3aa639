#include "python/node_loader.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace partita::python {

namespace {

constexpr const char* kName = "NeighborLoader";

// The seeds as global ids, after checking what a plan needs of them.
std::vector<int64_t> checked_inputs(const GraphHandle& graph, std::vector<int64_t> input_nodes,
                                    const LoaderOptions& options) {
  if (options.batch_size < 1) {
    throw UsageError(std::string(kName) + ": batch_size " + std::to_string(options.batch_size) + " (must be at least 1)");
  }
  graph.to_global(input_nodes, std::string(kName) + ": input_nodes");
  std::vector<bool> seen(static_cast<size_t>(graph.meta().num_nodes), false);
  for (size_t k = 0; k < input_nodes.size(); ++k) {
    if (seen[input_nodes[k]]) {
      throw UsageError(std::string(kName) + ": input_nodes: node " +
                       std::to_string(graph.original_of()[input_nodes[k]]) + " appears more than once (again at position " +
                       std::to_string(k) + ")");
    }
    seen[input_nodes[k]] = true;
  }
  return input_nodes;
}

}  // namespace

LoadedBatch loaded_batch(MiniBatch&& batch, const GraphHandle& graph,
                         std::function<void(std::vector<float>&&)> recycle) {
  LoadedBatch out;
  const std::vector<int64_t>& original = graph.original_of();
  const std::vector<int32_t>& node_type = graph.node_type_of();
  if (!node_type.empty()) {
    out.node_type.reserve(batch.node_ids.size());
    for (int64_t id : batch.node_ids) out.node_type.push_back(node_type[id]);
    out.edge_type.assign(batch.edge_types.begin(), batch.edge_types.end());
    if (out.edge_type.size() != batch.row.size()) {
      throw Error("a sampled batch of a heterogeneous graph has " + std::to_string(out.edge_type.size()) +
                  " edge types for " + std::to_string(batch.row.size()) + " edges");
    }
  }
  out.n_id = std::move(batch.node_ids);
  for (int64_t& id : out.n_id) id = original[id];
  // Row, then col, written once each (no zero-filled buffer first).
  out.edge_index.reserve(2 * batch.row.size());
  out.edge_index.insert(out.edge_index.end(), batch.row.begin(), batch.row.end());
  out.edge_index.insert(out.edge_index.end(), batch.col.begin(), batch.col.end());
  out.e_id = std::move(batch.edge_ids);
  const std::vector<int64_t>& original_edge = graph.original_edge_of();
  for (int64_t& id : out.e_id) id = original_edge[id];
  out.num_sampled_nodes = std::move(batch.num_sampled_nodes);
  // PyG counts edges per hop (num_hops entries); the sampler also counts the seeds' "hop",
  // which has none (graph/mini_batch.h).
  out.num_sampled_edges = std::move(batch.num_sampled_edges);
  if (!out.num_sampled_edges.empty()) {
    if (out.num_sampled_edges.front() != 0) throw Error("a sampled batch has edges before its first hop");
    out.num_sampled_edges.erase(out.num_sampled_edges.begin());
  }
  out.batch = std::move(batch.batch);
  out.batch_size = batch.batch_size;
  out.feature_dim = batch.feature_dim;
  out.x = std::move(batch.x);
  out.y = std::move(batch.y);
  out.recycle = std::move(recycle);
  return out;
}

NodeLoader::NodeLoader(std::shared_ptr<const GraphHandle> graph, std::vector<int64_t> input_nodes,
                       const LoaderOptions& options)
    : graph_(std::move(graph)),
      options_(options),
      input_global_(checked_inputs(*graph_, std::move(input_nodes), options)),
      session_(*graph_, 0, options.session, kName),
      epoch_(session_, kName) {
  const auto n = static_cast<int64_t>(input_global_.size());
  num_batches_ = options_.drop_last ? n / options_.batch_size : (n + options_.batch_size - 1) / options_.batch_size;
}

void NodeLoader::start_epoch(uint64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  EpochPlan positions = EpochCursor::plan_positions(static_cast<int64_t>(input_global_.size()), options_.batch_size,
                                                    options_.seed, epoch, options_.shuffle, options_.drop_last);
  // The same permutation and cuts over the seeds themselves (the shuffle depends on the
  // count alone), in global ids for the sampler.
  EpochPlan plan;
  plan.job_seed = positions.job_seed;
  plan.epoch = positions.epoch;
  plan.offsets = positions.offsets;
  plan.order.reserve(positions.order.size());
  for (int64_t k : positions.order) plan.order.push_back(input_global_[k]);
  epoch_.start(std::move(positions), plan);
}

LoadedBatch NodeLoader::next() {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t b = 0;
  MiniBatch batch = epoch_.next(b);
  LoadedBatch out = loaded_batch(std::move(batch), *graph_, session_.recycler());
  Span<const int64_t> seeds = epoch_.positions().batch(b);
  out.input_id.assign(seeds.begin(), seeds.end());
  return out;
}

}  // namespace partita::python
