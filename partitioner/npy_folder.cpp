// A folder of .npy files, one per field, named as a PyG user names the tensors of a Data
// object (edge_index.npy, x.npy, y.npy, ...); see readers.h for the list.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <utility>

#include "base/error.h"
#include "partitioner/npy.h"
#include "partitioner/reader_util.h"
#include "partitioner/readers.h"

namespace partita {

namespace {

namespace fs = std::filesystem;

constexpr const char* kTypesFile = "types.json";

// Every file this format defines: write_npy_folder removes the ones it does not rewrite,
// so a folder reused for another dataset does not read back with stale fields.
constexpr const char* kFormatFiles[] = {
    "edge_index.npy", "edge_type.npy",      "edge_attr.npy",      "edge_time.npy",
    "x.npy",          "y.npy",              "node_time.npy",      "node_type.npy",
    "train_idx.npy",  "val_idx.npy",        "test_idx.npy",       "val_edge_index.npy",
    "val_edge_type.npy", "test_edge_index.npy", "test_edge_type.npy", kTypesFile,
};

using detail::shape_text;

// One file of the folder: its header, checked when the file is found, and its data, read
// only when a field asks for it and then straight into the field's vector, since x and
// edge_index may be gigabytes and a whole-file buffer beside them would double the peak.
struct NpyFile {
  std::string path;
  NpyHeader header;

  const std::vector<int64_t>& shape() const { return header.shape; }
  template <typename T>
  std::vector<T> read(int64_t first, int64_t count) const {
    return read_npy_as<T>(path, header, first, count);
  }
  template <typename T>
  std::vector<T> read_all() const {
    return read<T>(0, header.num_elements());
  }
};

std::string dtype_text(const NpyFile& f) {
  return f.header.is_bool ? "bool" : std::string(dtype_name(f.header.dtype));
}

[[noreturn]] void wrong_dtype(const NpyFile& f, const std::string& expected) {
  throw file_error(f.path, "dtype " + dtype_text(f) + " is not supported here (expected " + expected + ")");
}

bool is_dtype(const NpyFile& f, DType dtype) { return !f.header.is_bool && f.header.dtype == dtype; }

std::vector<int64_t> int64_slice(const NpyFile& f, int64_t first, int64_t count) {
  if (!is_dtype(f, DType::kInt64) && !is_dtype(f, DType::kInt32)) wrong_dtype(f, "int64 or int32");
  return f.read<int64_t>(first, count);
}

std::vector<int64_t> as_int64(const NpyFile& f) { return int64_slice(f, 0, f.header.num_elements()); }

// A [rows, columns] feature matrix as float32. NaN or infinity (also a float64 beyond
// float32's range) is refused with its row and column: it would train silently to a `nan`
// loss and chance accuracy.
std::vector<float> finite_float32_matrix(const NpyFile& f) {
  if (!is_dtype(f, DType::kFloat32) && !is_dtype(f, DType::kFloat64)) wrong_dtype(f, "float32 or float64");
  std::vector<float> values = f.read_all<float>();
  const int64_t columns = f.shape()[1];
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw file_error(f.path, "row " + std::to_string(static_cast<int64_t>(i) / columns) + ", column " +
                                   std::to_string(static_cast<int64_t>(i) % columns) + " is " +
                                   (std::isnan(values[i]) ? "NaN" : "infinite") + ": features must be finite");
    }
  }
  return values;
}

// Type indices; range-checked against the number of names later, in check_types.
std::vector<int32_t> as_type_ids(const NpyFile& f) {
  if (is_dtype(f, DType::kInt32)) return f.read_all<int32_t>();
  if (!is_dtype(f, DType::kInt64)) wrong_dtype(f, "int32 or int64");
  std::vector<int64_t> wide = f.read_all<int64_t>();
  for (size_t i = 0; i < wide.size(); ++i) {
    if (wide[i] < 0 || wide[i] > std::numeric_limits<int32_t>::max()) {
      throw file_error(f.path, "entry " + std::to_string(i) + " = " + std::to_string(wide[i]) +
                                   " is not a type index");
    }
  }
  return std::vector<int32_t>(wide.begin(), wide.end());
}

