// One partition's node and edge attributes: features, labels, timestamps, edge weights.
//
// Attributes are keyed by (group, name), as in PyG's FeatureStore: the group is "node" or
// "edge" for homogeneous graphs, or a node/edge type name for heterogeneous ones. Every
// attribute is an ArrayRef whose first dimension is the row: one row per node or edge the
// partition owns, indexed by global id minus the partition's first id. Heterogeneous graphs
// share one global id space (see partitioner/dataset.h), so a type-named group is indexed
// the same way; rows of nodes of other types are the caller's padding.
//
// The hot operation is gather(): copy the rows of a list of global ids into the caller's
// buffer. It validates every id as part of the copy (no second pass over memory), reads
// only the requested rows, so memory-mapped attributes larger than RAM work unchanged,
// and splits large gathers over threads.
//
// An attribute may instead live on disk (put_disk, graph/disk_rows.h): its rows are read
// from the file at each gather, with io_uring, and take no memory. get() still describes it
// (dtype, shape, the file's name), but its raw_data() is null: its rows come only through
// gather().
//
// Thread safety: const methods may run concurrently; put() and remove() may not run
// concurrently with anything else on the same store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/array_ref.h"
#include "base/dtype.h"
#include "base/span.h"
#include "graph/disk_rows.h"

namespace partita {

// Which id range indexes a group's rows.
enum class RowSpace { kNode, kEdge };

class FeatureStore {
 public:
  // The partition owns global node ids [node_begin, node_end) and global edge ids
  // [edge_begin, edge_end). Throws Error if a range is reversed.
  FeatureStore(int64_t node_begin, int64_t node_end, int64_t edge_begin, int64_t edge_end);

  // Stores `array` as (group, name), replacing any previous entry. Throws Error when the
  // array's row count differs from the size of `space`'s range, when group "node" is not
  // kNode or "edge" not kEdge, or when the group already holds rows of the other space.
  void put(const std::string& group, const std::string& name, RowSpace space, ArrayRef array);

  // Stores the rows of `rows`' file as (group, name), read from disk at each gather; the
  // same checks as put().
  void put_disk(const std::string& group, const std::string& name, RowSpace space,
                std::shared_ptr<const DiskRows> rows);

  // The stored array, or nullptr. The pointer stays valid until put/remove of that key. An
  // attribute on disk is described without data (raw_data() null, bytes() 0).
  const ArrayRef* get(const std::string& group, const std::string& name) const;
  bool contains(const std::string& group, const std::string& name) const;
  // The attribute's rows on disk, or nullptr when it is absent or in memory.
  const DiskRows* disk_rows(const std::string& group, const std::string& name) const;
  // Returns whether an entry was removed.
  bool remove(const std::string& group, const std::string& name);
  // Every (group, name), sorted.
  std::vector<std::pair<std::string, std::string>> keys() const;

  // Copies the rows of `global_ids` (repeats allowed, any order) into `out`, row after row.
  // `out_bytes` must be global_ids.size() * row bytes. Throws Error naming the attribute if
  // it is absent, the first id outside the partition's range, or the size mismatch; after
  // an error `out` holds unspecified bytes. An attribute on disk is read with DiskRows::read
  // (one thread: its parallelism is the device's queue), whose errors name the file and
  // offset. In memory, gathers of more than 1 MiB use up to `threads`
  // threads (0: all cores). Gathers of 16 MiB or more of rows of at least 64 bytes write
  // with streaming stores on x86-64: they bypass the cache, which an output that large
  // would overflow anyway, and so leave the output uncached.
  void gather(const std::string& group, const std::string& name, Span<const int64_t> global_ids,
              void* out, size_t out_bytes, int threads = 1) const;

  // gather() into a vector resized to ids x row width; throws Error unless the attribute's
  // dtype is T.
  template <typename T>
  void gather_as(const std::string& group, const std::string& name, Span<const int64_t> global_ids,
                 std::vector<T>& out, int threads = 1) const {
    int64_t width = row_width_checked(group, name, dtype_of<T>());
    out.resize(global_ids.size() * static_cast<size_t>(width));
    gather(group, name, global_ids, out.data(), out.size() * sizeof(T), threads);
  }

  int64_t node_begin() const { return node_begin_; }
  int64_t node_end() const { return node_end_; }
  int64_t edge_begin() const { return edge_begin_; }
  int64_t edge_end() const { return edge_end_; }

 private:
  using Key = std::pair<std::string, std::string>;
  struct Entry {
    RowSpace space;
    ArrayRef array;                        // without data when on disk
    std::shared_ptr<const DiskRows> disk;  // null when in memory
  };
  struct Range {
    int64_t begin, end;
    int64_t size() const { return end - begin; }
  };

  Range range(RowSpace space) const;
  const Entry& find(const std::string& group, const std::string& name, const char* op) const;
  [[noreturn]] void throw_outside(const std::string& group, const std::string& name, RowSpace space,
                                 Span<const int64_t> global_ids, size_t pos) const;
  int64_t row_width_checked(const std::string& group, const std::string& name,
                            DType expected) const;

  int64_t node_begin_, node_end_, edge_begin_, edge_end_;
  std::map<Key, Entry> entries_;
};

}  // namespace partita
