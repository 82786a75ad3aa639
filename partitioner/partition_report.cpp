#include "partitioner/partition_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "partitioner/meta_json.h"

namespace partita {

namespace {

template <typename Field>
double max_over_mean(const PartitionMeta& meta, Field field) {
  double total = 0, largest = 0;
  for (const auto& p : meta.parts) {
    double v = static_cast<double>(field(p));
    total += v;
    largest = std::max(largest, v);
  }
  if (total == 0) return 1.0;
  return largest / (total / static_cast<double>(meta.parts.size()));
}

std::string shape_text(int64_t rows, int64_t cols) {
  return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace

BalanceFigures balance_of(const PartitionMeta& meta) {
  return {max_over_mean(meta, [](const PartStats& p) { return p.num_nodes; }),
          max_over_mean(meta, [](const PartStats& p) { return p.num_edges; }),
          max_over_mean(meta, [](const PartStats& p) { return p.num_train; })};
}

std::string format_report_table(const PartitionMeta& meta) {
  std::ostringstream out;
  char line[256];
  out << "graph " << meta.graph_name << ": " << meta.num_nodes << " nodes, " << meta.num_edges
      << " directed edges, " << meta.num_parts << " parts (" << meta.method << ", seed "
      << meta.seed << ")" << (meta.is_hetero ? ", heterogeneous" : "") << "\n\n";
  std::snprintf(line, sizeof(line), "%5s %12s %12s %10s %10s %10s %10s %12s\n", "part", "nodes",
                "edges", "train", "val", "test", "halo", "cut edges");
  out << line;
  PartStats total;
  for (size_t p = 0; p < meta.parts.size(); ++p) {
    const PartStats& s = meta.parts[p];
    std::snprintf(line, sizeof(line), "%5zu %12lld %12lld %10lld %10lld %10lld %10lld %12lld\n", p,
                  (long long)s.num_nodes, (long long)s.num_edges, (long long)s.num_train,
                  (long long)s.num_val, (long long)s.num_test, (long long)s.num_halo,
                  (long long)s.num_cut_edges);
    out << line;
    total.num_nodes += s.num_nodes;
    total.num_edges += s.num_edges;
    total.num_train += s.num_train;
    total.num_val += s.num_val;
    total.num_test += s.num_test;
    total.num_halo += s.num_halo;
    total.num_cut_edges += s.num_cut_edges;
  }
  std::snprintf(line, sizeof(line), "%5s %12lld %12lld %10lld %10lld %10lld %10lld %12lld\n",
                "total", (long long)total.num_nodes, (long long)total.num_edges,
                (long long)total.num_train, (long long)total.num_val, (long long)total.num_test,
                (long long)total.num_halo, (long long)total.num_cut_edges);
  out << line << "\n";
  double cut_fraction = meta.num_edges > 0 ? static_cast<double>(total.num_cut_edges) /
                                                 static_cast<double>(meta.num_edges)
                                           : 0.0;
  BalanceFigures b = balance_of(meta);
  std::snprintf(line, sizeof(line), "edge cut: %lld of %lld directed edges (%.2f%%)\n",
                (long long)total.num_cut_edges, (long long)meta.num_edges, 100 * cut_fraction);
  out << line;
  std::snprintf(line, sizeof(line), "balance (largest / mean): nodes %.3f, edges %.3f, train %.3f\n",
                b.nodes, b.edges, b.train);
  out << line;
  out << "node features: " << (meta.feature_dim > 0 ? "x float32 " + shape_text(meta.num_nodes, meta.feature_dim) : "none");
  for (size_t i = 0; i < meta.transforms.size(); ++i) out << (i == 0 ? ", transformed by " : ", then ") << meta.transforms[i];
  out << "\n";
  out << "edge features: "
      << (meta.edge_feature_dim > 0 ? "edge_attr float32 " + shape_text(meta.num_edges, meta.edge_feature_dim) : "none")
      << "\n";
  out << "labels: " << (meta.has_labels ? "y int64, " + std::to_string(meta.num_classes) + " classes" : "none") << "\n";
  if (meta.has_edge_splits) {
    int64_t val = 0, test = 0;
    for (const auto& p : meta.parts) {
      val += p.num_val_edges;
      test += p.num_test_edges;
    }
    out << "held-out edges: " << val << " validation, " << test << " test\n";
  }
  if (meta.is_hetero) {
    out << "node types: " << meta.node_types.size() << ", edge types: " << meta.edge_types.size() << "\n";
  }
  return out.str();
}

std::string format_report_json(const PartitionMeta& meta) {
  nlohmann::json j;
  j["graph_name"] = meta.graph_name;
  j["num_nodes"] = meta.num_nodes;
  j["num_edges"] = meta.num_edges;
  j["num_parts"] = meta.num_parts;
  j["method"] = meta.method;
  j["seed"] = meta.seed;
  j["is_hetero"] = meta.is_hetero;
  j["edge_cut"] = meta.total_cut_edges();
  j["edge_cut_fraction"] = meta.num_edges > 0 ? static_cast<double>(meta.total_cut_edges()) /
                                                    static_cast<double>(meta.num_edges)
                                              : 0.0;
  BalanceFigures b = balance_of(meta);
  j["balance"] = {{"nodes", b.nodes}, {"edges", b.edges}, {"train", b.train}};
  add_feature_shapes(meta, j);
  j["transforms"] = meta.transforms;
  j["num_classes"] = meta.num_classes;
  j["node_types"] = meta.node_types;
  j["num_edge_types"] = meta.edge_types.size();
  j["parts"] = nlohmann::json::array();
  for (const auto& s : meta.parts) j["parts"].push_back(part_stats_json(s));
  return j.dump(2) + "\n";
}

}  // namespace partita