// Rows of a [rows] or [rows, 1] array: labels and times are often saved as column vectors.
int64_t vector_length(const NpyFile& f) {
  if (f.shape().size() == 1) return f.shape()[0];
  if (f.shape().size() == 2 && f.shape()[1] == 1) return f.shape()[0];
  throw file_error(f.path, "shape " + shape_text(f.shape()) + " is not a vector");
}

void expect_matrix(const NpyFile& f, const char* layout) {
  if (f.shape().size() != 2) {
    throw file_error(f.path, "shape " + shape_text(f.shape()) + " is not " + layout);
  }
}

// The files of one folder, found on demand; every error names the file.
class Folder {
 public:
  explicit Folder(std::string dir) : dir_(std::move(dir)) {}

  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  bool has(const std::string& name) const {
    std::error_code ec;
    return fs::exists(path(name), ec);
  }
  std::optional<NpyFile> find(const std::string& name) const {
    if (!has(name)) return std::nullopt;
    return NpyFile{path(name), read_npy_header(path(name))};
  }

 private:
  std::string dir_;
};

// The node count the per-node arrays agree on; the first one read is the reference that
// the others are checked against and that error messages quote.
class NodeCount {
 public:
  void add(const std::string& file, int64_t count, const char* unit, const Folder& folder) {
    if (known() && count != count_) {
      throw file_error(folder.path(file), "has " + std::to_string(count) + " " + unit + ", but " + reason_ +
                                              " (both are per node)");
    }
    if (!known()) {
      count_ = count;
      reason_ = file + " has " + std::to_string(count) + " " + unit;
    }
  }
  bool known() const { return count_ >= 0; }
  int64_t value() const { return count_; }
  const std::string& reason() const { return reason_; }

 private:
  int64_t count_ = -1;
  std::string reason_;  // "x.npy has 12 rows"
};

struct EdgeFile {
  std::string file;
  EdgeList* edges;
};

// [2, E] rows src then dst, as PyG's edge_index. C order puts all of src before all of
// dst, so each row is read straight into its vector.
EdgeList read_edge_index(const NpyFile& f) {
  if (f.shape().size() != 2 || f.shape()[0] != 2) {
    throw file_error(f.path, "shape " + shape_text(f.shape()) + " is not (2, num_edges)");
  }
  int64_t num_edges = f.shape()[1];
  EdgeList edges;
  edges.src = int64_slice(f, 0, num_edges);
  edges.dst = int64_slice(f, num_edges, num_edges);
  for (const std::vector<int64_t>* row : {&edges.src, &edges.dst}) {
    for (size_t i = 0; i < row->size(); ++i) {
      if ((*row)[i] < 0) {
        throw file_error(f.path, "edge " + std::to_string(i) + " has a negative node id " + std::to_string((*row)[i]));
      }
    }
  }
  return edges;
}

int64_t max_node_id(const EdgeList& edges) {
  int64_t max_id = -1;
  for (int64_t id : edges.src) max_id = std::max(max_id, id);
  for (int64_t id : edges.dst) max_id = std::max(max_id, id);
  return max_id;
}

void check_edge_ids(const EdgeList& edges, int64_t num_nodes, const std::string& path,
                    const std::string& reason) {
  for (int64_t i = 0; i < edges.size(); ++i) {
    int64_t worst = std::max(edges.src[i], edges.dst[i]);
    if (worst >= num_nodes) {
      throw file_error(path, "edge " + std::to_string(i) + " (" + std::to_string(edges.src[i]) + " -> " +
                                 std::to_string(edges.dst[i]) + ") has node id " + std::to_string(worst) +
                                 ", out of range: " + reason + ", so ids must be < " +
                                 std::to_string(num_nodes));
    }
  }
}

void expect_edge_count(int64_t count, const char* unit, int64_t num_edges, const std::string& path,
                       const std::string& edge_file) {
  if (count != num_edges) {
    throw file_error(path, "has " + std::to_string(count) + " " + unit + ", but " + edge_file + " has " +
                               std::to_string(num_edges) + " edges");
  }
}

