#include "training/cluster_job.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <caf/all.hpp>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "partitioner/partition_format.h"
#include "runtime/errors.h"
#include "runtime/runtime.h"
#include "runtime/staging/node_staging.h"
#include "training/usable_nodes.h"

namespace partita {

namespace fs = std::filesystem;

namespace {

// The parts `node` (of the runtime's) opens: those placed there, or every part for a job
// whose actors read all of them (a relational trainer's node types, temporal sampling's
// node times, a knowledge-graph trainer's triples).
std::vector<int> parts_on(const JobConfig& job, const std::vector<int>& placement, int node) {
  const bool every_part = job.model.relational() || job.temporal() ||
                          (job.link_prediction() && !job.link_gnn());
  std::vector<int> parts;
  for (int p = 0; p < static_cast<int>(placement.size()); ++p) {
    if (every_part || placement[p] == node) parts.push_back(p);
  }
  return parts;
}

// The files of the folder's top level that `job`'s actors open: META.json and the partition
// book; and the map of original ids for a knowledge-graph trainer (negatives are drawn as
// original ids, embeddings/kg_triples.h).
std::vector<std::string> top_files(const JobConfig& job) {
  std::vector<std::string> files{kMetaFile, "partition_book.bin"};
  if (job.link_prediction() && !job.link_gnn()) files.push_back("node_map.bin");
  return files;
}

// Stages on every node of `rt` the parts it hosts (as above) and returns where each node
// has them. Throws Error naming the node when a staging fails.
std::vector<std::string> stage_partitions(runtime::Runtime& rt, const JobConfig& job, const std::vector<int>& placement,
                                          const ClusterJobOptions& options) {
  const std::string dir = job.partition_dir();
  const runtime::StagedUnit top = runtime::describe_unit(dir, "", top_files(job));
  std::map<int, runtime::StagedUnit> parts;
  std::vector<std::vector<runtime::ServedUnit>> served;
  for (int node = 0; node < rt.num_nodes(); ++node) {
    served.push_back({{dir, top}});
    for (int p : parts_on(job, placement, node)) {
      const std::string name = "part" + std::to_string(p);
      if (!parts.count(p)) parts.emplace(p, runtime::describe_unit(dir + "/" + name, name));
      served.back().push_back({dir + "/" + name, parts.at(p)});
    }
  }
  const std::vector<runtime::StageOutcome> outcomes =
      runtime::stage_on_nodes(rt, served, options.staging_host, options.staging_deadline, "the job's data");
  std::vector<std::string> dirs;
  for (int node = 0; node < rt.num_nodes(); ++node) {
    const runtime::StageOutcome& outcome = outcomes[node];
    uint64_t bytes = 0;
    for (const auto& u : served[node]) bytes += u.unit.bytes();
    spdlog::info("staged {} of {} byte(s) ({} file(s)) on {}: {} unit(s) copied, {} reused from its cache{}; its cache holds {} bytes",
                 outcome.bytes_copied, bytes, outcome.files_copied, rt.node_name(node), outcome.units_copied,
                 outcome.units_reused, outcome.damaged.empty() ? "" : " (" + std::to_string(outcome.damaged.size()) + " damaged, fetched again)",
                 outcome.cache_bytes);
    if (options.on_staged) options.on_staged(rt.node_name(node), outcome);
    dirs.push_back(outcome.folder);
  }
  return dirs;
}

}  // namespace

std::string submitted_job_yaml(const std::string& job_file, const JobConfig& job) {
  if (!job.partitions.empty()) return job_to_yaml(job);  // a partition folder: the driver's path
  YAML::Node root = YAML::Load(job_to_yaml(job));
  YAML::Node data;
  try {
    data = YAML::Clone(YAML::LoadFile(job_file)["data"]);  // load_job read it: a map
  } catch (const YAML::Exception& e) {
    throw UsageError(job_file + ": " + e.what());
  }
  if (!job.dataset.empty()) data["dataset"] = job.dataset;
  root["data"] = data;
  YAML::Emitter out;
  out << root;
  return out.c_str();
}

JobReport run_cluster_job(const JobConfig& job, const ClusterJobOptions& options) {
  if (!options.live_nodes) throw UsageError("run_cluster_job needs a source of live nodes");
  const std::vector<int64_t> bytes = partition_bytes(job.partition_dir(), job.num_partitions);
  const bool staged = !options.staging_host.empty();
  // Each part's staging key: placement prefers the nodes that have it cached.
  std::vector<std::string> part_keys;
  for (int p = 0; staged && p < job.num_partitions; ++p) {
    const std::string name = "part" + std::to_string(p);
    part_keys.push_back(runtime::key_text(runtime::describe_unit(job.partition_dir() + "/" + name, name).key()));
  }
  std::map<std::string, uint64_t> lost;  // address -> the member id it had when lost
  // The nodes the last attempt could not connect to (a node dead since the head last heard
  // of it): the next placement leaves them out if the job fits without them.
  std::set<std::string> unreachable;
  RunOptions run = options.run;
  int restarts = 0;
  // While connecting fails: until when it may go on failing (max: it has not failed).
  auto connect_deadline = std::chrono::steady_clock::time_point::max();
  // The last step every trainer reported (epoch, steps done in it), for the steps a loss costs.
  int last_epoch = 0;
  int64_t last_step = 0, steps_per_epoch = 0;
  run.on_progress = [&](const JobProgress& p) {
    last_epoch = p.epoch;
    last_step = p.step;
    steps_per_epoch = p.steps;
    if (options.run.on_progress) options.run.on_progress(p);
  };
  for (;;) {
    // Place: at once on the first attempt; after a loss, waiting for nodes enough.
    std::vector<NodeOffer> nodes;
    std::vector<int> placement;
    const auto until = std::chrono::steady_clock::now() + (restarts > 0 ? options.placement_wait : std::chrono::milliseconds(0));
    for (;;) {
      nodes = usable_nodes(options.live_nodes(), lost);
      try {
        // Without the nodes the last attempt could not reach, if the job fits without them.
        std::vector<NodeOffer> reachable;
        for (const NodeOffer& n : nodes) {
          if (!unreachable.count(n.address)) reachable.push_back(n);
        }
        if (reachable.size() < nodes.size()) {
          try {
            placement = place_partitions(bytes, reachable, job.partitions_per_node, part_keys);
            nodes = std::move(reachable);
            break;
          } catch (const PlacementError&) {
            // Not without them: they may only have been closing an old connection.
          }
        }
        placement = place_partitions(bytes, nodes, job.partitions_per_node, part_keys);
        break;
      } catch (const PlacementError& e) {
        if (std::chrono::steady_clock::now() >= until) {
          if (restarts == 0) throw;
          throw PlacementError("cannot place the job again after losing a node (waited " +
                               std::to_string(options.placement_wait.count() / 1000) + " s): " + e.what());
        }
      }
      if (options.run.cancel && options.run.cancel->cancelled()) throw JobCancelled("job cancelled while waiting for nodes", 0, 0, 0);
      std::this_thread::sleep_for(options.poll);
    }
    // The runtime's nodes: the used ones, in the order of their first partition.
    std::vector<NodeOffer> used;
    std::vector<int> node_of(nodes.size(), -1);
    for (int& n : placement) {
      if (node_of[n] < 0) {
        node_of[n] = static_cast<int>(used.size());
        used.push_back(nodes[n]);
      }
      n = node_of[n];
    }
    std::vector<std::string> addresses, where;
    for (const NodeOffer& n : used) addresses.push_back(n.address);
    for (int n : placement) where.push_back(used[n].address);
    if (options.on_placed) options.on_placed(where, bytes);
    std::unique_ptr<runtime::Runtime> rt;
    try {
      rt = runtime::Runtime::connect(options.system, addresses, options.connect_timeout);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      // A node that died since the head last heard of it, or one still closing the previous
      // attempt's connection (CAF refuses a second handshake from the same process while
      // the first is open): ask again, as long as placement may wait.
      if (connect_deadline == std::chrono::steady_clock::time_point::max()) {
        connect_deadline = std::chrono::steady_clock::now() + options.placement_wait;
      }
      if (std::chrono::steady_clock::now() >= connect_deadline) throw;
      if (options.run.cancel && options.run.cancel->cancelled()) {
        throw JobCancelled("job cancelled while connecting to its nodes", 0, 0, 0);
      }
      unreachable.clear();
      for (const std::string& a : addresses) {
        if (std::string(e.what()).find(a) != std::string::npos) unreachable.insert(a);  // the error names it
      }
      spdlog::info("{}; placing the job again", e.what());
      std::this_thread::sleep_for(options.poll);
      continue;
    }
    connect_deadline = std::chrono::steady_clock::time_point::max();
    unreachable.clear();
    run.placement = placement;
    try {
      if (staged) {
        run.node_partition_dirs = stage_partitions(*rt, job, placement, options);
      }
      return run_job(*rt, job, run);
    } catch (const JobCancelled&) {
      throw;
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      const std::vector<int> gone = rt->lost_nodes();
      if (gone.empty()) throw;
      std::string names;
      for (int n : gone) {
        lost[used[n].address] = used[n].member;
        names += (names.empty() ? "" : ", ") + used[n].name + " (" + used[n].address + ")";
      }
      if (restarts >= job.max_restarts) {
        throw Error(std::string(e.what()) + "; lost " + names + " and no restart is left (train.max_restarts: " +
                    std::to_string(job.max_restarts) + ")");
      }
      ++restarts;
      // Resume from what the attempts wrote; with no checkpoint yet, start again.
      const std::optional<CheckpointPointer> point = read_checkpoint_pointer(job.output);
      run.resume = point.has_value();
      run.overwrite = !run.resume;
      const int epoch = point ? point->epoch : 0;
      const int64_t step = point ? point->step : 0;
      // The steps every trainer reported since the checkpoint, and the one in flight when
      // the loss came inside an epoch (its work is lost too).
      const int64_t in_flight = last_step < steps_per_epoch ? 1 : 0;
      const int64_t redo =
          (static_cast<int64_t>(last_epoch) - 1 - epoch) * steps_per_epoch + last_step - step + in_flight;
      const std::string what = "lost " + names + "; restart " + std::to_string(restarts) + " of at most " +
                               std::to_string(job.max_restarts) + ": resuming after epoch " + std::to_string(epoch) +
                               (step > 0 ? " and step " + std::to_string(step) + " of the next" : "") + ", " +
                               std::to_string(std::max<int64_t>(0, redo)) + " step(s) to re-do";
      spdlog::warn("{} ({})", what, e.what());
      if (options.on_restart) options.on_restart(restarts, what);
    }
  }
}

}  // namespace partita
