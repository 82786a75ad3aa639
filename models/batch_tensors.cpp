#include "models/batch_tensors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>

#include "base/error.h"

namespace partita {

namespace {

// A tensor that owns the vector's buffer: no copy of what the sampler produced. When the
// tensor goes, the buffer goes to `recycle` if given, else is freed.
// A vector that never allocated (data() null: a featureless batch's x, a relation without
// edges) gets an empty tensor of its own: libtorch 1.13 keeps a from_blob deleter in a
// unique_ptr on the data pointer, which never calls it for null, so the heap vector below
// would leak (LeakSanitizer: RgcnTest.FeaturelessInputIsOneHotByNodeId). Nothing to recycle.
template <typename T>
at::Tensor to_tensor(std::vector<T>&& values, std::function<void(std::vector<T>&&)> recycle = {}) {
  if (values.data() == nullptr) return at::empty({0}, at::dtype(c10::CppTypeToScalarType<T>::value));
  auto owned = std::make_unique<std::vector<T>>(std::move(values));
  std::vector<T>* buffer = owned.get();
  at::Tensor t = at::from_blob(
      buffer->data(), {static_cast<int64_t>(buffer->size())},
      [buffer, recycle = std::move(recycle)](void*) {
        if (recycle) recycle(std::move(*buffer));
        delete buffer;
      },
      at::dtype(c10::CppTypeToScalarType<T>::value));
  owned.release();  // the tensor's deleter frees it now
  return t;
}

// Positions [0, n) grouped by key (keys in [0, num_keys)), stably; ptr gets the group
// boundaries. A counting sort: O(n + num_keys).
std::vector<int64_t> group_by(const int64_t* key, int64_t n, int64_t num_keys,
                              std::vector<int64_t>& ptr) {
  ptr.assign(num_keys + 1, 0);
  for (int64_t i = 0; i < n; ++i) ++ptr[key[i] + 1];
  std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
  std::vector<int64_t> order(n);
  std::vector<int64_t> next(ptr.begin(), ptr.end() - 1);
  for (int64_t i = 0; i < n; ++i) order[next[key[i]]++] = i;
  return order;
}

void check_indices(const std::vector<int64_t>& v, int64_t n, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0 || v[i] >= n) {
      throw Error(std::string("mini-batch: ") + what + "[" + std::to_string(i) + "] = " +
                  std::to_string(v[i]) + " is outside the batch's " + std::to_string(n) +
                  " nodes");
    }
  }
}

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

bool any_negative(const std::vector<int64_t>& v) {
  return std::any_of(v.begin(), v.end(), [](int64_t x) { return x < 0; });
}

void validate(const MiniBatch& b) {
  const int64_t n = static_cast<int64_t>(b.node_ids.size());
  if (b.row.size() != b.col.size()) {
    throw Error("mini-batch: " + std::to_string(b.row.size()) + " edge sources but " +
                std::to_string(b.col.size()) + " destinations");
  }
  check_indices(b.row, n, "row");
  check_indices(b.col, n, "col");
  if (b.batch_size < 0 || b.batch_size > n) {
    throw Error("mini-batch: batch_size " + std::to_string(b.batch_size) + " is not within the " +
                std::to_string(n) + " nodes");
  }
  if (b.feature_dim < 0 || b.x.size() != static_cast<size_t>(n * b.feature_dim)) {
    throw Error("mini-batch: x holds " + std::to_string(b.x.size()) + " values, not " +
                std::to_string(n) + " nodes x " + std::to_string(b.feature_dim) + " features");
  }
  if (!b.y.empty() && b.y.size() != static_cast<size_t>(n) &&
      b.y.size() != static_cast<size_t>(b.batch_size)) {
    throw Error("mini-batch: y holds " + std::to_string(b.y.size()) +
                " labels, neither one per node (" + std::to_string(n) + ") nor one per seed (" +
                std::to_string(b.batch_size) + ")");
  }
  if (b.num_sampled_nodes.empty() && b.num_sampled_edges.empty()) return;
  const int64_t nodes = sum(b.num_sampled_nodes), edges = sum(b.num_sampled_edges);
  if (b.num_sampled_nodes.size() != b.num_sampled_edges.size() || nodes != n ||
      edges != static_cast<int64_t>(b.row.size()) || b.num_sampled_nodes[0] != b.batch_size ||
      any_negative(b.num_sampled_nodes) || any_negative(b.num_sampled_edges)) {
    throw Error("mini-batch: the per-hop counts (" + std::to_string(b.num_sampled_nodes.size()) +
                " hops of nodes summing to " + std::to_string(nodes) + ", " +
                std::to_string(b.num_sampled_edges.size()) + " of edges summing to " +
                std::to_string(edges) + ") do not match its " + std::to_string(n) + " nodes, " +
                std::to_string(b.row.size()) + " edges and " + std::to_string(b.batch_size) +
                " seeds");
  }
}