// Node ids (sorted and deduplicated here) or a bool mask over the nodes.
std::vector<int64_t> read_split(const NpyFile& f, int64_t num_nodes) {
  if (f.shape().size() != 1) throw file_error(f.path, "shape " + shape_text(f.shape()) + " is not a vector");
  std::vector<int64_t> ids;
  if (f.header.is_bool) {
    std::vector<uint8_t> mask = f.read_all<uint8_t>();
    for (size_t node = 0; node < mask.size(); ++node) {
      if (mask[node] != 0) ids.push_back(static_cast<int64_t>(node));
    }
    return ids;
  }
  if (!is_dtype(f, DType::kInt64) && !is_dtype(f, DType::kInt32)) wrong_dtype(f, "int64 node ids or a bool mask");
  ids = as_int64(f);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= num_nodes) {
      throw file_error(f.path, "entry " + std::to_string(i) + " = " + std::to_string(ids[i]) +
                                   " is not a node id in [0, " + std::to_string(num_nodes) + ")");
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Labels are class indices: the largest sets the model's output width, so one huge label
// would ask for a layer of that many classes (and INT64_MAX + 1 overflowed; the fuzzer found it).
constexpr int64_t kMaxLabel = (int64_t{1} << 24) - 1;

std::vector<int64_t> read_labels(const NpyFile& f, int64_t* num_classes) {
  std::vector<int64_t> y = as_int64(f);
  int64_t max_label = -1;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] < -1) {
      throw file_error(f.path, "label " + std::to_string(y[i]) + " of node " + std::to_string(i) +
                                   " is negative (only -1, unlabelled, may be)");
    }
    if (y[i] > kMaxLabel) {
      throw file_error(f.path, "label " + std::to_string(y[i]) + " of node " + std::to_string(i) +
                                   " is over the largest class index, " + std::to_string(kMaxLabel));
    }
    max_label = std::max(max_label, y[i]);
  }
  *num_classes = max_label + 1;
  return y;
}

struct Types {
  std::vector<std::string> node_types;
  std::vector<EdgeType> edge_types;
  std::vector<int32_t> reverse_edge_types;
  std::vector<int64_t> feature_dims;
};

// {"node_types": ["author", ...], "edge_types": [["author", "writes", "paper"], ...],
//  "reverse_edge_types": [1, 0, -1]}: optional, per edge type the index of the type that
// mirrors it edge by edge, -1 for none (Dataset::reverse_edge_type; validate() checks the
// pairs' types, not their edges);
// "feature_dims": [128, 64]: optional, per node type the width of its features, the leading
// columns of x (Dataset::node_type_feature_dim).
Types read_types(const std::string& path) {
  std::string text = detail::read_file(path);
  Types types;
  try {
    nlohmann::json json = nlohmann::json::parse(text);
    if (!json.is_object()) throw file_error(path, "expected a JSON object");
    for (const auto& [key, value] : json.items()) {
      if (key != "node_types" && key != "edge_types" && key != "reverse_edge_types" && key != "feature_dims") {
        throw file_error(path, "unknown key \"" + key +
                                   "\" (expected node_types, edge_types, reverse_edge_types, feature_dims)");
      }
    }
    if (json.contains("node_types")) types.node_types = json.at("node_types").get<std::vector<std::string>>();
    if (json.contains("edge_types")) {
      for (const auto& triple : json.at("edge_types")) {
        if (!triple.is_array() || triple.size() != 3) {
          throw file_error(path, "edge type " + triple.dump() + " is not [src_type, relation, dst_type]");
        }
        types.edge_types.push_back(EdgeType{triple[0].get<std::string>(), triple[1].get<std::string>(),
                                            triple[2].get<std::string>()});
      }
    }
    if (json.contains("reverse_edge_types")) {
      types.reverse_edge_types = json.at("reverse_edge_types").get<std::vector<int32_t>>();
    }
    if (json.contains("feature_dims")) types.feature_dims = json.at("feature_dims").get<std::vector<int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw file_error(path, e.what());
  }
  return types;
}

