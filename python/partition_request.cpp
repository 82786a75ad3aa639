#include "python/partition_request.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "base/error.h"
#include "base/staging_dir.h"
#include "partitioner/feature_transforms.h"
#include "partitioner/partition.h"
#include "partitioner/readers.h"
#include "partitioner/splits.h"

namespace partita::python {
namespace {

// The index of the edge type `names` ([source, relation, destination]) of `d`; -1 for none.
int32_t holdout_edge_type(const Dataset& d, const std::vector<std::string>& names) {
  if (names.empty()) return -1;
  if (names.size() != 3) throw UsageError("holdout: edge_type must name (source type, relation, destination type)");
  const auto named = [](const std::string& s, const std::string& r, const std::string& d) {
    return "(" + s + ", " + r + ", " + d + ")";
  };
  std::string known;
  for (size_t t = 0; t < d.edge_types.size(); ++t) {
    const EdgeType& e = d.edge_types[t];
    if (e.src_type == names[0] && e.relation == names[1] && e.dst_type == names[2]) return static_cast<int32_t>(t);
    known += (known.empty() ? "" : ", ") + named(e.src_type, e.relation, e.dst_type);
  }
  throw UsageError("holdout: edge_type " + named(names[0], names[1], names[2]) + " is not one of the graph's" +
                   (known.empty() ? " (it has none)" : ": " + known));
}

}  // namespace

PartitionMeta partition_to_folder(const PartitionRequest& r) {
  if (r.num_parts < 1) throw UsageError("num_parts " + std::to_string(r.num_parts) + " (must be at least 1)");
  if (r.output.empty()) throw UsageError("output: the partition folder's path is empty");
  PartitionOptions options;
  options.num_parts = r.num_parts;
  options.method = parse_partition_method(r.method);
  options.seed = r.seed;
  options.balance_train = r.balance_train;
  options.threads = r.threads;
  std::vector<FeatureTransform> transforms;
  for (const std::string& t : r.transforms) transforms.push_back(parse_feature_transform(t, "transforms"));
  // An unusable output fails now, not after reading and partitioning.
  std::error_code ec;
  if (!r.overwrite && std::filesystem::exists(r.output, ec)) {
    throw UsageError("output '" + r.output + "' already exists (pass overwrite=True to replace it)");
  }
  StagingDir::check_target(r.output, r.overwrite, kMetaFile);
  ReadOptions read;
  read.split_seed = r.split_seed;
  Dataset dataset = read_dataset(r.format, r.input, read);
  spdlog::info("read {} ({}): {} nodes, {} directed edges", r.input, r.format, dataset.num_nodes,
               dataset.num_edges());
  if (r.holdout_val > 0 || r.holdout_test > 0) {
    hold_out_edges(dataset, r.holdout_val, r.holdout_test, r.split_seed, r.holdout_by_time,
                   holdout_edge_type(dataset, r.holdout_edge_type),
                   r.holdout_keep_history ? HeldOut::kKeepAsHistory : HeldOut::kLeaveGraph);
  } else if (r.holdout_by_time || r.holdout_keep_history || !r.holdout_edge_type.empty()) {
    throw UsageError("holdout: 'by', 'history' and 'edge_type' say how links are held out; "
                     "give a 'val' or 'test' fraction too");
  }
  apply_feature_transforms(dataset, transforms);
  WriteOptions write;
  write.overwrite = r.overwrite;
  write.threads = r.threads;
  return partition_dataset(dataset, options, r.output, write);
}

}  // namespace partita::python
