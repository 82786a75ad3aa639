#include "training/cluster_job.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "base/file_util.h"
#include "runtime/runtime.h"

namespace partita {

namespace fs = std::filesystem;

namespace {

// Nodes lost by an earlier attempt stay out until they come back as new members.
std::vector<NodeOffer> usable(const std::vector<NodeOffer>& live, const std::map<std::string, uint64_t>& lost) {
  std::vector<NodeOffer> nodes;
  for (const NodeOffer& n : live) {
    auto it = lost.find(n.address);
    if (it == lost.end() || n.member > it->second) nodes.push_back(n);
  }
  return nodes;
}

}  // namespace

JobReport run_cluster_job(const JobConfig& job, const ClusterJobOptions& options) {
  if (!options.live_nodes) throw UsageError("run_cluster_job needs a source of live nodes");
  const std::vector<int64_t> bytes = partition_bytes(job.partition_dir(), job.num_partitions);
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
      nodes = usable(options.live_nodes(), lost);
      try {
        // Without the nodes the last attempt could not reach, if the job fits without them.
        std::vector<NodeOffer> reachable;
        for (const NodeOffer& n : nodes) {
          if (!unreachable.count(n.address)) reachable.push_back(n);
        }
        if (reachable.size() < nodes.size()) {
          try {
            placement = place_partitions(bytes, reachable, job.partitions_per_node);
            nodes = std::move(reachable);
            break;
          } catch (const PlacementError&) {
            // Not without them: they may only have been closing an old connection.
          }
        }
        placement = place_partitions(bytes, nodes, job.partitions_per_node);
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
