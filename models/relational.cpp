#include "models/relational.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"

namespace partita {

namespace {

at::Tensor relation_mean(const at::Tensor& x, const GraphBatch& batch, size_t r, int64_t num_dst,
                         AggregatePath path) {
  const CscEdges& edges = batch.relations[r];
  const int64_t count = edges.edges_before(num_dst);
  if (count == 0) return at::zeros({num_dst, x.size(1)}, x.options());
  return aggregate(x, batch.relation_mean_weight[r].narrow(0, 0, count), edges, num_dst, path);
}

}  // namespace

at::Tensor relation_means(const at::Tensor& h, const GraphBatch& batch, int64_t num_dst, AggregatePath path) {
  std::vector<at::Tensor> means;
  means.reserve(batch.relations.size());
  for (size_t r = 0; r < batch.relations.size(); ++r) means.push_back(relation_mean(h, batch, r, num_dst, path));
  return at::cat(means, 1);
}

at::Tensor sum_relation_means(const at::Tensor& messages, const GraphBatch& batch, int64_t num_dst,
                              AggregatePath path) {
  at::Tensor sum = at::zeros({num_dst, messages.size(2)}, messages.options());
  for (size_t r = 0; r < batch.relations.size(); ++r) {
    if (batch.relations[r].edges_before(num_dst) == 0) continue;
    sum = sum + relation_mean(messages.select(0, static_cast<int64_t>(r)), batch, r, num_dst, path);
  }
  return sum;
}

int64_t one_hot_rows(const ModelConfig& config) {
  return config.num_nodes + (config.has_shared_input() ? config.num_node_types : 0);
}

namespace {

// Per node type, 1 where `reads` holds for its input, else 0.
std::vector<float> types_reading(const ModelConfig& config, bool (*reads)(const std::string&)) {
  std::vector<float> out(static_cast<size_t>(config.num_node_types));
  for (int32_t t = 0; t < config.num_node_types; ++t) out[t] = reads(config.input_of(t)) ? 1.0f : 0.0f;
  return out;
}

bool all_read(const std::vector<float>& reads) {
  return std::all_of(reads.begin(), reads.end(), [](float r) { return r == 1.0f; });
}

// float [T]: the same as a tensor (one copy, not a tensor write per type).
at::Tensor as_tensor(const std::vector<float>& reads) {
  return at::tensor(at::ArrayRef<float>(reads.data(), reads.size()));
}

}  // namespace

at::Tensor one_hot_row_ids(const ModelConfig& config, const GraphBatch& batch) {
  if (!config.has_shared_input()) return batch.node_ids;
  const at::Tensor shared = as_tensor(types_reading(config, ModelConfig::input_is_shared)).to(at::kBool);
  return at::where(shared.index_select(0, batch.node_type), batch.node_type + config.num_nodes, batch.node_ids);
}

at::Tensor learnt_row_mask(const ModelConfig& config, const GraphBatch& batch) {
  const std::vector<float> rows = types_reading(config, ModelConfig::input_reads_row);
  if (all_read(rows)) return {};
  return as_tensor(rows).index_select(0, batch.node_type).unsqueeze(1);
}

at::Tensor read_features(const ModelConfig& config, const GraphBatch& batch, const at::Tensor& x) {
  const std::vector<float> reads = types_reading(config, ModelConfig::input_reads_features);
  if (all_read(reads)) return x;
  return x * as_tensor(reads).index_select(0, batch.node_type.narrow(0, 0, x.size(0))).unsqueeze(1).to(x.dtype());
}

void check_relational_batch(const GraphBatch& batch, int num_relations, const std::string& kind) {
  if (!batch.is_hetero() || !batch.node_type.defined()) {
    throw Error("model: " + kind + " needs a heterogeneous batch (edge types and node types); this batch has none");
  }
  if (static_cast<int>(batch.relations.size()) != num_relations) {
    throw Error("model: the batch has " + std::to_string(batch.relations.size()) + " relations; the " + kind +
                " model was built for " + std::to_string(num_relations));
  }
}

}  // namespace partita