void read_node_arrays(const Folder& folder, Dataset* d, NodeCount* count,
                      std::vector<NpyFile>* splits) {
  if (auto x = folder.find("x.npy")) {
    expect_matrix(*x, "(num_nodes, num_features)");
    count->add("x.npy", x->shape()[0], "rows", folder);
    d->feature_dim = x->shape()[1];
    d->x = finite_float32_matrix(*x);
  }
  if (auto y = folder.find("y.npy")) {
    count->add("y.npy", vector_length(*y), "entries", folder);
    d->y = read_labels(*y, &d->num_classes);
  }
  if (auto t = folder.find("node_time.npy")) {
    count->add("node_time.npy", vector_length(*t), "entries", folder);
    d->node_time = as_int64(*t);
  }
  if (auto t = folder.find("node_type.npy")) {
    count->add("node_type.npy", vector_length(*t), "entries", folder);
    d->node_type = as_type_ids(*t);
  }
  for (const char* name : {"train_idx.npy", "val_idx.npy", "test_idx.npy"}) {
    auto split = folder.find(name);
    if (!split) continue;
    if (split->header.is_bool) count->add(name, vector_length(*split), "mask entries", folder);
    splits->push_back(std::move(*split));
  }
}

void read_edge_arrays(const Folder& folder, Dataset* d) {
  const std::string edge_file = "edge_index.npy";
  int64_t num_edges = d->edges.size();
  if (auto a = folder.find("edge_attr.npy")) {
    expect_matrix(*a, "(num_edges, num_edge_features)");
    expect_edge_count(a->shape()[0], "rows", num_edges, a->path, edge_file);
    d->edge_feature_dim = a->shape()[1];
    d->edge_attr = finite_float32_matrix(*a);
  }
  if (auto t = folder.find("edge_time.npy")) {
    expect_edge_count(vector_length(*t), "entries", num_edges, t->path, edge_file);
    d->edge_time = as_int64(*t);
  }
}

// Reads <prefix>edge_index.npy and, when present, <prefix>edge_type.npy.
std::optional<EdgeList> read_typed_edges(const Folder& folder, const std::string& prefix) {
  std::string index_file = prefix + "edge_index.npy", type_file = prefix + "edge_type.npy";
  auto index = folder.find(index_file);
  if (!index) {
    if (folder.has(type_file)) throw file_error(folder.path(type_file), "present without " + index_file);
    return std::nullopt;
  }
  EdgeList edges = read_edge_index(*index);
  if (auto types = folder.find(type_file)) {
    expect_edge_count(vector_length(*types), "entries", edges.size(), types->path, index_file);
    edges.type = as_type_ids(*types);
  }
  return edges;
}

void check_type_range(const std::vector<int32_t>& types, size_t count, const std::string& path,
                      const char* kind) {
  for (size_t i = 0; i < types.size(); ++i) {
    if (static_cast<size_t>(types[i]) >= count) {
      throw file_error(path, "entry " + std::to_string(i) + " = " + std::to_string(types[i]) + ", but " +
                                 kTypesFile + " names " + std::to_string(count) + " " + kind + " types");
    }
  }
}

// Position in the node type names of each edge type's (src, dst) types; -1 for a name
// types.json does not list (which validate() reports).
std::vector<std::pair<int32_t, int32_t>> endpoint_type_ids(const Dataset& d) {
  auto index_of = [&](const std::string& name) {
    auto it = std::find(d.node_type_names.begin(), d.node_type_names.end(), name);
    return it == d.node_type_names.end() ? -1 : static_cast<int32_t>(it - d.node_type_names.begin());
  };
  std::vector<std::pair<int32_t, int32_t>> ids;
  for (const EdgeType& t : d.edge_types) ids.emplace_back(index_of(t.src_type), index_of(t.dst_type));
  return ids;
}

// types.json says which node types each edge type joins, node_type.npy what each node is;
// a file saved from the wrong mapping makes them disagree, and a relational model would
// then silently apply one relation's weights to another's nodes. Ids and types are
// already range-checked.
void check_endpoint_types(const Dataset& d, const EdgeList& edges, const std::string& type_path) {
  if (d.node_type.empty() || edges.type.empty()) return;
  const auto ends = endpoint_type_ids(d);
  auto check = [&](int64_t edge, const char* side, int64_t node, int32_t expected) {
    if (expected < 0 || d.node_type[node] == expected) return;
    const EdgeType& t = d.edge_types[edges.type[edge]];
    throw file_error(type_path, "edge " + std::to_string(edge) + " has type " + std::to_string(edges.type[edge]) +
                                    " (" + t.src_type + ", " + t.relation + ", " + t.dst_type + "), but its " +
                                    side + " node " + std::to_string(node) + " has type '" +
                                    d.node_type_names[d.node_type[node]] + "' in node_type.npy");
  };
  for (int64_t i = 0; i < edges.size(); ++i) {
    check(i, "src", edges.src[i], ends[edges.type[i]].first);
    check(i, "dst", edges.dst[i], ends[edges.type[i]].second);
  }
}

