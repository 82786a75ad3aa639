// The native half of partita.pyg.FeatureStore and partita.pyg.GraphStore
// (python/partita/stores.py): node attributes fetched from the partition actors that own
// them, and the graph's edges assembled from the folder's parts, both in the dataset's own
// (original) ids.
//
// A FeatureLookup spawns one partition actor per part through the embedded runtime, placed
// as a job places them (part p on node p mod D: in this process, or on a cluster's nodes),
// and answers "the rows of attribute `name` of these nodes" with one feature request per
// part that owns any of them (protocol.h: feature), sent to all of them at once, each reply
// scattered back into the caller's order. A request carries at most kMaxRequestBytes of
// rows (a partition refuses replies over 1 GiB); more rows are asked in several.
//
// Thread-safe; requests of concurrent callers are served one call after the other. A
// caller blocked on a reply is released at once by close() and by the runtime's shutdown,
// after which every call throws: Error once closed, RuntimeClosed once the runtime stopped.
#pragma once

#include <caf/actor.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "python/embedded_runtime.h"
#include "python/graph_handle.h"

namespace partita::python {

// One node attribute the partitions hold (group "node" of their feature stores).
struct NodeAttribute {
  std::string name;                // "x", "y", "time"
  DType dtype = DType::kFloat32;
  std::vector<int64_t> row_shape;  // of one node's row: [feature_dim] for x, [] for y
  size_t row_bytes = 0;
};

class FeatureLookup : public RuntimeUser {
 public:
  // Rows asked in one request at most (bytes of rows), under the partition's 1 GiB limit.
  static constexpr size_t kMaxRequestBytes = size_t{256} << 20;

  // Spawns the partition actors of `graph` (`features`: where they keep the attributes,
  // partition_stores.h) and asks part 0 which of x, y and time it has (a request of no
  // rows each: dtype and row shape). `deadline` bounds every request. Throws RuntimeClosed
  // when the runtime is not running, UsageError for a bad option, Error naming the
  // partition when an actor fails to start or answer.
  FeatureLookup(std::shared_ptr<const GraphHandle> graph, std::chrono::milliseconds deadline,
                const std::string& features);
  ~FeatureLookup() override;
  FeatureLookup(const FeatureLookup&) = delete;
  FeatureLookup& operator=(const FeatureLookup&) = delete;

  const std::vector<NodeAttribute>& attributes() const { return attributes_; }
  // The attribute named `name`; throws UsageError naming it and the ones there are.
  const NodeAttribute& attribute(const std::string& name) const;

  // The rows of `ids` (original node ids; repeats and any order allowed) of attribute
  // `name`, row after row, into `out` (resized to ids x row bytes). Blocks up to the
  // deadline; call without holding Python's lock. Throws UsageError naming the first id
  // outside the graph (and its position) or an unknown attribute, Error naming the
  // partition whose request failed.
  void get(const std::string& name, const std::vector<int64_t>& ids, std::vector<char>& out);

  // Feature requests sent to each part so far (the zero-row ones of the constructor not
  // counted).
  std::vector<int64_t> requests_per_part() const;

  // Stops the actors; every later call throws Error. Idempotent.
  void close();
  void close_for_shutdown() override;

 private:
  void close_with(const std::string& why, bool runtime_gone);
  void check_open() const;
  // Sends `requests[k]` (a feature request of `counts[k]` rows) to the actor of
  // `parts[k]`, all at once, and hands each reply's rows to `take(k, rows)`; Error naming
  // the first part that failed.
  template <class Take>
  void ask(const std::vector<int>& parts, std::vector<std::vector<char>>& requests, const std::vector<size_t>& counts,
           const NodeAttribute* expected, Take take);

  std::shared_ptr<const GraphHandle> graph_;
  const std::chrono::milliseconds deadline_;
  std::vector<NodeAttribute> attributes_;
  std::unique_ptr<std::atomic<int64_t>[]> requests_;
  uint64_t next_request_id_ = 1;

  mutable std::mutex mutex_;  // held by get() while waiting
  caf::actor_system* system_ = nullptr;  // while open
  mutable std::mutex actors_mutex_;      // never held while waiting; after mutex_ when both are
  std::string closed_;
  bool runtime_gone_ = false;
  caf::actor owner_;
  std::vector<caf::actor> partitions_;  // by part
};

// The graph's edges as [2, num_edges] int64, row 0 the sources and row 1 the destinations,
// in original node ids, edge e in column e (original edge ids): the dataset's edge_index,
// whatever the number of parts. Read from the folder's parts (their CSC in-edges); throws
// Error naming the file when an original edge id is missing or repeated.
std::vector<int64_t> original_edge_index(const GraphHandle& graph);

}  // namespace partita::python
