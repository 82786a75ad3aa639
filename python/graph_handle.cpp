#include "python/graph_handle.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "base/error.h"

namespace partita::python {

namespace {

namespace fs = std::filesystem;

// The folder's absolute path, once it is known to be a partition folder at all (the
// format's own errors name the file for everything after that).
std::string checked_dir(const std::string& dir) {
  std::error_code ec;
  if (dir.empty()) throw UsageError("partition folder: the path is empty");
  if (!fs::is_directory(dir, ec)) throw Error("partition folder '" + dir + "' does not exist (or is not a folder)");
  if (!fs::is_regular_file(fs::path(dir) / kMetaFile, ec)) {
    throw Error("'" + dir + "' is not a partition folder: it has no " + std::string(kMetaFile) +
                " (write one with partita.partition or `partita partition`)");
  }
  return fs::absolute(dir).lexically_normal().string();
}

}  // namespace

GraphHandle::GraphHandle(const std::string& dir) : dir_(checked_dir(dir)), folder_(dir_) {
  const int64_t n = folder_.meta().num_nodes;
  {
    const MappedArray map = folder_.node_map();
    Span<const int64_t> ids = map.as<int64_t>();
    global_of_.assign(ids.begin(), ids.end());
  }
  original_of_.assign(static_cast<size_t>(n), -1);
  const bool hetero = folder_.meta().is_hetero;
  std::vector<uint8_t> labelled;  // per node type: has a node with a label
  if (hetero) {
    node_type_of_.assign(static_cast<size_t>(n), 0);
    original_edge_type_.assign(static_cast<size_t>(folder_.meta().num_edges), 0);
    labelled.assign(folder_.meta().node_types.size(), 0);
  }
  for (int p = 0; p < folder_.meta().num_parts; ++p) {
    const PartitionData data = folder_.load_part(p);
    Span<const int64_t> orig = data.orig_ids.as<int64_t>();
    for (size_t k = 0; k < orig.size(); ++k) {
      const int64_t global = data.node_begin + static_cast<int64_t>(k);
      const int64_t original = orig[k];
      if (original < 0 || original >= n || global_of_[original] != global) {
        throw file_error(data.orig_ids.path(), "original id " + std::to_string(original) + " of global node " +
                                                   std::to_string(global) + " disagrees with node_map.bin");
      }
      original_of_[global] = original;
    }
    Span<const int64_t> edges = data.edge_ids.as<int64_t>();
    const int64_t m = folder_.meta().num_edges;
    for (int64_t e : edges) {
      if (e < 0 || e >= m) {
        throw file_error(data.edge_ids.path(), "original edge id " + std::to_string(e) + " is outside the graph's " +
                                                   std::to_string(m) + " edges");
      }
    }
    const size_t first_edge = original_edge_of_.size();
    original_edge_of_.insert(original_edge_of_.end(), edges.begin(), edges.end());
    if (hetero) take_types(p, data, first_edge, labelled);
    const std::pair<const MappedArray*, std::vector<int64_t>*> splits[] = {
        {&data.train_idx, &train_}, {&data.val_idx, &val_}, {&data.test_idx, &test_}};
    for (const auto& [ids, to] : splits) {
      for (int64_t global : ids->as<int64_t>()) to->push_back(original_of_[global]);
    }
  }
  for (std::vector<int64_t>* split : {&train_, &val_, &test_}) std::sort(split->begin(), split->end());
  if (static_cast<int64_t>(original_edge_of_.size()) != folder_.meta().num_edges) {
    throw file_error(dir_ + "/" + kMetaFile, "num_edges " + std::to_string(folder_.meta().num_edges) +
                                                 " disagrees with the parts' " + std::to_string(original_edge_of_.size()) +
                                                 " edges");
  }
  if (hetero) index_types(labelled);
}

void GraphHandle::take_types(int part, const PartitionData& data, size_t first_edge, std::vector<uint8_t>& labelled) {
  if (!data.node_type) throw Error(dir_ + ": part " + std::to_string(part) + " has no node types");
  const Span<const int32_t> type = data.node_type->as<int32_t>();
  std::copy(type.begin(), type.end(), node_type_of_.begin() + data.node_begin);
  if (!folder_.meta().edge_types.empty()) {
    if (!data.edge_type) throw Error(dir_ + ": part " + std::to_string(part) + " has no edge types");
    // One per edge of the part, as its edge ids: load_part checks both shapes and the types.
    const Span<const int32_t> edge_type = data.edge_type->as<int32_t>();
    for (size_t k = 0; k < edge_type.size(); ++k) {
      original_edge_type_[static_cast<size_t>(original_edge_of_[first_edge + k])] = edge_type[k];
    }
  }
  if (data.y) {
    const Span<const int64_t> y = data.y->as<int64_t>();
    for (size_t k = 0; k < y.size(); ++k) {
      if (y[k] >= 0) labelled[static_cast<size_t>(type[k])] = 1;
    }
  }
}

void GraphHandle::index_types(const std::vector<uint8_t>& labelled) {
  const PartitionMeta& meta = folder_.meta();
  const size_t n = static_cast<size_t>(meta.num_nodes), m = static_cast<size_t>(meta.num_edges);
  const size_t node_types = meta.node_types.size(), edge_types = meta.edge_types.size();
  original_node_type_.resize(n);
  for (size_t v = 0; v < n; ++v) original_node_type_[v] = node_type_of_[static_cast<size_t>(global_of_[v])];
  // Rows: a running count per type over the original ids, in order.
  type_node_offsets_.assign(node_types + 1, 0);
  node_index_in_type_.resize(n);
  {
    std::vector<int64_t> next(node_types, 0);
    for (size_t v = 0; v < n; ++v) node_index_in_type_[v] = next[static_cast<size_t>(original_node_type_[v])]++;
    for (size_t t = 0; t < node_types; ++t) type_node_offsets_[t + 1] = type_node_offsets_[t] + next[t];
  }
  nodes_by_type_.resize(n);
  for (size_t v = 0; v < n; ++v) {
    const auto t = static_cast<size_t>(original_node_type_[v]);
    nodes_by_type_[static_cast<size_t>(type_node_offsets_[t] + node_index_in_type_[v])] = static_cast<int64_t>(v);
  }

  for (size_t t = 0; t < node_types; ++t) {
    if (labelled[t]) labelled_node_types_.push_back(static_cast<int32_t>(t));
  }
  type_num_edges_.assign(edge_types, 0);
  edge_index_in_type_.resize(edge_types > 0 ? m : 0);
  for (size_t e = 0; e < edge_index_in_type_.size(); ++e) {
    edge_index_in_type_[e] = type_num_edges_[static_cast<size_t>(original_edge_type_[e])]++;
  }
  if (edge_types == 0) original_edge_type_.clear();
}

const std::vector<int64_t>& GraphHandle::split(const std::string& name) const {
  if (name == "train") return train_;
  if (name == "val") return val_;
  if (name == "test") return test_;
  throw UsageError("no split '" + name + "' (train, val or test)");
}

void GraphHandle::to_global(std::vector<int64_t>& ids, const std::string& what) const {
  const int64_t n = meta().num_nodes;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t id = ids[k];
    if (id < 0 || id >= n) {
      throw UsageError(what + ": node " + std::to_string(id) + " (at position " + std::to_string(k) +
                       ") is outside the graph's " + std::to_string(n) + " nodes");
    }
    ids[k] = global_of_[id];
  }
}

}  // namespace partita::python