// types.json names what node_type.npy and edge_type.npy index; neither makes sense alone.
void apply_types(const Folder& folder, Dataset* d) {
  bool has_types_file = folder.has(kTypesFile);
  if (!has_types_file) {
    for (const char* typed : {"node_type.npy", "edge_type.npy", "val_edge_type.npy", "test_edge_type.npy"}) {
      if (folder.has(typed)) {
        throw file_error(folder.path(typed), std::string("needs ") + kTypesFile + " to name the types");
      }
    }
    return;
  }
  Types types = read_types(folder.path(kTypesFile));
  d->node_type_names = std::move(types.node_types);
  d->edge_types = std::move(types.edge_types);
  d->reverse_edge_type = std::move(types.reverse_edge_types);
  d->node_type_feature_dim = std::move(types.feature_dims);
  if (!d->node_type_names.empty() && d->node_type.empty()) {
    throw file_error(folder.path("node_type.npy"), std::string("missing, but ") + kTypesFile + " declares node types");
  }
  if (!d->edge_types.empty() && d->edges.type.empty() && d->edges.size() > 0) {
    throw file_error(folder.path("edge_type.npy"), std::string("missing, but ") + kTypesFile + " declares edge types");
  }
  size_t node_types = d->node_type_names.size(), edge_types = d->edge_types.size();
  check_type_range(d->node_type, node_types, folder.path("node_type.npy"), "node");
  check_type_range(d->edges.type, edge_types, folder.path("edge_type.npy"), "edge");
  check_type_range(d->val_edges.type, edge_types, folder.path("val_edge_type.npy"), "edge");
  check_type_range(d->test_edges.type, edge_types, folder.path("test_edge_type.npy"), "edge");
  check_endpoint_types(*d, d->edges, folder.path("edge_type.npy"));
  check_endpoint_types(*d, d->val_edges, folder.path("val_edge_type.npy"));
  check_endpoint_types(*d, d->test_edges, folder.path("test_edge_type.npy"));
}

void write_types(const Dataset& d, const std::string& path) {
  nlohmann::json json;
  json["node_types"] = d.node_type_names;
  json["edge_types"] = nlohmann::json::array();
  for (const EdgeType& t : d.edge_types) json["edge_types"].push_back({t.src_type, t.relation, t.dst_type});
  if (!d.reverse_edge_type.empty()) json["reverse_edge_types"] = d.reverse_edge_type;
  if (!d.node_type_feature_dim.empty()) json["feature_dims"] = d.node_type_feature_dim;
  std::string text = json.dump(2) + "\n";
  detail::ScopedFd fd = detail::open_for_writing(path);
  detail::write_all(fd.get(), path, text.data(), text.size());
  fd.close_or_throw(path);
}

// Writes the fields of one folder and remembers which files it wrote.
class FolderWriter {
 public:
  explicit FolderWriter(std::string dir) : dir_(std::move(dir)) {}

  std::string path(const std::string& name) {
    written_.push_back(name);
    return (fs::path(dir_) / name).string();
  }

  template <typename T>
  void vector(const std::string& name, const std::vector<T>& values) {
    if (values.empty()) return;
    write_npy(path(name), dtype_of<T>(), {static_cast<int64_t>(values.size())}, values.data());
  }

  void matrix(const std::string& name, const std::vector<float>& values, int64_t rows, int64_t cols) {
    if (cols == 0) return;
    write_npy(path(name), DType::kFloat32, {rows, cols}, values.data());
  }

