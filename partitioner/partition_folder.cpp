// Reading a partition folder: map the arrays, check them against META.json and each other.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "partitioner/meta_json.h"
#include "partitioner/partition_format.h"

namespace partita {

namespace fs = std::filesystem;

PartitionMeta read_partition_meta(const std::string& dir) {
  if (!fs::is_directory(dir)) throw file_error(dir, "not a folder");
  return parse_meta_json(dir + "/" + kMetaFile);
}

PartitionFolder::PartitionFolder(const std::string& dir)
    : dir_(dir), meta_(read_partition_meta(dir)), book_(meta_.partition_book) {
  MappedArray book_file(dir_ + "/partition_book.bin");
  book_file.expect_shape({meta_.num_parts + 1});
  auto offsets = book_file.as<int64_t>();
  if (!std::equal(offsets.begin(), offsets.end(), meta_.partition_book.begin())) {
    throw file_error(book_file.path(), "disagrees with the partition book in META.json");
  }
}

MappedArray PartitionFolder::node_map() const {
  MappedArray map(dir_ + "/node_map.bin");
  map.expect_shape({meta_.num_nodes});
  return map;
}

namespace {

// Every value in [lo, hi); the error names the file and the first offending position.
void check_range(const MappedArray& a, int64_t lo, int64_t hi) {
  auto values = a.as<int64_t>();
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < lo || values[i] >= hi) {
      throw file_error(a.path(), "entry " + std::to_string(i) + " = " + std::to_string(values[i]) +
                                     " is outside [" + std::to_string(lo) + ", " +
                                     std::to_string(hi) + ")");
    }
  }
}

void check_sorted_unique(const MappedArray& a) {
  auto values = a.as<int64_t>();
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] <= values[i - 1]) {
      throw file_error(a.path(), "not sorted and unique at entry " + std::to_string(i));
    }
  }
}

class PartLoader {
 public:
  PartLoader(const std::string& dir, Verify verify) : dir_(dir), verify_(verify) {}

  MappedArray open(const std::string& name, const std::vector<int64_t>& shape, DType dtype) const {
    std::string path = dir_ + "/" + name;
    if (!fs::exists(path)) throw file_error(path, "missing");
    MappedArray a(path);
    if (a.dtype() != dtype) {
      throw file_error(path, "dtype is " + std::string(dtype_name(a.dtype())) + ", expected " +
                                 std::string(dtype_name(dtype)));
    }
    a.expect_shape(shape);
    if (verify_ == Verify::kFull) a.verify_checksum();
    return a;
  }

  std::optional<MappedArray> open_if(bool present, const std::string& name,
                                     const std::vector<int64_t>& shape, DType dtype) const {
    if (!present) return std::nullopt;
    return open(name, shape, dtype);
  }

 private:
  std::string dir_;
  Verify verify_;
};

}  // namespace