// hop[v] for every node, from the per-hop node counts.
std::vector<int64_t> node_hops(const std::vector<int64_t>& num_sampled_nodes, int64_t n) {
  std::vector<int64_t> hop(n);
  int64_t v = 0;
  for (size_t h = 0; h < num_sampled_nodes.size(); ++h) {
    for (int64_t i = 0; i < num_sampled_nodes[h]; ++i) hop[v++] = static_cast<int64_t>(h);
  }
  return hop;
}

bool is_hop_ordered(const std::vector<int64_t>& row, const std::vector<int64_t>& col,
                    const std::vector<int64_t>& hop) {
  for (size_t e = 0; e < row.size(); ++e) {
    if (hop[row[e]] > hop[col[e]] + 1) return false;
  }
  return true;
}

// One CSC per relation, each with its mean weights; the edges of a relation keep their
// batch order, so each relation's sums run in a fixed order.
void lay_out_relations(const MiniBatch& b, const HeteroLayout& hetero, GraphBatch& g) {
  const int64_t n = static_cast<int64_t>(b.node_ids.size());
  if (b.edge_types.size() != b.row.size()) {
    throw Error("mini-batch: " + std::to_string(b.edge_types.size()) + " edge types for " +
                std::to_string(b.row.size()) + " edges: a heterogeneous model needs the type of every edge");
  }
  if (hetero.node_type == nullptr) throw Error("mini-batch: a heterogeneous layout needs the graph's node types");
  const int r_count = hetero.num_relations;
  std::vector<std::vector<int64_t>> src(r_count), dst(r_count);
  for (size_t e = 0; e < b.row.size(); ++e) {
    const int32_t r = b.edge_types[e];
    if (r < 0 || r >= r_count) {
      throw Error("mini-batch: edge " + std::to_string(e) + " has edge type " + std::to_string(r) + ", the graph has " +
                  std::to_string(r_count));
    }
    src[r].push_back(b.row[e]);
    dst[r].push_back(b.col[e]);
  }
  // Relation by relation: make_csc's stable sort then groups each destination's in-edges by
  // relation, in batch order within one.
  std::vector<int64_t> all_src, all_dst;
  all_src.reserve(b.row.size());
  all_dst.reserve(b.row.size());
  for (int r = 0; r < r_count; ++r) {
    all_src.insert(all_src.end(), src[r].begin(), src[r].end());
    all_dst.insert(all_dst.end(), dst[r].begin(), dst[r].end());
  }
  for (int r = 0; r < r_count; ++r) {
    CscEdges csc = make_csc(n, std::move(src[r]), std::move(dst[r]));
    const int64_t* colptr = csc.colptr.data_ptr<int64_t>();
    std::vector<float> mean_weight(csc.num_edges());
    for (int64_t d = 0; d < n; ++d) {
      const float w = 1.0f / static_cast<float>(std::max<int64_t>(1, colptr[d + 1] - colptr[d]));
      std::fill(mean_weight.begin() + colptr[d], mean_weight.begin() + colptr[d + 1], w);
    }
    g.relations.push_back(std::move(csc));
    g.relation_mean_weight.push_back(to_tensor(std::move(mean_weight)));
  }
  g.typed_edges = make_csc(n, std::move(all_src), std::move(all_dst));
  std::vector<int64_t> relation(g.typed_edges.num_edges());
  std::vector<float> weight(g.typed_edges.num_edges());
  int64_t at = 0;
  for (int64_t d = 0; d < n; ++d) {
    for (int r = 0; r < r_count; ++r) {
      const int64_t* colptr = g.relations[r].colptr.data_ptr<int64_t>();
      const int64_t count = colptr[d + 1] - colptr[d];
      const float w = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
      for (int64_t k = 0; k < count; ++k, ++at) {
        relation[at] = r;
        weight[at] = w;
      }
    }
  }
  g.typed_edge_relation = to_tensor(std::move(relation));
  g.typed_edge_mean_weight = to_tensor(std::move(weight));
  const std::vector<int32_t>& types = *hetero.node_type;
  std::vector<int64_t> node_type(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = b.node_ids[i];
    if (id < 0 || id >= static_cast<int64_t>(types.size())) {
      throw Error("mini-batch: node id " + std::to_string(id) + " is outside the graph's " +
                  std::to_string(types.size()) + " typed nodes");
    }
    node_type[i] = types[id];
  }
  g.node_type = to_tensor(std::move(node_type));
}

