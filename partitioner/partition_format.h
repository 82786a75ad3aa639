// The on-disk partition format (see docs/data.md, "On-disk partition format").
//
//   DIR/META.json            format version, graph summary, per-part statistics
//   DIR/partition_book.bin   int64 [k+1]: part p owns global ids [book[p], book[p+1])
//   DIR/node_map.bin         int64 [N]: original node id -> global id
//   DIR/node_names.tsv       optional (WriteOptions::keep_node_names): a `#` header line, then
//                            `id<TAB>name` per original node id, the token the input had for it
//   DIR/part<p>/*.bin        the part's CSC topology, ids, features, labels, splits
//
// Every .bin is an array file (base/array_file.h): mappable, self-describing, checksummed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/array_file.h"
#include "graph/partition_book.h"
#include "partitioner/dataset.h"
#include "partitioner/partition.h"

namespace partita {

constexpr int kPartitionFormatVersion = 1;
constexpr const char* kMetaFile = "META.json";
// More parts than this is a corrupt META.json, not a cluster anyone runs.
constexpr int kMaxParts = 1 << 16;

struct PartStats {
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // in-edges of the part's nodes (CSC)
  int64_t num_train = 0, num_val = 0, num_test = 0;
  int64_t num_halo = 0;   // distinct remote sources of the part's in-edges
  int64_t num_cut_edges = 0;  // in-edges whose source lives in another part
  int64_t num_val_edges = 0, num_test_edges = 0;
};

struct PartitionMeta {
  int format_version = kPartitionFormatVersion;
  std::string graph_name;
  int num_parts = 0;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  bool is_hetero = false;
  std::vector<std::string> node_types;
  std::vector<EdgeType> edge_types;
  int64_t feature_dim = 0;       // x.bin [n, feature_dim] when > 0
  // Empty, or per node type the width of its features (Dataset::node_type_feature_dim).
  std::vector<int64_t> node_type_feature_dim;
  std::vector<std::string> transforms;  // applied to x before partitioning, in order
  int64_t edge_feature_dim = 0;  // edge_attr.bin [m, edge_feature_dim] when > 0
  bool has_labels = false;       // y.bin
  int64_t num_classes = 0;
  bool has_node_time = false, has_edge_time = false;
  bool has_edge_splits = false;  // val/test_edge_index.bin (link prediction)
  // val/test_edge_attr.bin [k, edge_feature_dim]: the held-out edges' features (a rating).
  bool has_edge_split_attr = false;
  // val/test_edge_time.bin [k]: the held-out edges' times (a graph with edge times).
  bool has_edge_split_time = false;
  // The held-out edges are also in the graph, as history (Dataset::held_out_in_graph): a
  // job may read this folder only with temporal sampling by edge time, which bounds each
  // seed strictly before its time (training/gnn_link_trainer.h).
  bool held_out_in_graph = false;
  std::string method;
  uint64_t seed = 0;
  std::vector<PartStats> parts;
  std::vector<int64_t> partition_book;

  int64_t total_cut_edges() const;
};

// Relabels nodes so each part owns a contiguous id range, builds each part's CSC (in-edges,
// every column in original-edge-id order) and writes the folder atomically: everything goes
// to a temporary sibling folder that is renamed into place only when complete. An existing
// `dir` is replaced only if `overwrite`.
struct WriteOptions {
  bool overwrite = false;
  int threads = 0;
  // Also write DIR/kNodeNamesFile from Dataset::node_names (none when they are empty), inside
  // the same atomic folder write: the id map of an input whose ids were remapped
  // (ReadOptions::remap_ids: PubMed's PMIDs, names), so results name the input's tokens.
  bool keep_node_names = false;
};
constexpr const char* kNodeNamesFile = "node_names.tsv";

// Every node's in-edges in original ids, each column in original-edge-id order: what the
// writer slices parts from (and the in-memory topology of a whole dataset).
struct InEdges {
  std::vector<int64_t> indptr;    // [N+1]
  std::vector<int64_t> src;       // [E] source of each in-edge
  std::vector<int64_t> edge_ids;  // [E] original edge id
};
InEdges build_in_edges(const Dataset& dataset, int threads = 0);

// `in_edges` may be given when already built (see partition_dataset).
PartitionMeta write_partitions(const Dataset& dataset, const std::vector<int32_t>& part_of_node,
                               const PartitionOptions& partition_options, const std::string& dir,
                               const WriteOptions& options = {}, const InEdges* in_edges = nullptr);

// assign_partitions + write_partitions.
PartitionMeta partition_dataset(const Dataset& dataset, const PartitionOptions& partition_options,
                                const std::string& dir, const WriteOptions& options = {});

// Reads and validates META.json; errors name the file and field.
PartitionMeta read_partition_meta(const std::string& dir);

// One part, memory-mapped. Optional arrays are present when META.json says so.
struct PartitionData {
  int part = 0;
  int64_t node_begin = 0, node_end = 0;  // the global ids this part owns
  MappedArray indptr;     // int64 [n+1]
  MappedArray indices;    // int64 [m]: global id of each in-edge's source
  MappedArray edge_ids;   // int64 [m]: original edge id
  MappedArray orig_ids;   // int64 [n]: original node id of each local node
  MappedArray halo;       // int64 [h]: sorted remote source ids
  MappedArray train_idx, val_idx, test_idx;  // int64, sorted global ids of local nodes
  std::optional<MappedArray> x, y, edge_attr, node_time, edge_time, node_type, edge_type;
  std::optional<MappedArray> val_edge_index, test_edge_index;  // int64 [2, k], global ids
  std::optional<MappedArray> val_edge_type, test_edge_type;    // int32 [k]
  std::optional<MappedArray> val_edge_attr, test_edge_attr;    // float32 [k, edge_feature_dim]
  std::optional<MappedArray> val_edge_time, test_edge_time;    // int64 [k]

  int64_t num_nodes() const { return node_end - node_begin; }
};

enum class Verify {
  kStructure,  // headers, shapes, index ranges (reads the topology, not the features)
  kFull,       // also every checksum: reads every byte
};

class PartitionFolder {
 public:
  explicit PartitionFolder(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const PartitionMeta& meta() const { return meta_; }
  const PartitionBook& book() const { return book_; }

  PartitionData load_part(int part, Verify verify = Verify::kStructure) const;
  MappedArray node_map() const;  // int64 [N]

  // Global checks across parts: every original node and edge appears exactly once and
  // node_map inverts orig_ids. Reads the whole topology; throws Error on the first problem.
  void verify_all(Verify verify = Verify::kFull) const;

 private:
  std::string dir_;
  PartitionMeta meta_;
  PartitionBook book_;
};

}  // namespace partita