PartitionData PartitionFolder::load_part(int part, Verify verify) const {
  if (part < 0 || part >= meta_.num_parts) {
    throw Error("part " + std::to_string(part) + " does not exist in " + dir_ + " (" +
                std::to_string(meta_.num_parts) + " parts)");
  }
  const PartStats& stats = meta_.parts[part];
  const int64_t n = stats.num_nodes, m = stats.num_edges, N = meta_.num_nodes;
  std::string part_dir = dir_ + "/part" + std::to_string(part);
  if (!fs::is_directory(part_dir)) throw file_error(part_dir, "missing part folder");
  PartLoader load(part_dir, verify);

  PartitionData d;
  d.part = part;
  d.node_begin = book_.begin(part);
  d.node_end = book_.end(part);
  d.indptr = load.open("indptr.bin", {n + 1}, DType::kInt64);
  d.indices = load.open("indices.bin", {m}, DType::kInt64);
  d.edge_ids = load.open("edge_ids.bin", {m}, DType::kInt64);
  d.orig_ids = load.open("orig_ids.bin", {n}, DType::kInt64);
  d.halo = load.open("halo.bin", {stats.num_halo}, DType::kInt64);
  d.train_idx = load.open("train_idx.bin", {stats.num_train}, DType::kInt64);
  d.val_idx = load.open("val_idx.bin", {stats.num_val}, DType::kInt64);
  d.test_idx = load.open("test_idx.bin", {stats.num_test}, DType::kInt64);

  auto indptr = d.indptr.as<int64_t>();
  if (indptr[0] != 0 || indptr[n] != m) {
    throw file_error(d.indptr.path(), "must start at 0 and end at the edge count " + std::to_string(m));
  }
  for (int64_t v = 0; v < n; ++v) {
    if (indptr[v + 1] < indptr[v]) {
      throw file_error(d.indptr.path(), "decreases at entry " + std::to_string(v + 1));
    }
  }
  check_range(d.indices, 0, N);
  check_range(d.edge_ids, 0, meta_.num_edges);
  check_range(d.orig_ids, 0, N);
  check_range(d.halo, 0, N);
  check_sorted_unique(d.halo);
  for (const MappedArray* split : {&d.train_idx, &d.val_idx, &d.test_idx}) {
    check_range(*split, d.node_begin, d.node_end);
    check_sorted_unique(*split);
  }

  d.x = load.open_if(meta_.feature_dim > 0, "x.bin", {n, meta_.feature_dim}, DType::kFloat32);
  d.y = load.open_if(meta_.has_labels, "y.bin", {n}, DType::kInt64);
  if (d.y) check_range(*d.y, -1, meta_.num_classes);
  d.edge_attr = load.open_if(meta_.edge_feature_dim > 0, "edge_attr.bin",
                             {m, meta_.edge_feature_dim}, DType::kFloat32);
  d.node_time = load.open_if(meta_.has_node_time, "node_time.bin", {n}, DType::kInt64);
  d.edge_time = load.open_if(meta_.has_edge_time, "edge_time.bin", {m}, DType::kInt64);
  bool typed_nodes = !meta_.node_types.empty();
  bool typed_edges = !meta_.edge_types.empty();
  d.node_type = load.open_if(typed_nodes, "node_type.bin", {n}, DType::kInt32);
  d.edge_type = load.open_if(typed_edges, "edge_type.bin", {m}, DType::kInt32);
  auto check_types = [](const MappedArray& a, size_t count) {
    auto t = a.as<int32_t>();
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] < 0 || t[i] >= static_cast<int32_t>(count)) {
        throw file_error(a.path(), "entry " + std::to_string(i) + " names type " +
                                       std::to_string(t[i]) + " of " + std::to_string(count));
      }
    }
  };
  if (d.node_type) check_types(*d.node_type, meta_.node_types.size());
  if (d.edge_type) check_types(*d.edge_type, meta_.edge_types.size());
  if (meta_.has_edge_splits) {
    d.val_edge_index = load.open("val_edge_index.bin", {2, stats.num_val_edges}, DType::kInt64);
    d.test_edge_index = load.open("test_edge_index.bin", {2, stats.num_test_edges}, DType::kInt64);
    check_range(*d.val_edge_index, 0, N);
    check_range(*d.test_edge_index, 0, N);
    d.val_edge_type = load.open_if(typed_edges, "val_edge_type.bin", {stats.num_val_edges}, DType::kInt32);
    d.test_edge_type = load.open_if(typed_edges, "test_edge_type.bin", {stats.num_test_edges}, DType::kInt32);
    if (d.val_edge_type) check_types(*d.val_edge_type, meta_.edge_types.size());
    if (d.test_edge_type) check_types(*d.test_edge_type, meta_.edge_types.size());
    const bool attr = meta_.has_edge_split_attr && meta_.edge_feature_dim > 0;
    d.val_edge_attr = load.open_if(attr, "val_edge_attr.bin", {stats.num_val_edges, meta_.edge_feature_dim}, DType::kFloat32);
    d.test_edge_attr =
        load.open_if(attr, "test_edge_attr.bin", {stats.num_test_edges, meta_.edge_feature_dim}, DType::kFloat32);
    d.val_edge_time = load.open_if(meta_.has_edge_split_time, "val_edge_time.bin", {stats.num_val_edges}, DType::kInt64);
    d.test_edge_time = load.open_if(meta_.has_edge_split_time, "test_edge_time.bin", {stats.num_test_edges}, DType::kInt64);
  }
  return d;
}