template <typename Batch>
GraphBatch lay_out(Batch&& b, std::function<void(std::vector<float>&&)> recycle_x = {},
                   const HeteroLayout& hetero = {}) {
  validate(b);
  GraphBatch g;
  const int64_t n = static_cast<int64_t>(b.node_ids.size());
  g.node_ids = to_tensor(std::vector<int64_t>(b.node_ids));
  if (hetero.num_relations > 0) lay_out_relations(b, hetero, g);
  g.num_nodes = n;
  g.batch_size = b.batch_size;
  g.x = to_tensor(std::vector<float>(std::forward<Batch>(b).x), std::move(recycle_x)).view({n, b.feature_dim});
  if (!b.y.empty()) g.y = to_tensor(std::vector<int64_t>(b.y));
  g.num_sampled_nodes = b.num_sampled_nodes;
  g.num_sampled_edges = b.num_sampled_edges;
  if (!g.num_sampled_nodes.empty()) {
    g.hop_ordered = is_hop_ordered(b.row, b.col, node_hops(g.num_sampled_nodes, n));
  }

  g.edges = make_csc(n, std::forward<Batch>(b).row, std::forward<Batch>(b).col);
  const int64_t* colptr = g.edges.colptr.data_ptr<int64_t>();
  std::vector<float> mean_weight(g.edges.num_edges());
  for (int64_t d = 0; d < n; ++d) {
    const float w = 1.0f / static_cast<float>(std::max<int64_t>(1, colptr[d + 1] - colptr[d]));
    std::fill(mean_weight.begin() + colptr[d], mean_weight.begin() + colptr[d + 1], w);
  }
  g.mean_weight = to_tensor(std::move(mean_weight));

  // Self loops: drop the sampled ones, add one per node, first in each destination's list.
  const int64_t* src = g.edges.src.data_ptr<int64_t>();
  std::vector<int64_t> loop_src, loop_dst;
  loop_src.reserve(g.edges.num_edges() + n);
  loop_dst.reserve(g.edges.num_edges() + n);
  std::vector<float> inv_sqrt_degree(n);
  for (int64_t d = 0; d < n; ++d) {
    const size_t first = loop_src.size();
    loop_src.push_back(d);
    loop_dst.push_back(d);
    for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
      if (src[e] == d) continue;
      loop_src.push_back(src[e]);
      loop_dst.push_back(d);
    }
    inv_sqrt_degree[d] = 1.0f / std::sqrt(static_cast<float>(loop_src.size() - first));
  }
  std::vector<float> gcn_weight(loop_src.size());
  for (size_t e = 0; e < loop_src.size(); ++e) {
    gcn_weight[e] = inv_sqrt_degree[loop_src[e]] * inv_sqrt_degree[loop_dst[e]];
  }
  g.edges_with_self_loops = make_csc(n, std::move(loop_src), std::move(loop_dst));
  g.gcn_weight = to_tensor(std::move(gcn_weight));
  return g;
}

}  // namespace

int64_t CscEdges::edges_before(int64_t num_dst) const {
  return colptr.data_ptr<int64_t>()[num_dst];
}

CscEdges make_csc(int64_t num_nodes, std::vector<int64_t> src, std::vector<int64_t> dst) {
  const int64_t num_edges = static_cast<int64_t>(src.size());
  CscEdges csc;
  csc.num_nodes = num_nodes;
  std::vector<int64_t> colptr, sorted_src, sorted_dst;
  // Sampled batches come sorted (each hop appends the edges of its frontier in order), so
  // sorting is usually a copy.
  if (std::is_sorted(dst.begin(), dst.end())) {
    colptr.assign(num_nodes + 1, 0);
    for (int64_t d : dst) ++colptr[d + 1];
    std::partial_sum(colptr.begin(), colptr.end(), colptr.begin());
    sorted_src = std::move(src);
    sorted_dst = std::move(dst);
  } else {
    std::vector<int64_t> order = group_by(dst.data(), num_edges, num_nodes, colptr);
    sorted_src.resize(num_edges);
    sorted_dst.resize(num_edges);
    for (int64_t e = 0; e < num_edges; ++e) {
      sorted_src[e] = src[order[e]];
      sorted_dst[e] = dst[order[e]];
    }
  }
  std::vector<int64_t> rowptr;
  std::vector<int64_t> out_edges = group_by(sorted_src.data(), num_edges, num_nodes, rowptr);
  csc.colptr = to_tensor(std::move(colptr));
  csc.src = to_tensor(std::move(sorted_src));
  csc.dst = to_tensor(std::move(sorted_dst));
  csc.rowptr = to_tensor(std::move(rowptr));
  csc.out_edges = to_tensor(std::move(out_edges));
  return csc;
}

int64_t GraphBatch::layer_rows(int layer, int num_layers, bool trim) const {
  if (!trim || !hop_ordered || num_sampled_nodes.empty()) return num_nodes;
  // Layer `layer` feeds num_layers - 1 - layer more layers, so its output is needed for
  // the nodes that many hops from the seeds.
  const int64_t hops = std::min<int64_t>(num_layers - 1 - layer,
                                         static_cast<int64_t>(num_sampled_nodes.size()) - 1);
  return std::accumulate(num_sampled_nodes.begin(), num_sampled_nodes.begin() + hops + 1, int64_t{0});
}

GraphBatch to_graph_batch(MiniBatch&& batch, std::function<void(std::vector<float>&&)> recycle_x,
                          const HeteroLayout& hetero) {
  return lay_out(std::move(batch), std::move(recycle_x), hetero);
}
GraphBatch to_graph_batch(const MiniBatch& batch, const HeteroLayout& hetero) { return lay_out(batch, {}, hetero); }

}  // namespace partita
