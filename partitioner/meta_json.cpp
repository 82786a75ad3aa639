#include "partitioner/meta_json.h"

#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file_util.h"

namespace partita {

using nlohmann::json;

PartitionMeta describe_dataset(const Dataset& d) {
  PartitionMeta meta;
  meta.graph_name = d.name;
  meta.num_nodes = d.num_nodes;
  meta.num_edges = d.num_edges();
  meta.is_hetero = d.is_hetero();
  meta.node_types = d.node_type_names;
  meta.edge_types = d.edge_types;
  meta.feature_dim = d.feature_dim;
  meta.node_type_feature_dim = d.node_type_feature_dim;
  meta.transforms = d.transforms;
  meta.edge_feature_dim = d.edge_feature_dim;
  meta.has_labels = !d.y.empty();
  meta.num_classes = d.num_classes;
  meta.has_node_time = !d.node_time.empty();
  meta.has_edge_time = !d.edge_time.empty();
  meta.has_edge_splits = d.val_edges.size() > 0 || d.test_edges.size() > 0;
  meta.has_edge_split_attr = meta.has_edge_splits && (!d.val_edge_attr.empty() || !d.test_edge_attr.empty());
  meta.has_edge_split_time = meta.has_edge_splits && (!d.val_edge_time.empty() || !d.test_edge_time.empty());
  meta.held_out_in_graph = meta.has_edge_splits && d.held_out_in_graph;
  return meta;
}

void add_feature_shapes(const PartitionMeta& meta, json& j) {
  j["node_features"] = json::object();
  if (meta.feature_dim > 0) {
    j["node_features"]["x"] = {{"dtype", "float32"}, {"shape", {meta.num_nodes, meta.feature_dim}}};
    if (!meta.node_type_feature_dim.empty()) j["node_features"]["x"]["type_widths"] = meta.node_type_feature_dim;
  }
  j["edge_features"] = json::object();
  if (meta.edge_feature_dim > 0) {
    j["edge_features"]["edge_attr"] = {{"dtype", "float32"},
                                       {"shape", {meta.num_edges, meta.edge_feature_dim}}};
  }
}

json part_stats_json(const PartStats& p) {
  return {{"num_nodes", p.num_nodes},         {"num_edges", p.num_edges},
          {"num_train", p.num_train},         {"num_val", p.num_val},
          {"num_test", p.num_test},           {"num_halo", p.num_halo},
          {"num_cut_edges", p.num_cut_edges}, {"num_val_edges", p.num_val_edges},
          {"num_test_edges", p.num_test_edges}};
}

int64_t PartitionMeta::total_cut_edges() const {
  int64_t cut = 0;
  for (const auto& p : parts) cut += p.num_cut_edges;
  return cut;
}

void write_meta_json(const PartitionMeta& meta, const std::string& path) {
  json j;
  j["format"] = "partita-partitions";
  j["format_version"] = meta.format_version;
  j["graph_name"] = meta.graph_name;
  j["num_parts"] = meta.num_parts;
  j["num_nodes"] = meta.num_nodes;
  j["num_edges"] = meta.num_edges;
  j["is_hetero"] = meta.is_hetero;
  j["node_types"] = meta.node_types;
  j["edge_types"] = json::array();
  for (const auto& t : meta.edge_types) j["edge_types"].push_back({t.src_type, t.relation, t.dst_type});
  add_feature_shapes(meta, j);
  j["transforms"] = meta.transforms;
  j["labels"] = meta.has_labels ? json{{"y", {{"dtype", "int64"}, {"num_classes", meta.num_classes}}}}
                                : json::object();
  j["has_node_time"] = meta.has_node_time;
  j["has_edge_time"] = meta.has_edge_time;
  j["has_edge_splits"] = meta.has_edge_splits;
  j["has_edge_split_attr"] = meta.has_edge_split_attr;
  j["has_edge_split_time"] = meta.has_edge_split_time;
  j["held_out_in_graph"] = meta.held_out_in_graph;
  j["partition_method"] = meta.method;
  j["seed"] = meta.seed;
  j["partition_book"] = meta.partition_book;
  j["parts"] = json::array();
  for (const auto& p : meta.parts) j["parts"].push_back(part_stats_json(p));
  write_file_atomically(path, j.dump(2) + "\n");
}

namespace {

// Typed field access whose errors name the file and the field.
class MetaReader {
 public:
  MetaReader(const std::string& path, const json& j) : path_(path), j_(j) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw file_error(path_, "field '" + field + "': " + problem);
  }

  const json& field(const json& object, const std::string& name, const std::string& where) const {
    if (!object.is_object() || !object.contains(name)) fail(where + name, "missing");
    return object.at(name);
  }

  int64_t integer(const json& object, const std::string& name, int64_t min,
                  const std::string& where = "",
                  int64_t max = std::numeric_limits<int64_t>::max() / 2) const {
    return integer_value(field(object, name, where), where + name, min, max);
  }

