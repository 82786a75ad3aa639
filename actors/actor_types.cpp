#include "actors/actor_types.h"

#include <memory>

#include "runtime/collective/allreduce_member.h"
#include "actors/partition_actor.h"
#include "actors/sampler_actor.h"
#include "base/error.h"
#include "partitioner/partition_stores.h"

namespace partita {

namespace {

const std::string& required(const runtime::Settings& settings, const std::string& key) {
  auto it = settings.find(key);
  if (it == settings.end() || it->second.empty()) throw UsageError("setting '" + key + "' is missing");
  return it->second;
}

bool flag(const runtime::Settings& settings, const std::string& key) {
  auto it = settings.find(key);
  if (it == settings.end() || it->second == "false") return false;
  if (it->second == "true") return true;
  throw UsageError("setting '" + key + "': '" + it->second + "' is not true or false");
}

int part_number(const runtime::Settings& settings) {
  const std::string& text = required(settings, "part");
  size_t used = 0;
  int part = -1;
  try {
    part = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || part < 0) throw UsageError("setting 'part': '" + text + "' is not a part number");
  return part;
}

// An optional whole-number setting of at least `min`.
int64_t number(const runtime::Settings& settings, const std::string& key, int64_t fallback, int64_t min) {
  auto it = settings.find(key);
  if (it == settings.end()) return fallback;
  size_t used = 0;
  int64_t value = min - 1;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size() || value < min) {
    throw UsageError("setting '" + key + "': '" + it->second + "' is not a number of at least " + std::to_string(min));
  }
  return value;
}

}  // namespace

SamplerConfig sampler_config_from(const runtime::Settings& settings) {
  SamplerConfig config;
  config.fanouts = {parse_fanouts(required(settings, "fanouts"), "setting 'fanouts'")};
  config.replace = flag(settings, "replace");
  config.disjoint = flag(settings, "disjoint");
  return config;
}

void register_actor_types(runtime::ActorTypeRegistry& registry) {
  registry.add("allreduce", [](caf::actor_system& system, const runtime::Settings& settings) {
    return caf::actor_cast<caf::actor>(runtime::spawn_allreduce_member(system, runtime::allreduce_config_from(settings)));
  });
  registry.add("partition", [](caf::actor_system& system, const runtime::Settings& settings) {
    PartitionStores stores = open_partition_stores(required(settings, "dir"), part_number(settings));
    PartitionActorOptions options;
    if (auto it = settings.find("channel_host"); it != settings.end()) options.channel_host = it->second;
    return caf::actor_cast<caf::actor>(spawn_partition_actor(system, std::move(stores.topology),
                                                             std::move(stores.features), sampler_config_from(settings),
                                                             std::move(options)));
  });
  registry.add("sampler", [](caf::actor_system& system, const runtime::Settings& settings) {
    const std::string& dir = required(settings, "dir");
    const int part = part_number(settings);
    PartitionStores stores = open_partition_stores(dir, part);  // shared with a partition actor here
    PartitionFolder folder(dir);
    const PartitionData data = folder.load_part(part);
    Span<const int64_t> train = data.train_idx.as<int64_t>();
    SamplerOptions options;
    options.config = sampler_config_from(settings);
    options.prefetch = static_cast<int>(number(settings, "prefetch", options.prefetch, 1));
    options.deadline = std::chrono::milliseconds(number(settings, "deadline_ms", options.deadline.count(), 1));
    return caf::actor_cast<caf::actor>(spawn_sampler_actor(system, folder.book(), part, std::move(stores),
                                                           std::vector<int64_t>(train.begin(), train.end()),
                                                           std::move(options)));
  });
}

}  // namespace partita
