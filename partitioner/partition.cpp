#include "partitioner/partition.h"

#include <metis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "base/parallel.h"
#include "base/random.h"

namespace partita {

static_assert(sizeof(idx_t) == sizeof(int32_t), "Debian's METIS uses 32-bit idx_t");

PartitionMethod parse_partition_method(const std::string& name) {
  if (name == "metis") return PartitionMethod::kMetis;
  if (name == "random") return PartitionMethod::kRandom;
  throw UsageError("--method: unknown partitioning method '" + name + "' (use metis or random)");
}

std::string partition_method_name(PartitionMethod method) {
  return method == PartitionMethod::kMetis ? "metis" : "random";
}

namespace {

void check_options(const Dataset& dataset, const PartitionOptions& options) {
  if (options.num_parts < 1) throw UsageError("--parts must be at least 1");
  if (options.num_parts > (1 << 16)) throw UsageError("--parts must be at most 65536");
  if (options.num_parts > dataset.num_nodes) {
    // Depends on the data, not only on the flag: a runtime error.
    throw Error("--parts: cannot cut " + std::to_string(dataset.num_nodes) + " nodes into " +
                     std::to_string(options.num_parts) + " partitions");
  }
}

std::vector<int32_t> random_partitions(const Dataset& dataset, const PartitionOptions& options) {
  std::vector<int64_t> order(dataset.num_nodes);
  std::iota(order.begin(), order.end(), 0);
  Rng rng(mix64(options.seed, 0x5041525449544941ull));
  shuffle(order, rng);
  std::vector<int32_t> part(dataset.num_nodes);
  const int64_t n = dataset.num_nodes;
  for (int p = 0; p < options.num_parts; ++p) {
    for (int64_t i = n * p / options.num_parts; i < n * (p + 1) / options.num_parts; ++i) {
      part[order[i]] = p;
    }
  }
  return part;
}

// Vertex weights, one column per constraint: one per node type that has nodes (when there
// are two or more), else a node count, plus training nodes. A constant column (every node
// a training node) or an empty one (a type without nodes) balances nothing and can make
// METIS fail, so neither is added.
void add_vertex_weights(const Dataset& dataset, const PartitionOptions& options, MetisGraph& g) {
  std::vector<std::vector<int32_t>> columns;
  std::vector<int64_t> nodes_of_type(dataset.node_type_names.size(), 0);
  for (int32_t t : dataset.node_type) ++nodes_of_type[t];
  if (std::count_if(nodes_of_type.begin(), nodes_of_type.end(), [](int64_t c) { return c > 0; }) > 1) {
    for (size_t t = 0; t < nodes_of_type.size(); ++t) {
      if (nodes_of_type[t] == 0) continue;
      std::vector<int32_t> column(dataset.num_nodes);
      for (int64_t v = 0; v < dataset.num_nodes; ++v) {
        column[v] = dataset.node_type[v] == static_cast<int32_t>(t);
      }
      columns.push_back(std::move(column));
    }
  }
  bool has_train = !dataset.train_idx.empty() &&
                   static_cast<int64_t>(dataset.train_idx.size()) < dataset.num_nodes;
  if (options.balance_train && has_train) {
    if (columns.empty()) columns.emplace_back(dataset.num_nodes, 1);
    std::vector<int32_t> train(dataset.num_nodes, 0);
    for (int64_t v : dataset.train_idx) train[v] = 1;
    columns.push_back(std::move(train));
  }
  if (columns.empty()) return;
  g.ncon = static_cast<int32_t>(columns.size());
  g.vwgt.resize(dataset.num_nodes * columns.size());
  for (int64_t v = 0; v < dataset.num_nodes; ++v) {
    for (size_t c = 0; c < columns.size(); ++c) g.vwgt[v * columns.size() + c] = columns[c][v];
  }
}

}  // namespace

MetisGraph build_metis_graph(const Dataset& dataset, const PartitionOptions& options) {
  const int64_t n = dataset.num_nodes;
  const int64_t m = dataset.num_edges();
  const auto& src = dataset.edges.src;
  const auto& dst = dataset.edges.dst;
  if (n >= std::numeric_limits<int32_t>::max()) {
    throw Error("METIS (32-bit idx_t) cannot partition " + std::to_string(n) + " nodes");
  }

  // Each directed edge u->v contributes v to u's list and u to v's; lists are then sorted
  // and deduplicated in place, which also merges the two directions of undirected edges.
  std::vector<int64_t> degree(n + 1, 0);
  for (int64_t e = 0; e < m; ++e) {
    if (src[e] == dst[e]) continue;
    ++degree[src[e]];
    ++degree[dst[e]];
  }
  std::vector<int64_t> start(n + 1, 0);
  for (int64_t v = 0; v < n; ++v) start[v + 1] = start[v] + degree[v];
  if (start[n] >= std::numeric_limits<int32_t>::max()) {
    throw Error("METIS (32-bit idx_t) cannot partition a graph with " + std::to_string(start[n]) +
                " adjacency entries");
  }
  MetisGraph g;
  g.adjncy.resize(start[n]);
  std::vector<int64_t>& cursor = degree;  // reused as the fill position of each list
  std::copy(start.begin(), start.end(), cursor.begin());
  for (int64_t e = 0; e < m; ++e) {
    if (src[e] == dst[e]) continue;
    g.adjncy[cursor[src[e]]++] = static_cast<int32_t>(dst[e]);
    g.adjncy[cursor[dst[e]]++] = static_cast<int32_t>(src[e]);
  }
  // Deduplicate every list in place with a last-seen marker per node (O(degree), no sort:
  // METIS does not need sorted lists). Slices are cut by adjacency entries, not nodes, so
  // a power-law hub does not leave one thread with all the work.
  std::vector<int64_t> unique_count(n, 0);
  // Each thread holds a marker per node (4 bytes * N): a few threads saturate memory anyway.
  int threads = std::min(resolve_threads(options.threads), 4);
  std::vector<int64_t> slice_begin(threads + 1, n);
  for (int t = 0, v = 0; t <= threads; ++t) {
    int64_t target = start[n] * t / threads;
    while (v < n && start[v] < target) ++v;
    slice_begin[t] = t == threads ? n : v;
  }
  parallel_for(threads, threads, [&](int64_t t0, int64_t t1) {
    std::vector<int32_t> last_seen_by(n, -1);
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t v = slice_begin[t]; v < slice_begin[t + 1]; ++v) {
        int64_t kept = start[v];
        for (int64_t k = start[v]; k < start[v + 1]; ++k) {
          int32_t u = g.adjncy[k];
          if (last_seen_by[u] == v) continue;
          last_seen_by[u] = static_cast<int32_t>(v);
          g.adjncy[kept++] = u;
        }
        unique_count[v] = kept - start[v];
      }
    }
  });
  // Compact: lists only move left.
  g.xadj.resize(n + 1);
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    g.xadj[v] = static_cast<int32_t>(out);
    std::copy(g.adjncy.begin() + start[v], g.adjncy.begin() + start[v] + unique_count[v],
              g.adjncy.begin() + out);
    out += unique_count[v];
  }
  g.xadj[n] = static_cast<int32_t>(out);
  g.adjncy.resize(out);
  g.adjncy.shrink_to_fit();
  add_vertex_weights(dataset, options, g);
  return g;
}