  // [2, E] from the two rows as they are, with no interleaved copy.
  void edges(const std::string& prefix, const EdgeList& e, bool always) {
    if (e.size() == 0 && !always) return;
    size_t bytes = e.src.size() * sizeof(int64_t);
    detail::write_npy_chunks(path(prefix + "edge_index.npy"), DType::kInt64, {2, e.size()},
                             {{e.src.data(), bytes}, {e.dst.data(), bytes}});
    vector(prefix + "edge_type.npy", e.type);
  }

  void remove_stale_files() const {
    for (const char* name : kFormatFiles) {
      if (std::find(written_.begin(), written_.end(), name) != written_.end()) continue;
      std::error_code ec;
      fs::remove(fs::path(dir_) / name, ec);
      if (ec) throw file_error((fs::path(dir_) / name).string(), "cannot remove stale file: " + ec.message());
    }
  }

 private:
  std::string dir_;
  std::vector<std::string> written_;
};

}  // namespace

// The node count is what the per-node arrays (x, y, node_time, node_type, bool masks) say,
// and they must agree; with none of them it is the largest node id in any edge file + 1.
Dataset read_npy_folder(const std::string& dir) {
  if (!fs::is_directory(dir)) throw file_error(dir, "not a folder (expected a folder of .npy files)");
  Folder folder(dir);
  Dataset d;
  d.name = detail::folder_name(dir);

  if (!folder.has("edge_index.npy")) {
    throw file_error(folder.path("edge_index.npy"), "missing: an npy dataset needs edge_index (int64 [2, num_edges])");
  }
  d.edges = *read_typed_edges(folder, "");
  if (auto val = read_typed_edges(folder, "val_")) d.val_edges = std::move(*val);
  if (auto test = read_typed_edges(folder, "test_")) d.test_edges = std::move(*test);

  NodeCount count;
  std::vector<NpyFile> splits;
  read_node_arrays(folder, &d, &count, &splits);
  const EdgeFile edge_files[] = {
      {"edge_index.npy", &d.edges}, {"val_edge_index.npy", &d.val_edges}, {"test_edge_index.npy", &d.test_edges}};
  if (count.known()) {
    d.num_nodes = count.value();
    for (const EdgeFile& f : edge_files) check_edge_ids(*f.edges, d.num_nodes, folder.path(f.file), count.reason());
  } else {
    // The count is the largest id + 1: ids must not be sparse (reader_util.h).
    int64_t edges = 0;
    for (const EdgeFile& f : edge_files) edges += f.edges->size();
    for (const EdgeFile& f : edge_files) {
      const int64_t max_id = max_node_id(*f.edges);
      const std::string sparse = detail::sparse_ids_problem(max_id, edges);
      if (!sparse.empty()) throw file_error(folder.path(f.file), sparse);
      d.num_nodes = std::max(d.num_nodes, max_id + 1);
    }
  }

  read_edge_arrays(folder, &d);
  for (const NpyFile& split : splits) {
    std::vector<int64_t> ids = read_split(split, d.num_nodes);
    std::string name = fs::path(split.path).filename().string();
    if (name == "train_idx.npy") d.train_idx = std::move(ids);
    else if (name == "val_idx.npy") d.val_idx = std::move(ids);
    else d.test_idx = std::move(ids);
  }
  apply_types(folder, &d);
  d.validate();
  return d;
}

void write_npy_folder(const Dataset& d, const std::string& dir) {
  d.validate();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw file_error(dir, "cannot create the folder: " + (ec ? ec.message() : "a file is in the way"));
  }
  FolderWriter out(dir);
  out.edges("", d.edges, /*always=*/true);
  out.edges("val_", d.val_edges, false);
  out.edges("test_", d.test_edges, false);
  out.matrix("x.npy", d.x, d.num_nodes, d.feature_dim);
  out.vector("y.npy", d.y);
  out.matrix("edge_attr.npy", d.edge_attr, d.num_edges(), d.edge_feature_dim);
  out.vector("node_time.npy", d.node_time);
  out.vector("edge_time.npy", d.edge_time);
  out.vector("node_type.npy", d.node_type);
  out.vector("train_idx.npy", d.train_idx);
  out.vector("val_idx.npy", d.val_idx);
  out.vector("test_idx.npy", d.test_idx);
  if (d.is_hetero()) write_types(d, out.path(kTypesFile));
  out.remove_stale_files();
}

}  // namespace partita