  // `v` as an integer in [min, max]. Only JSON integers: a float (4.5e53) converted to an
  // integer would be undefined behaviour, not an error.
  int64_t integer_value(const json& v, const std::string& name, int64_t min,
                        int64_t max = std::numeric_limits<int64_t>::max() / 2) const {
    if (!v.is_number_integer()) fail(name, "expected an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)) {
      fail(name, "must be at most " + std::to_string(max));
    }
    int64_t x = v.get<int64_t>();
    if (x < min) fail(name, "must be at least " + std::to_string(min));
    if (x > max) fail(name, "must be at most " + std::to_string(max));
    return x;
  }

  // The columns of an attribute's shape [rows, columns].
  int64_t columns(const json& attribute, const std::string& where) const {
    const json& shape = field(attribute, "shape", where);
    if (!shape.is_array() || shape.size() != 2) fail(where + "shape", "expected [rows, columns]");
    return integer_value(shape[1], where + "shape[1]", 0);
  }

  uint64_t unsigned_integer(const std::string& name) const {
    const json& v = field(j_, name, "");
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
      fail(name, "expected an integer from 0 to 2^64 - 1");
    }
    return v.get<uint64_t>();
  }

  bool boolean(const std::string& name) const {
    const json& v = field(j_, name, "");
    if (!v.is_boolean()) fail(name, "expected true or false");
    return v.get<bool>();
  }

  std::string string(const std::string& name) const {
    const json& v = field(j_, name, "");
    if (!v.is_string()) fail(name, "expected a string");
    return v.get<std::string>();
  }

 private:
  std::string path_;
  const json& j_;
};

// The JSON object in the file at `path`; a file that cannot be read, invalid JSON or another
// JSON value is a file_error.
json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw file_error(path, "cannot open (is this a partition folder?)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw file_error(path, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw file_error(path, "expected a JSON object");
  return j;
}

// The format and its version (this build's), the graph's name, size, part count and whether
// it is heterogeneous.
void read_header(const MetaReader& r, const json& j, PartitionMeta& meta) {
  if (r.string("format") != "partita-partitions") r.fail("format", "not 'partita-partitions'");
  meta.format_version = static_cast<int>(r.integer(j, "format_version", 1, "", 1 << 20));
  if (meta.format_version != kPartitionFormatVersion) {
    r.fail("format_version", "version " + std::to_string(meta.format_version) +
                                 " is not supported (this build reads version " +
                                 std::to_string(kPartitionFormatVersion) + ")");
  }
  meta.graph_name = r.string("graph_name");
  meta.num_parts = static_cast<int>(r.integer(j, "num_parts", 1, "", kMaxParts));
  meta.num_nodes = r.integer(j, "num_nodes", 1);
  meta.num_edges = r.integer(j, "num_edges", 0);
  meta.is_hetero = r.boolean("is_hetero");
}

// The node type names and the edge types [src_type, relation, dst_type].
void read_types(const MetaReader& r, const json& j, PartitionMeta& meta) {
  const json& node_types = r.field(j, "node_types", "");
  if (!node_types.is_array()) r.fail("node_types", "expected an array of strings");
  for (const auto& t : node_types) {
    if (!t.is_string()) r.fail("node_types", "expected an array of strings");
    meta.node_types.push_back(t.get<std::string>());
  }
  const json& edge_types = r.field(j, "edge_types", "");
  if (!edge_types.is_array()) r.fail("edge_types", "expected an array");
  for (const auto& t : edge_types) {
    if (!t.is_array() || t.size() != 3 || !t[0].is_string() || !t[1].is_string() ||
        !t[2].is_string()) {
      r.fail("edge_types", "each edge type must be [src_type, relation, dst_type]");
    }
    meta.edge_types.push_back({t[0].get<std::string>(), t[1].get<std::string>(), t[2].get<std::string>()});
  }
}

// The node and edge feature widths, the transforms applied to the features, and the labels.
void read_features(const MetaReader& r, const json& j, PartitionMeta& meta) {
  const json& node_features = r.field(j, "node_features", "");
  if (node_features.contains("x")) {
    meta.feature_dim = r.columns(node_features["x"], "node_features.x.");
    // Absent where every node type uses every column.
    if (node_features["x"].contains("type_widths")) {
      const json& widths = node_features["x"]["type_widths"];
      if (!widths.is_array() || widths.size() != meta.node_types.size()) {
        r.fail("node_features.x.type_widths", "expected one width per node type (" +
                                                  std::to_string(meta.node_types.size()) + ")");
      }
      for (const auto& w : widths) {
        meta.node_type_feature_dim.push_back(r.integer_value(w, "node_features.x.type_widths", 0, meta.feature_dim));
      }
    }
  }
  if (j.contains("transforms")) {  // absent in folders written before transforms existed
    const json& transforms = j["transforms"];
    if (!transforms.is_array()) r.fail("transforms", "expected an array of strings");
    for (const auto& t : transforms) {
      if (!t.is_string()) r.fail("transforms", "expected an array of strings");
      meta.transforms.push_back(t.get<std::string>());
    }
  }
  const json& edge_features = r.field(j, "edge_features", "");
  if (edge_features.contains("edge_attr")) {
    meta.edge_feature_dim = r.columns(edge_features["edge_attr"], "edge_features.edge_attr.");
  }
  const json& labels = r.field(j, "labels", "");
  if (labels.contains("y")) {
    meta.has_labels = true;
    meta.num_classes = r.integer(labels["y"], "num_classes", 0, "labels.y.");
  }
}

