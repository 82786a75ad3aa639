#include "partitioner/partition_stores.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "base/resident_array.h"
#include "base/system_memory.h"
#include "graph/disk_rows.h"

namespace partita {

namespace {

std::vector<EdgeTypeEnds> edge_type_ends(const std::vector<std::string>& node_types,
                                         const std::vector<EdgeType>& edge_types) {
  auto index_of = [&](const std::string& name) {
    return static_cast<int32_t>(std::find(node_types.begin(), node_types.end(), name) - node_types.begin());
  };
  std::vector<EdgeTypeEnds> ends;
  for (const auto& t : edge_types) ends.push_back({index_of(t.src_type), index_of(t.dst_type)});
  return ends;
}

// Homogeneous graphs use the CSC as stored; heterogeneous ones get one CSC per edge type.
void set_columns(Topology::Parts& parts, ArrayRef indptr, ArrayRef indices, ArrayRef edge_type,
                 const std::vector<std::string>& node_types, const std::vector<EdgeType>& edge_types) {
  if (edge_types.empty() || node_types.empty()) {
    parts.csc.push_back({std::move(indptr), std::move(indices), {}});
    return;
  }
  parts.csc = split_by_edge_type(indptr.as<int64_t>(), indices.as<int64_t>(), edge_type.as<int32_t>(),
                                 static_cast<int>(edge_types.size()), parts.edge_begin);
  parts.edge_type_ends = edge_type_ends(node_types, edge_types);
}

// The arrays every sampled node reads at random (its column bounds, its original id, its
// picks' sources and edge ids), copied into huge-page memory where they are not there yet.
void sampling_arrays_to_huge_pages(Topology::Parts& parts) {
  parts.orig_node_ids = copy_resident(parts.orig_node_ids);
  for (CscColumns& c : parts.csc) {
    c.indptr = copy_resident(c.indptr);
    c.indices = copy_resident(c.indices);
    c.edge_ids = copy_resident(c.edge_ids);
  }
}

}  // namespace

Topology load_topology(const PartitionFolder& folder, int part) {
  PartitionData data = folder.load_part(part, Verify::kStructure);
  const PartitionMeta& meta = folder.meta();
  Topology::Parts parts;
  parts.book = folder.book();
  parts.part = part;
  for (int p = 0; p < part; ++p) parts.edge_begin += meta.parts[p].num_edges;
  const bool hetero = !meta.node_types.empty() && !meta.edge_types.empty();
  // Heterogeneous columns are rebuilt per edge type: an indptr each, and the edge ids beside
  // the indices (set_columns).
  const uint64_t column_bytes =
      hetero ? meta.edge_types.size() * data.indptr.data_bytes() + 2 * data.indices.data_bytes()
             : data.indptr.data_bytes() + data.indices.data_bytes();
  const uint64_t sampling_bytes = data.orig_ids.data_bytes() + column_bytes;
  const uint64_t available = available_memory_bytes();
  const bool resident = sampling_bytes <= available / 2;
  spdlog::debug("partition {} of {}: {} MiB of sampling arrays, {} MiB of memory available: {}", part, folder.dir(),
                sampling_bytes >> 20, available >> 20, resident ? "huge-page memory" : "mapped");
  const auto open = [&](MappedArray& a) {
    return resident && !hetero ? load_resident(std::move(a)) : ArrayRef::from_mapped(std::move(a));
  };
  parts.orig_node_ids = open(data.orig_ids);
  parts.orig_edge_ids = ArrayRef::from_mapped(std::move(data.edge_ids));
  if (hetero) parts.node_type = ArrayRef::from_mapped(std::move(*data.node_type));
  set_columns(parts, open(data.indptr), open(data.indices),
              hetero ? ArrayRef::from_mapped(std::move(*data.edge_type)) : ArrayRef{}, meta.node_types,
              meta.edge_types);
  // Heterogeneous columns were rebuilt per edge type in vectors: those go now.
  if (resident && hetero) sampling_arrays_to_huge_pages(parts);
  return Topology(std::move(parts));
}

const char* feature_storage_name(FeatureStorage storage) {
  switch (storage) {
    case FeatureStorage::kMemory:
      return "memory";
    case FeatureStorage::kMapped:
      return "mapped";
    case FeatureStorage::kDisk:
      return "disk";
    case FeatureStorage::kAuto:
      break;
  }
  return "auto";
}

FeatureStorage parse_feature_storage(const std::string& text, const std::string& what) {
  for (FeatureStorage s : {FeatureStorage::kAuto, FeatureStorage::kMemory, FeatureStorage::kMapped, FeatureStorage::kDisk}) {
    if (text == feature_storage_name(s)) return s;
  }
  throw UsageError(what + ": '" + text + "' is not a feature storage (auto, memory, mapped or disk)");
}

FeatureStorage resolve_feature_storage(FeatureStorage storage, uint64_t attribute_bytes, uint64_t available_bytes) {
  if (storage != FeatureStorage::kAuto) return storage;
  return attribute_bytes <= available_bytes / 2 ? FeatureStorage::kMemory : FeatureStorage::kMapped;
}

FeatureStore load_features(const PartitionFolder& folder, int part, FeatureStorage storage) {
  PartitionData data = folder.load_part(part, Verify::kStructure);
  const PartitionMeta& meta = folder.meta();
  int64_t edge_begin = 0;
  for (int p = 0; p < part; ++p) edge_begin += meta.parts[p].num_edges;
  FeatureStore store(data.node_begin, data.node_end, edge_begin, edge_begin + meta.parts[part].num_edges);
  uint64_t bytes = 0;
  for (const auto* a : {&data.x, &data.y, &data.node_time, &data.node_type, &data.edge_attr, &data.edge_time}) {
    if (*a) bytes += (*a)->data_bytes();
  }
  if (storage == FeatureStorage::kAuto) {
    const uint64_t available = available_memory_bytes();
    storage = resolve_feature_storage(storage, bytes, available);
    spdlog::debug("partition {} of {}: {} MiB of attributes, {} MiB of memory available: {}", part, folder.dir(),
                  bytes >> 20, available >> 20, feature_storage_name(storage));
  }
  auto put = [&](const char* group, const char* name, RowSpace space, std::optional<MappedArray>& a) {
    if (!a) return;
    store.put(group, name, space,
              storage == FeatureStorage::kMapped ? ArrayRef::from_mapped(std::move(*a)) : load_resident(std::move(*a)));
  };
  // The feature matrices: on disk when asked, else as the rest.
  auto put_matrix = [&](const char* group, const char* name, RowSpace space, std::optional<MappedArray>& a) {
    if (!a || storage != FeatureStorage::kDisk) return put(group, name, space, a);
    auto rows = std::make_shared<const DiskRows>(std::move(*a));
    spdlog::debug("partition {} of {}: {}/{} on disk ({}, {}; {} bytes a row)", part, folder.dir(), group, name,
                  disk_backend_name(rows->backend()), rows->direct() ? "O_DIRECT" : "buffered", rows->request_bytes());
    store.put_disk(group, name, space, std::move(rows));
  };
  put_matrix("node", "x", RowSpace::kNode, data.x);
  put("node", "y", RowSpace::kNode, data.y);
  put("node", "time", RowSpace::kNode, data.node_time);
  put("node", "type", RowSpace::kNode, data.node_type);
  put_matrix("edge", "edge_attr", RowSpace::kEdge, data.edge_attr);
  put("edge", "time", RowSpace::kEdge, data.edge_time);
  return store;
}

FeatureStore features_from_dataset(const Dataset& d) {
  FeatureStore store(0, d.num_nodes, 0, d.num_edges());
  if (d.feature_dim > 0) store.put("node", "x", RowSpace::kNode, ArrayRef::from_vector(d.x, {d.num_nodes, d.feature_dim}));
  if (!d.y.empty()) store.put("node", "y", RowSpace::kNode, ArrayRef::from_vector(d.y));
  if (!d.node_time.empty()) store.put("node", "time", RowSpace::kNode, ArrayRef::from_vector(d.node_time));
  if (!d.node_type.empty()) store.put("node", "type", RowSpace::kNode, ArrayRef::from_vector(d.node_type));
  if (d.edge_feature_dim > 0 || !d.edge_time.empty()) {
    // Edge rows follow the CSC (global edge id = position), as in a partition folder.
    InEdges in = build_in_edges(d);
    if (d.edge_feature_dim > 0) {
      std::vector<float> attr(d.edge_attr.size());
      for (size_t k = 0; k < in.edge_ids.size(); ++k) {
        std::copy_n(d.edge_attr.begin() + in.edge_ids[k] * d.edge_feature_dim, d.edge_feature_dim,
                    attr.begin() + static_cast<int64_t>(k) * d.edge_feature_dim);
      }
      store.put("edge", "edge_attr", RowSpace::kEdge, ArrayRef::from_vector(std::move(attr), {d.num_edges(), d.edge_feature_dim}));
    }
    if (!d.edge_time.empty()) {
      std::vector<int64_t> time(in.edge_ids.size());
      for (size_t k = 0; k < time.size(); ++k) time[k] = d.edge_time[in.edge_ids[k]];
      store.put("edge", "time", RowSpace::kEdge, ArrayRef::from_vector(std::move(time)));
    }
  }
  return store;
}

Topology topology_from_dataset(const Dataset& d, TopologyMemory memory) {
  InEdges in = build_in_edges(d);
  Topology::Parts parts;
  parts.book = PartitionBook({0, d.num_nodes});
  std::vector<int64_t> identity(d.num_nodes);
  for (int64_t v = 0; v < d.num_nodes; ++v) identity[v] = v;
  parts.orig_node_ids = ArrayRef::from_vector(std::move(identity));
  bool hetero = !d.node_type_names.empty() && !d.edge_types.empty();
  ArrayRef edge_type;
  if (hetero) {
    parts.node_type = ArrayRef::from_vector(d.node_type);
    std::vector<int32_t> types(in.edge_ids.size());
    for (size_t k = 0; k < types.size(); ++k) types[k] = d.edges.type[in.edge_ids[k]];
    edge_type = ArrayRef::from_vector(std::move(types));
  }
  parts.orig_edge_ids = ArrayRef::from_vector(std::move(in.edge_ids));
  set_columns(parts, ArrayRef::from_vector(std::move(in.indptr)), ArrayRef::from_vector(std::move(in.src)),
              edge_type, d.node_type_names, d.edge_types);
  if (memory == TopologyMemory::kHugePages) sampling_arrays_to_huge_pages(parts);
  return Topology(std::move(parts));
}

PartitionStores open_partition_stores(const std::string& dir, int part, FeatureStorage storage) {
  // Weak entries: the stores live as long as an actor or sampler holds them, not longer.
  // An entry is reused only while the folder is the one it was opened from (a job may
  // rewrite OUTPUT/partitions while an older job's actors still hold the old mappings):
  // META.json's inode and modification time tell, as the writer replaces the whole folder.
  struct Identity {
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Identity& o) const { return inode == o.inode && mtime_ns == o.mtime_ns; }
  };
  struct Entry {
    Identity identity;
    std::weak_ptr<const Topology> topology;
    std::weak_ptr<const FeatureStore> features;
  };
  const auto identity_of = [](const std::string& folder) {
    struct stat st {};
    Identity id;
    if (::stat((folder + "/META.json").c_str(), &st) == 0) {
      id.inode = st.st_ino;
      id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    }
    return id;
  };
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, Entry> open;
  std::error_code ec;
  std::string key_dir = std::filesystem::weakly_canonical(dir, ec).string();
  if (ec) key_dir = dir;
  const Identity identity = identity_of(dir);
  std::lock_guard<std::mutex> lock(mutex);
  Entry& entry = open[{key_dir, part}];
  PartitionStores stores{entry.topology.lock(), entry.features.lock()};
  if (stores.topology && stores.features && entry.identity == identity) return stores;
  PartitionFolder folder(dir);
  if (part < 0 || part >= folder.meta().num_parts) {
    throw UsageError("partition folder " + dir + " has " + std::to_string(folder.meta().num_parts) +
                     " parts, there is no part " + std::to_string(part));
  }
  stores.topology = std::make_shared<const Topology>(load_topology(folder, part));
  stores.features = std::make_shared<const FeatureStore>(load_features(folder, part, storage));
  entry = {identity, stores.topology, stores.features};
  return stores;
}

}  // namespace partita
