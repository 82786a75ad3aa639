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
  if (r.holdout_val > 0 || r.holdout_test > 0) hold_out_edges(dataset, r.holdout_val, r.holdout_test, r.split_seed);
  apply_feature_transforms(dataset, transforms);
  WriteOptions write;
  write.overwrite = r.overwrite;
  write.threads = r.threads;
  return partition_dataset(dataset, options, r.output, write);
}

}  // namespace partita::python
