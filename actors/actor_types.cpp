#include "actors/actor_types.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <iterator>
#include <tuple>
#include <vector>

#include "actors/partition_actor.h"
#include "actors/sampler_actor.h"
#include "base/error.h"
#include "base/system_memory.h"
#include "graph/epoch_plan.h"
#include "graph/time_order.h"
#include "partitioner/partition_stores.h"
#include "runtime/settings.h"

namespace partita {

namespace {

using runtime::flag_setting;
using runtime::integer_setting;
using runtime::required_setting;

// Bounds that no sane job reaches, so that a bad setting is named rather than obeyed.
constexpr int64_t kMaxParts = 1 << 20;
constexpr int64_t kMaxShares = 1 << 10;        // trainers per partition
constexpr int64_t kMaxPrefetch = 64;           // batches in flight: each holds tens of MB
constexpr int64_t kMaxDeadlineMs = 3600000;    // an hour
constexpr int64_t kMaxCacheMb = int64_t{1} << 20;  // a TiB

FeatureStorage storage_setting(const runtime::Settings& settings) {
  return parse_feature_storage(runtime::text_setting(settings, "features", "auto"), "setting 'features'");
}

// The cache of other partitions' rows for the samplers of partition `part` of `dir` in this
// process: one per node while a sampler holds it (samplers of one partition share it), null
// for a budget of 0.
std::shared_ptr<RowCache> node_cache(const std::string& dir, int part, const PartitionStores& stores,
                                     const FeatureNames& names, int64_t mb, CachePolicy policy) {
  if (mb == 0) return nullptr;
  // The cache's memory is taken when it is made: a budget beyond what the machine has free
  // would end the daemon (OOM) instead of naming the setting.
  const uint64_t budget = static_cast<uint64_t>(mb) << 20;
  const uint64_t available = available_memory_bytes();
  if (available > 0 && budget > available) {
    throw UsageError("setting 'feature_cache_mb': " + std::to_string(mb) + " MiB is more than this machine's " +
                     std::to_string(available >> 20) + " MiB of available memory");
  }
  std::vector<size_t> columns;
  for (const std::string* name : {&names.x, &names.y}) {
    const ArrayRef* a = name->empty() ? nullptr : stores.features->get("node", *name);
    if (a != nullptr) columns.push_back(a->row_bytes());
  }
  // Samplers that want the same rows of the same partition share one cache.
  using Key = std::tuple<std::string, int, int64_t, int, std::vector<size_t>>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<RowCache>> caches;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = caches.begin(); it != caches.end();) {  // caches no sampler holds any more
    it = it->second.expired() ? caches.erase(it) : std::next(it);
  }
  std::weak_ptr<RowCache>& entry = caches[Key{dir, part, mb, static_cast<int>(policy), columns}];
  if (auto held = entry.lock()) return held;
  auto cache = make_remote_row_cache(policy, budget, columns, *stores.topology);
  entry = cache;
  return cache;
}

// Temporal sampling's times: the node times of the whole graph (a neighbour's bound, and
// a node seed's time), gathered from every part of `dir`, and the part's own edge times;
// and the part's time order, built once per process for a part and mode, so a partition
// actor and a sampler actor of the same part share it (graph/time_order.h).
// Throws UsageError naming the setting when the folder lacks the times its mode reads.
void attach_times(SamplerConfig& config, const std::string& dir, const PartitionStores& stores) {
  if (config.temporal == TemporalMode::kNone) return;
  const PartitionFolder folder(dir);
  if (folder.meta().has_node_time) {
    std::vector<int64_t> times;
    times.reserve(static_cast<size_t>(folder.meta().num_nodes));
    for (int p = 0; p < folder.meta().num_parts; ++p) {
      const PartitionData data = folder.load_part(p);
      Span<const int64_t> part = data.node_time->as<int64_t>();
      times.insert(times.end(), part.begin(), part.end());
    }
    config.node_time = ArrayRef::from_vector(std::move(times));
  } else if (config.temporal == TemporalMode::kNodeTime) {
    throw UsageError("setting 'temporal': node, but " + dir + " has no node times");
  }
  if (const ArrayRef* edge = stores.features->get("edge", "time")) {
    config.edge_time = *edge;
  } else if (config.temporal == TemporalMode::kEdgeTime) {
    throw UsageError("setting 'temporal': edge, but " + dir + " has no edge times");
  }
  // Keyed by the topology object too: a folder partitioned again is opened as another.
  using Key = std::tuple<std::string, int, int, const Topology*>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const TimeOrder>> orders;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = orders.begin(); it != orders.end();) {  // orders no config holds any more
    it = it->second.expired() ? orders.erase(it) : std::next(it);
  }
  std::weak_ptr<const TimeOrder>& entry = orders[Key{dir, stores.topology->part(), static_cast<int>(config.temporal), stores.topology.get()}];
  config.time_order = entry.lock();
  config.order_by_time(*stores.topology);  // builds it unless the shared one fits
  entry = config.time_order;
}

int part_number(const runtime::Settings& settings) {
  return static_cast<int>(integer_setting(settings, "part", 0, kMaxParts));
}

}  // namespace

void require_partition_folder(const std::string& dir, const std::string& setting) {
  std::error_code ignored;
  // One answer for every kind of failure: the error must not say whether `dir` exists.
  if (!std::filesystem::is_regular_file(std::filesystem::path(dir) / "META.json", ignored)) {
    throw UsageError("setting '" + setting + "': '" + dir + "' is not a partition folder on this node");
  }
}