// Which times and held-out edges the folder has; held_out_in_graph needs held-out edges with
// times, and edge times.
void read_times_and_splits(const MetaReader& r, const json& j, PartitionMeta& meta) {
  meta.has_node_time = r.boolean("has_node_time");
  meta.has_edge_time = r.boolean("has_edge_time");
  meta.has_edge_splits = r.boolean("has_edge_splits");
  // Absent in folders written before held-out edges kept their features.
  if (j.contains("has_edge_split_attr")) meta.has_edge_split_attr = r.boolean("has_edge_split_attr");
  // Absent in folders written before held-out edges kept their times (and none kept them
  // in the graph).
  if (j.contains("has_edge_split_time")) meta.has_edge_split_time = r.boolean("has_edge_split_time");
  if (j.contains("held_out_in_graph")) meta.held_out_in_graph = r.boolean("held_out_in_graph");
  if (meta.held_out_in_graph && !(meta.has_edge_splits && meta.has_edge_split_time && meta.has_edge_time)) {
    r.fail("held_out_in_graph", "is true, but the folder has no held-out edges with times and edge times");
  }
}

// The partition book: num_parts + 1 non-decreasing offsets from 0 to num_nodes.
void read_partition_book(const MetaReader& r, const json& j, PartitionMeta& meta) {
  const json& book = r.field(j, "partition_book", "");
  if (!book.is_array() || static_cast<int>(book.size()) != meta.num_parts + 1) {
    r.fail("partition_book", "expected num_parts + 1 = " + std::to_string(meta.num_parts + 1) + " offsets");
  }
  for (const auto& b : book) {
    if (!b.is_number_integer()) r.fail("partition_book", "expected integers");
    meta.partition_book.push_back(b.get<int64_t>());
  }
  if (meta.partition_book.front() != 0 || meta.partition_book.back() != meta.num_nodes) {
    r.fail("partition_book", "must run from 0 to num_nodes");
  }
  for (int p = 0; p < meta.num_parts; ++p) {
    if (meta.partition_book[p + 1] < meta.partition_book[p]) r.fail("partition_book", "offsets decrease");
  }
}

// Each part's counts; a part's nodes match the book, and the parts' edges add up to num_edges.
void read_parts(const MetaReader& r, const json& j, PartitionMeta& meta) {
  const json& parts = r.field(j, "parts", "");
  if (!parts.is_array() || static_cast<int>(parts.size()) != meta.num_parts) {
    r.fail("parts", "expected one entry per part (" + std::to_string(meta.num_parts) + ")");
  }
  int64_t total_edges = 0;
  for (int p = 0; p < meta.num_parts; ++p) {
    std::string where = "parts[" + std::to_string(p) + "].";
    const json& part = parts[p];
    PartStats s;
    s.num_nodes = r.integer(part, "num_nodes", 0, where);
    s.num_edges = r.integer(part, "num_edges", 0, where);
    s.num_train = r.integer(part, "num_train", 0, where);
    s.num_val = r.integer(part, "num_val", 0, where);
    s.num_test = r.integer(part, "num_test", 0, where);
    s.num_halo = r.integer(part, "num_halo", 0, where);
    s.num_cut_edges = r.integer(part, "num_cut_edges", 0, where);
    s.num_val_edges = r.integer(part, "num_val_edges", 0, where);
    s.num_test_edges = r.integer(part, "num_test_edges", 0, where);
    if (s.num_nodes != meta.partition_book[p + 1] - meta.partition_book[p]) {
      r.fail(where + "num_nodes", "does not match the partition book");
    }
    total_edges += s.num_edges;
    meta.parts.push_back(s);
  }
  if (total_edges != meta.num_edges) r.fail("parts", "edge counts do not add up to num_edges");
}

PartitionMeta parse_meta(const std::string& path) {
  const json j = read_json(path);
  MetaReader r(path, j);
  PartitionMeta meta;
  read_header(r, j, meta);
  read_types(r, j, meta);
  read_features(r, j, meta);
  read_times_and_splits(r, j, meta);
  meta.method = r.string("partition_method");
  meta.seed = r.unsigned_integer("seed");
  read_partition_book(r, j, meta);
  read_parts(r, j, meta);
  return meta;
}

}  // namespace

PartitionMeta parse_meta_json(const std::string& path) {
  try {
    return parse_meta(path);
  } catch (const json::exception& e) {
    // A field of the wrong JSON type deep inside (e.g. a string where a shape was expected).
    throw file_error(path, std::string("malformed field: ") + e.what());
  }
}

}  // namespace partita