namespace {

// Throws Error naming the first element of `array` (float32, [rows, columns] or [rows])
// that is not finite, and how many are not.
void check_finite(const MappedArray& array) {
  if (array.dtype() != DType::kFloat32) return;
  const auto values = array.as<float>();
  const int64_t columns = array.shape().size() > 1 ? array.dim(1) : 1;
  int64_t first = -1, count = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
    if (!std::isfinite(values[i])) {
      if (first < 0) first = i;
      ++count;
    }
  }
  if (count == 0) return;
  throw file_error(array.path(), std::to_string(count) + " values are not finite; the first, " +
                                     std::to_string(values[first]) + ", is at row " + std::to_string(first / columns) +
                                     ", column " + std::to_string(first % columns));
}

}  // namespace

void PartitionFolder::verify_all(Verify verify) const {
  MappedArray map = node_map();
  if (verify == Verify::kFull) map.verify_checksum();
  check_range(map, 0, meta_.num_nodes);
  auto node_map = map.as<int64_t>();
  // Allocate by num_edges only once the files agree with it (a corrupt META.json could
  // claim any count): each part's edge_ids.bin must hold exactly its stated edges.
  for (int p = 0; p < meta_.num_parts; ++p) {
    MappedArray edges(dir_ + "/part" + std::to_string(p) + "/edge_ids.bin");
    edges.expect_shape({meta_.parts[p].num_edges});
  }
  std::vector<uint8_t> edge_seen(meta_.num_edges, 0);
  for (int p = 0; p < meta_.num_parts; ++p) {
    PartitionData part = load_part(p, verify);
    // orig_ids and node_map are inverse permutations: that alone proves every original
    // node is in exactly one part, at the global id the partition book gives it.
    auto orig = part.orig_ids.as<int64_t>();
    for (int64_t i = 0; i < part.num_nodes(); ++i) {
      if (node_map[orig[i]] != part.node_begin + i) {
        throw file_error(part.orig_ids.path(),
                         "original node " + std::to_string(orig[i]) + " maps to global id " +
                             std::to_string(node_map[orig[i]]) + " in node_map.bin, but sits at " +
                             std::to_string(part.node_begin + i));
      }
    }
    for (int64_t e : part.edge_ids.as<int64_t>()) {
      if (edge_seen[e]++) {
        throw file_error(part.edge_ids.path(), "original edge " + std::to_string(e) + " appears twice");
      }
    }
    // Features must be finite: a NaN or an infinity passes its checksum (it was written so)
    // and would only be found by the first training step that reads it.
    if (verify == Verify::kFull) {
      if (part.x) check_finite(*part.x);
      if (part.edge_attr) check_finite(*part.edge_attr);
    }
    // The stored halo must be exactly the remote sources of this part's in-edges.
    std::vector<int64_t> halo;
    for (int64_t s : part.indices.as<int64_t>()) {
      if (s < part.node_begin || s >= part.node_end) halo.push_back(s);
    }
    std::sort(halo.begin(), halo.end());
    halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
    auto stored = part.halo.as<int64_t>();
    if (!std::equal(halo.begin(), halo.end(), stored.begin(), stored.end())) {
      throw file_error(part.halo.path(), "does not list the part's remote sources");
    }
  }
  // Every edge was seen at most once; counts add up to num_edges, so each exactly once.
}

}  // namespace partita
