#include "actors/actor_types.h"

#include <memory>

#include "actors/partition_actor.h"
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

}  // namespace

SamplerConfig sampler_config_from(const runtime::Settings& settings) {
  SamplerConfig config;
  config.fanouts = {parse_fanouts(required(settings, "fanouts"), "setting 'fanouts'")};
  config.replace = flag(settings, "replace");
  config.disjoint = flag(settings, "disjoint");
  return config;
}

void register_actor_types(runtime::ActorTypeRegistry& registry) {
  registry.add("partition", [](caf::actor_system& system, const runtime::Settings& settings) {
    PartitionFolder folder(required(settings, "dir"));
    const int part = part_number(settings);
    auto topology = std::make_shared<const Topology>(load_topology(folder, part));
    auto features = std::make_shared<const FeatureStore>(load_features(folder, part));
    return caf::actor_cast<caf::actor>(
        spawn_partition_actor(system, std::move(topology), std::move(features), sampler_config_from(settings)));
  });
}

}  // namespace partita
