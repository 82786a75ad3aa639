#include "graph/feature_store.h"

#include <atomic>
#include <cstring>
#include <string>

#include "base/error.h"
#include "base/parallel.h"
#include "graph/row_copy.h"

namespace partita {

namespace {

// Below this much output a gather is over before a second thread would have started.
constexpr size_t kParallelMinBytes = size_t{1} << 20;
const char* space_name(RowSpace space) { return space == RowSpace::kNode ? "node" : "edge"; }

std::string key_name(const std::string& group, const std::string& name) {
  return group + "/" + name;
}

std::string range_text(int64_t begin, int64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

}  // namespace

FeatureStore::FeatureStore(int64_t node_begin, int64_t node_end, int64_t edge_begin,
                           int64_t edge_end)
    : node_begin_(node_begin), node_end_(node_end), edge_begin_(edge_begin), edge_end_(edge_end) {
  if (node_end < node_begin) {
    throw Error("feature store: node range " + range_text(node_begin, node_end) + " is reversed");
  }
  if (edge_end < edge_begin) {
    throw Error("feature store: edge range " + range_text(edge_begin, edge_end) + " is reversed");
  }
}

FeatureStore::Range FeatureStore::range(RowSpace space) const {
  return space == RowSpace::kNode ? Range{node_begin_, node_end_} : Range{edge_begin_, edge_end_};
}

void FeatureStore::put(const std::string& group, const std::string& name, RowSpace space,
                       ArrayRef array) {
  const std::string what = "feature store: put " + key_name(group, name) + ": ";
  if ((group == "node" && space != RowSpace::kNode) ||
      (group == "edge" && space != RowSpace::kEdge)) {
    throw Error(what + "group '" + group + "' must hold " + group + " rows, not " +
                space_name(space) + " rows");
  }
  // A group is one node or edge type: mixing spaces in it is a caller's mix-up of names.
  for (auto it = entries_.lower_bound({group, ""});
       it != entries_.end() && it->first.first == group; ++it) {
    if (it->second.space != space && it->first.second != name) {
      throw Error(what + "group '" + group + "' already holds " + space_name(it->second.space) +
                  " rows (" + it->first.second + "), not " + space_name(space) + " rows");
    }
  }
  if (array.empty()) throw Error(what + "the array is empty (no data)");
  const Range rows = range(space);
  if (array.shape().empty() || array.rows() != rows.size()) {
    throw Error(what + "the array has " + std::to_string(array.rows()) +
                " rows, but this partition's " + space_name(space) + " range " +
                range_text(rows.begin, rows.end) + " has " + std::to_string(rows.size()));
  }
  entries_[{group, name}] = Entry{space, std::move(array), nullptr};
}

void FeatureStore::put_disk(const std::string& group, const std::string& name, RowSpace space,
                            std::shared_ptr<const DiskRows> rows) {
  if (rows == nullptr) throw Error("feature store: put " + key_name(group, name) + ": no rows");
  const DiskRows& r = *rows;
  put(group, name, space, ArrayRef::from_owner(rows, r.dtype(), r.shape(), nullptr, 0, r.path()));
  entries_[{group, name}].disk = std::move(rows);
}

const DiskRows* FeatureStore::disk_rows(const std::string& group, const std::string& name) const {
  auto it = entries_.find({group, name});
  return it == entries_.end() ? nullptr : it->second.disk.get();
}

const ArrayRef* FeatureStore::get(const std::string& group, const std::string& name) const {
  auto it = entries_.find({group, name});
  return it == entries_.end() ? nullptr : &it->second.array;
}

bool FeatureStore::contains(const std::string& group, const std::string& name) const {
  return entries_.count({group, name}) != 0;
}

bool FeatureStore::remove(const std::string& group, const std::string& name) {
  return entries_.erase({group, name}) != 0;
}

std::vector<std::pair<std::string, std::string>> FeatureStore::keys() const {
  std::vector<Key> keys;
  keys.reserve(entries_.size());
  for (const auto& entry : entries_) keys.push_back(entry.first);
  return keys;
}

const FeatureStore::Entry& FeatureStore::find(const std::string& group, const std::string& name,
                                              const char* op) const {
  auto it = entries_.find({group, name});
  if (it != entries_.end()) return it->second;
  std::string have;
  for (const auto& entry : entries_) {
    have += (have.empty() ? "" : ", ") + key_name(entry.first.first, entry.first.second);
  }
  throw Error(std::string("feature store: ") + op + ": no attribute " + key_name(group, name) +
              " (stored: " + (have.empty() ? "none" : have) + ")");
}

int64_t FeatureStore::row_width_checked(const std::string& group, const std::string& name,
                                        DType expected) const {
  const ArrayRef& array = find(group, name, "gather_as").array;
  if (array.dtype() != expected) {
    throw Error("feature store: gather_as " + key_name(group, name) + ": dtype is " +
                std::string(dtype_name(array.dtype())) + ", requested " +
                std::string(dtype_name(expected)));
  }
  return array.row_width();
}

void FeatureStore::gather(const std::string& group, const std::string& name,
                          Span<const int64_t> global_ids, void* out, size_t out_bytes,
                          int threads) const {
  const Entry& entry = find(group, name, "gather");
  const size_t row_bytes = entry.array.row_bytes();
  const size_t n = global_ids.size();
  if (out_bytes != n * row_bytes) {
    throw Error("feature store: gather " + key_name(group, name) + ": output buffer has " +
                std::to_string(out_bytes) + " bytes, expected " + std::to_string(n * row_bytes) +
                " (" + std::to_string(n) + " ids x " + std::to_string(row_bytes) +
                " bytes per row)");
  }
  const Range rows = range(entry.space);
  if (entry.disk) {
    for (size_t pos = 0; pos < n; ++pos) {
      if (global_ids[pos] < rows.begin || global_ids[pos] >= rows.end) throw_outside(group, name, entry.space, global_ids, pos);
    }
    entry.disk->read(global_ids, rows.begin, static_cast<char*>(out));
    return;
  }
  RowSource src;
  src.data = static_cast<const char*>(entry.array.raw_data());
  src.row_bytes = row_bytes;
  src.begin = static_cast<uint64_t>(rows.begin);
  src.rows = static_cast<uint64_t>(rows.size());
  char* const dst = static_cast<char*>(out);

  std::atomic<size_t> first_bad{n};
  int workers = out_bytes > kParallelMinBytes ? threads : 1;
  parallel_for(static_cast<int64_t>(n), workers, [&](int64_t lo, int64_t hi) {
    size_t count = static_cast<size_t>(hi - lo);
    RowSource slice = src;
    slice.ids = global_ids.data() + lo;
    size_t bad = static_cast<size_t>(lo) + copy_rows(slice, nullptr, count, dst + lo * row_bytes, out_bytes);
    if (bad == static_cast<size_t>(hi)) return;
    // Slices finish in any order; keep the earliest bad position so the message names the
    // first bad id, as a single-threaded gather would.
    size_t seen = first_bad.load();
    while (bad < seen && !first_bad.compare_exchange_weak(seen, bad)) {
    }
  });
  if (first_bad < n) throw_outside(group, name, entry.space, global_ids, first_bad);
}

void FeatureStore::throw_outside(const std::string& group, const std::string& name, RowSpace space,
                                 Span<const int64_t> global_ids, size_t pos) const {
  const Range rows = range(space);
  throw Error("feature store: gather " + key_name(group, name) + ": global id " + std::to_string(global_ids[pos]) +
              " (position " + std::to_string(pos) + ") is outside this partition's " + space_name(space) +
              " range " + range_text(rows.begin, rows.end));
}

}  // namespace partita
