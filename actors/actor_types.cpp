#include "actors/actor_types.h"

#include <memory>

#include "actors/partition_actor.h"
#include "actors/sampler_actor.h"
#include "base/error.h"
#include "graph/epoch_plan.h"
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

int part_number(const runtime::Settings& settings) {
  return static_cast<int>(integer_setting(settings, "part", 0, kMaxParts));
}

}  // namespace

SamplerConfig sampler_config_from(const runtime::Settings& settings) {
  SamplerConfig config;
  config.fanouts = {parse_fanouts(required_setting(settings, "fanouts"), "setting 'fanouts'")};
  config.replace = flag_setting(settings, "replace", false);
  config.disjoint = flag_setting(settings, "disjoint", false);
  return config;
}

void register_actor_types(runtime::ActorTypeRegistry& registry) {
  registry.add("partition", [](caf::actor_system& system, const runtime::Settings& settings) {
    PartitionStores stores = open_partition_stores(required_setting(settings, "dir"), part_number(settings));
    PartitionActorOptions options;
    options.channel_host = runtime::text_setting(settings, "channel_host", options.channel_host);
    return caf::actor_cast<caf::actor>(spawn_partition_actor(system, std::move(stores.topology),
                                                             std::move(stores.features), sampler_config_from(settings),
                                                             std::move(options)));
  });
  registry.add("sampler", [](caf::actor_system& system, const runtime::Settings& settings) {
    const std::string& dir = required_setting(settings, "dir");
    const int part = part_number(settings);
    // Validated before anything is opened.
    const int64_t shares = integer_setting(settings, "shares", 1, kMaxShares, 1);
    const int64_t share = integer_setting(settings, "share", 0, shares - 1, 0);
    SamplerOptions options;
    options.config = sampler_config_from(settings);
    options.prefetch = static_cast<int>(integer_setting(settings, "prefetch", 1, kMaxPrefetch, options.prefetch));
    options.deadline = std::chrono::milliseconds(
        integer_setting(settings, "deadline_ms", 1, kMaxDeadlineMs, options.deadline.count()));
    PartitionStores stores = open_partition_stores(dir, part);  // shared with a partition actor here
    PartitionFolder folder(dir);
    const PartitionData data = folder.load_part(part);
    // Share i of k: the i-th of k contiguous slices of each split.
    const auto slice = [&](const MappedArray& ids) {
      Span<const int64_t> all = ids.as<int64_t>();
      const auto [begin, end] = share_of(static_cast<int64_t>(all.size()), share, shares);
      return std::vector<int64_t>(all.begin() + begin, all.begin() + end);
    };
    SamplerSeeds seeds{slice(data.train_idx), slice(data.val_idx), slice(data.test_idx)};
    return caf::actor_cast<caf::actor>(
        spawn_sampler_actor(system, folder.book(), part, std::move(stores), std::move(seeds), std::move(options)));
  });
}

}  // namespace partita