std::string partition_dir_setting(const runtime::Settings& settings) {
  const std::string& dir = runtime::path_setting(settings, "dir");
  require_partition_folder(dir, "dir");
  return dir;
}

SamplerConfig sampler_config_from(const runtime::Settings& settings, const Topology& topology) {
  SamplerConfig config;
  // One list for every edge type (PyG's num_neighbors given as a list: the hetero kernel
  // samples that many neighbours per node and hop over each edge type ending in the node),
  // or one per edge type (as a dict).
  config.fanouts = parse_fanout_table(required_setting(settings, "fanouts"), std::max(1, topology.num_edge_types()),
                                      "setting 'fanouts'");
  config.replace = flag_setting(settings, "replace", false);
  config.disjoint = flag_setting(settings, "disjoint", false);
  config.hop_independent = flag_setting(settings, "hop_independent", false);
  const std::string temporal = runtime::text_setting(settings, "temporal", "none");
  if (temporal == "node") {
    config.temporal = TemporalMode::kNodeTime;
  } else if (temporal == "edge") {
    config.temporal = TemporalMode::kEdgeTime;
  } else if (temporal != "none") {
    throw UsageError("setting 'temporal': '" + temporal + "' is not one of: none, node, edge");
  }
  const std::string strategy = runtime::text_setting(settings, "temporal_strategy", "uniform");
  if (strategy == "last") {
    config.temporal_strategy = TemporalStrategy::kLast;
  } else if (strategy != "uniform") {
    throw UsageError("setting 'temporal_strategy': '" + strategy + "' is not one of: uniform, last");
  }
  return config;
}

void register_actor_types(runtime::ActorTypeRegistry& registry) {
  registry.add("partition", [](caf::actor_system& system, const runtime::Settings& settings) {
    const std::string dir = partition_dir_setting(settings);
    PartitionStores stores = open_partition_stores(dir, part_number(settings), storage_setting(settings));
    SamplerConfig config = sampler_config_from(settings, *stores.topology);
    attach_times(config, dir, stores);
    PartitionActorOptions options;
    options.channel_host = runtime::text_setting(settings, "channel_host", options.channel_host);
    return caf::actor_cast<caf::actor>(spawn_partition_actor(system, std::move(stores.topology),
                                                             std::move(stores.features), std::move(config),
                                                             std::move(options)));
  });
  registry.add("sampler", [](caf::actor_system& system, const runtime::Settings& settings) {
    const std::string dir = partition_dir_setting(settings);
    const int part = part_number(settings);
    // Validated before anything is opened.
    const int64_t shares = integer_setting(settings, "shares", 1, kMaxShares, 1);
    const int64_t share = integer_setting(settings, "share", 0, shares - 1, 0);
    const FeatureStorage storage = storage_setting(settings);
    const int64_t cache_mb = integer_setting(settings, "feature_cache_mb", 0, kMaxCacheMb, 0);
    const CachePolicy policy =
        parse_cache_policy(runtime::text_setting(settings, "feature_cache_policy", "degree"), "setting 'feature_cache_policy'");
    SamplerOptions options;
    // Link prediction reads no labels (and the graph may have none).
    if (!flag_setting(settings, "labels", true)) options.names.y.clear();
    options.prefetch = static_cast<int>(integer_setting(settings, "prefetch", 1, kMaxPrefetch, options.prefetch));
    options.deadline = std::chrono::milliseconds(
        integer_setting(settings, "deadline_ms", 1, kMaxDeadlineMs, options.deadline.count()));
    PartitionStores stores = open_partition_stores(dir, part, storage);  // shared with a partition actor here
    options.config = sampler_config_from(settings, *stores.topology);
    attach_times(options.config, dir, stores);
    // A featureless graph (an RDF graph's one-hot input): batches carry no feature rows.
    if (stores.features->get("node", options.names.x) == nullptr) options.names.x.clear();
    options.cache = node_cache(dir, part, stores, options.names, cache_mb, policy);
    PartitionFolder folder(dir);
    const PartitionData data = folder.load_part(part);
    // Share i of k: the i-th of k contiguous slices of each split.
    const auto slice = [&](const MappedArray& ids) {
      Span<const int64_t> all = ids.as<int64_t>();
      const auto [begin, end] = share_of(static_cast<int64_t>(all.size()), share, shares);
      return std::vector<int64_t>(all.begin() + begin, all.begin() + end);
    };
    SamplerSeeds seeds{slice(data.train_idx), slice(data.val_idx), slice(data.test_idx)};
    const std::string order = runtime::text_setting(settings, "seed_order", "id");
    if (order == "time") {
      // Training batches cut in time order: the seeds by their node time (ties by id).
      if (options.config.node_time.empty()) {
        throw UsageError("setting 'seed_order': time, but " + dir + " has no node times");
      }
      Span<const int64_t> time = options.config.node_time.as<int64_t>();
      for (std::vector<int64_t>* split : {&seeds.train, &seeds.val, &seeds.test}) {
        std::stable_sort(split->begin(), split->end(), [&](int64_t a, int64_t b) { return time[a] < time[b]; });
      }
    } else if (order != "id") {
      throw UsageError("setting 'seed_order': '" + order + "' is not one of: id, time");
    }
    return caf::actor_cast<caf::actor>(
        spawn_sampler_actor(system, folder.book(), part, std::move(stores), std::move(seeds), std::move(options)));
  });
}

}  // namespace partita
