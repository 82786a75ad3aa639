#include "partitioner/dataset.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace partita {

void EdgeList::reserve(size_t n) {
  src.reserve(n);
  dst.reserve(n);
}

namespace {

class Validator {
 public:
  explicit Validator(const Dataset& d) : d_(d) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw Error("dataset '" + d_.name + "': " + message);
  }

  void expect_size(const std::string& field, size_t actual, int64_t expected,
                   const std::string& what) const {
    if (static_cast<int64_t>(actual) != expected) {
      fail(field + " has " + std::to_string(actual) + " entries, expected " + what + " = " +
           std::to_string(expected));
    }
  }

  void check_edges(const std::string& field, const EdgeList& e) const {
    if (e.src.size() != e.dst.size()) fail(field + ": src and dst differ in length");
    if (!e.type.empty()) expect_size(field + ".type", e.type.size(), e.size(), "number of edges");
    for (int64_t i = 0; i < e.size(); ++i) {
      if (e.src[i] < 0 || e.src[i] >= d_.num_nodes || e.dst[i] < 0 || e.dst[i] >= d_.num_nodes) {
        fail(field + " edge " + std::to_string(i) + " (" + std::to_string(e.src[i]) + " -> " +
             std::to_string(e.dst[i]) + ") has a node id outside [0, " +
             std::to_string(d_.num_nodes) + ")");
      }
      if (!e.type.empty() &&
          (e.type[i] < 0 || e.type[i] >= static_cast<int32_t>(d_.edge_types.size()))) {
        fail(field + " edge " + std::to_string(i) + " has edge type " + std::to_string(e.type[i]) +
             ", but there are " + std::to_string(d_.edge_types.size()) + " edge types");
      }
    }
  }

  // An edge type joins given node types, and node_type must agree for each edge of it:
  // readers take the two from different files, and a mismatch would make a relational
  // model apply one relation's weights to another's nodes. Runs after the ids, the types
  // and the type names are checked.
  void check_endpoint_types(const std::string& field, const EdgeList& e) const {
    if (d_.node_type.empty() || e.type.empty()) return;
    std::vector<std::pair<int32_t, int32_t>> ends;
    for (const EdgeType& t : d_.edge_types) ends.emplace_back(type_index(t.src_type), type_index(t.dst_type));
    for (int64_t i = 0; i < e.size(); ++i) {
      check_endpoint(field, e, i, "src", e.src[i], ends[e.type[i]].first);
      check_endpoint(field, e, i, "dst", e.dst[i], ends[e.type[i]].second);
    }
  }

  void check_split(const std::string& field, const std::vector<int64_t>& idx) const {
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= d_.num_nodes) {
        fail(field + "[" + std::to_string(i) + "] = " + std::to_string(idx[i]) +
             " is outside [0, " + std::to_string(d_.num_nodes) + ")");
      }
      if (i > 0 && idx[i] <= idx[i - 1]) fail(field + " is not sorted and unique");
    }
  }

 private:
  int32_t type_index(const std::string& name) const {
    const auto& names = d_.node_type_names;
    return static_cast<int32_t>(std::find(names.begin(), names.end(), name) - names.begin());
  }

  void check_endpoint(const std::string& field, const EdgeList& e, int64_t i, const char* side,
                      int64_t node, int32_t expected) const {
    if (d_.node_type[node] == expected) return;
    const EdgeType& t = d_.edge_types[e.type[i]];
    fail(field + " edge " + std::to_string(i) + " has edge type " + std::to_string(e.type[i]) + " (" +
         t.src_type + ", " + t.relation + ", " + t.dst_type + "), but its " + side + " node " +
         std::to_string(node) + " has node type '" + d_.node_type_names[d_.node_type[node]] + "'");
  }

  const Dataset& d_;
};

}  // namespace