std::vector<int32_t> run_metis(MetisGraph& g, int num_parts, uint64_t seed) {
  idx_t nvtxs = static_cast<idx_t>(g.xadj.size() - 1);
  idx_t ncon = g.ncon;
  idx_t nparts = num_parts;
  idx_t objval = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  std::vector<idx_t> part(nvtxs, 0);
  int status = METIS_PartGraphKway(&nvtxs, &ncon, g.xadj.data(), g.adjncy.data(),
                                   g.vwgt.empty() ? nullptr : g.vwgt.data(), nullptr, nullptr,
                                   &nparts, nullptr, nullptr, options, &objval, part.data());
  switch (status) {
    case METIS_OK: break;
    case METIS_ERROR_INPUT: throw Error("METIS rejected the graph as invalid input");
    case METIS_ERROR_MEMORY: throw Error("METIS ran out of memory");
    default: throw Error("METIS failed with status " + std::to_string(status));
  }
  spdlog::debug("METIS: {} parts, edge cut {} (undirected)", num_parts, objval);
  return part;
}

std::vector<int32_t> assign_partitions(const Dataset& dataset, const PartitionOptions& options) {
  check_options(dataset, options);
  if (options.num_parts == 1) return std::vector<int32_t>(dataset.num_nodes, 0);
  if (options.method == PartitionMethod::kRandom) return random_partitions(dataset, options);
  MetisGraph graph = build_metis_graph(dataset, options);
  spdlog::info("METIS: {} nodes, {} undirected edges, {} constraint(s), {} parts",
               graph.xadj.size() - 1, graph.adjncy.size() / 2, graph.ncon, options.num_parts);
  return run_metis(graph, options.num_parts, options.seed);
}

}  // namespace partita
