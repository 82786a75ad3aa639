#include "partitioned_graph.h"

#include "base/error.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"

namespace partita::testing {

Dataset sbm_graph(int64_t nodes, uint64_t seed) {
  SbmOptions o;
  o.num_nodes = nodes;
  o.num_classes = 4;
  o.feature_dim = 4;
  o.avg_degree = 12;
  o.seed = seed;
  return generate_sbm(o);
}

OriginalBatch to_original(const MiniBatch& b, const std::function<int64_t(int64_t)>& original_node,
                          const std::function<int64_t(int64_t)>& original_edge) {
  OriginalBatch o;
  for (int64_t g : b.node_ids) o.nodes.push_back(original_node(g));
  for (int64_t e : b.edge_ids) o.edges.push_back(original_edge(e));
  o.rows = b.row;
  o.cols = b.col;
  o.num_nodes = b.num_sampled_nodes;
  o.num_edges = b.num_sampled_edges;
  o.x = b.x;
  o.y = b.y;
  o.feature_dim = b.feature_dim;
  return o;
}

PartitionedGraph::PartitionedGraph(const std::string& dir) : folder_(dir) {
  const PartitionMeta& meta = folder_.meta();
  for (int p = 0; p < meta.num_parts; ++p) parts_.push_back(load_topology(folder_, p));
  original_of_global_.resize(meta.num_nodes);
  global_edge_of_original_.resize(meta.num_edges);
  for (const auto& t : parts_) {
    for (int64_t g = t.node_begin(); g < t.node_end(); ++g) original_of_global_[g] = t.original_node_id(g);
    for (int64_t e = t.edge_begin(); e < t.edge_begin() + t.num_edges(); ++e) {
      global_edge_of_original_[t.original_edge_id(e)] = e;
    }
  }
  MappedArray map = folder_.node_map();
  auto ids = map.as<int64_t>();
  global_of_original_.assign(ids.begin(), ids.end());
}

const Topology& PartitionedGraph::owner_of_edge(int64_t global_edge) const {
  for (const auto& t : parts_) {
    if (global_edge >= t.edge_begin() && global_edge < t.edge_begin() + t.num_edges()) return t;
  }
  throw Error("edge id " + std::to_string(global_edge) + " is in no partition");
}

void PartitionedGraph::sample_hops(SubgraphBuilder& builder, const std::vector<SamplerConfig>& configs,
                                   const SampleKey& key,
                                   const std::function<void(HopOutput&)>& before_merge) const {
  FrontierSplit split;
  std::vector<HopOutput> outputs(parts_.size());
  HopOutput joined;
  for (int hop = 0; hop < configs[0].num_hops(); ++hop) {
    split.split(book(), builder.frontier_nodes(), builder.frontier_trees(), builder.frontier_times());
    std::vector<const HopOutput*> answers(parts_.size(), nullptr);
    for (size_t p = 0; p < parts_.size(); ++p) {
      if (split.empty(static_cast<int>(p))) continue;
      sample_hop(parts_[p], configs[p], key, hop, split.input(static_cast<int>(p)), outputs[p]);
      answers[p] = &outputs[p];
    }
    split.join(answers, joined);
    if (before_merge) before_merge(joined);
    builder.add_hop(joined);
  }
}

}  // namespace partita::testing