void Dataset::validate() const {
  Validator v(*this);
  if (num_nodes <= 0) v.fail("the graph is empty (no nodes)");
  v.check_edges("edges", edges);
  v.check_edges("val_edges", val_edges);
  v.check_edges("test_edges", test_edges);
  if (feature_dim < 0) v.fail("feature_dim is negative");
  v.expect_size("x", x.size(), num_nodes * feature_dim, "num_nodes * feature_dim");
  if (!node_type_feature_dim.empty()) {
    v.expect_size("node_type_feature_dim", node_type_feature_dim.size(),
                  static_cast<int64_t>(node_type_names.size()), "the number of node types");
    for (size_t t = 0; t < node_type_feature_dim.size(); ++t) {
      if (node_type_feature_dim[t] < 0 || node_type_feature_dim[t] > feature_dim) {
        v.fail("node_type_feature_dim[" + std::to_string(t) + "] = " + std::to_string(node_type_feature_dim[t]) +
               " is outside [0, feature_dim = " + std::to_string(feature_dim) + "]");
      }
    }
  }
  if (!y.empty()) {
    v.expect_size("y", y.size(), num_nodes, "num_nodes");
    for (size_t i = 0; i < y.size(); ++i) {
      if (y[i] < -1 || y[i] >= num_classes) {
        v.fail("y[" + std::to_string(i) + "] = " + std::to_string(y[i]) + " is outside [-1, " +
               std::to_string(num_classes) + ")");
      }
    }
  }
  if (edge_feature_dim < 0) v.fail("edge_feature_dim is negative");
  v.expect_size("edge_attr", edge_attr.size(), num_edges() * edge_feature_dim,
                "num_edges * edge_feature_dim");
  if (!val_edge_attr.empty() || !test_edge_attr.empty()) {
    v.expect_size("val_edge_attr", val_edge_attr.size(), val_edges.size() * edge_feature_dim,
                  "val_edges * edge_feature_dim");
    v.expect_size("test_edge_attr", test_edge_attr.size(), test_edges.size() * edge_feature_dim,
                  "test_edges * edge_feature_dim");
  }
  if (!val_edge_time.empty() || !test_edge_time.empty()) {
    v.expect_size("val_edge_time", val_edge_time.size(), val_edges.size(), "val_edges");
    v.expect_size("test_edge_time", test_edge_time.size(), test_edges.size(), "test_edges");
  }
  if (!node_time.empty()) v.expect_size("node_time", node_time.size(), num_nodes, "num_nodes");
  if (!edge_time.empty()) v.expect_size("edge_time", edge_time.size(), num_edges(), "num_edges");
  if (!node_type_names.empty()) {
    v.expect_size("node_type", node_type.size(), num_nodes, "num_nodes");
    int32_t types = static_cast<int32_t>(node_type_names.size());
    for (size_t i = 0; i < node_type.size(); ++i) {
      if (node_type[i] < 0 || node_type[i] >= types) {
        v.fail("node_type[" + std::to_string(i) + "] = " + std::to_string(node_type[i]) +
               " is not one of the " + std::to_string(types) + " node types");
      }
    }
  } else if (!node_type.empty()) {
    v.fail("node_type is set but node_type_names is empty");
  }
  if (!edge_types.empty() && edges.type.empty() && num_edges() > 0) {
    v.fail("edge_types are declared but edges carry no type");
  }
  // The partition folder of a typed graph has val/test_edge_type.bin beside every split.
  for (const auto& [field, held_out] : {std::make_pair("val_edges", &val_edges), std::make_pair("test_edges", &test_edges)}) {
    if (!edge_types.empty() && held_out->type.empty() && held_out->size() > 0) {
      v.fail(std::string("edge_types are declared but ") + field + " carry no type");
    }
  }
  for (const auto& t : edge_types) {
    if (node_type_names.empty()) break;
    auto known = [&](const std::string& n) {
      return std::find(node_type_names.begin(), node_type_names.end(), n) != node_type_names.end();
    };
    if (!known(t.src_type) || !known(t.dst_type)) {
      v.fail("edge type (" + t.src_type + ", " + t.relation + ", " + t.dst_type +
             ") names an unknown node type");
    }
  }
  if (!reverse_edge_type.empty()) {
    v.expect_size("reverse_edge_type", reverse_edge_type.size(), static_cast<int64_t>(edge_types.size()),
                  "the number of edge types");
    const int32_t types = static_cast<int32_t>(edge_types.size());
    for (int32_t t = 0; t < static_cast<int32_t>(reverse_edge_type.size()); ++t) {
      const int32_t r = reverse_edge_type[t];
      if (r == -1) continue;
      if (r < 0 || r >= types || reverse_edge_type[r] != t || edge_types[r].src_type != edge_types[t].dst_type ||
          edge_types[r].dst_type != edge_types[t].src_type) {
        v.fail("reverse_edge_type[" + std::to_string(t) + "] = " + std::to_string(r) +
               " is not an edge type that mirrors it (and names it back)");
      }
    }
  }
  v.check_endpoint_types("edges", edges);
  v.check_endpoint_types("val_edges", val_edges);
  v.check_endpoint_types("test_edges", test_edges);
  v.check_split("train_idx", train_idx);
  v.check_split("val_idx", val_idx);
  v.check_split("test_idx", test_idx);
  if (!node_names.empty()) v.expect_size("node_names", node_names.size(), num_nodes, "num_nodes");
}

}  // namespace partita
