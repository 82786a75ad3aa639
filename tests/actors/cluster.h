// A partitioned graph served by in-process partition actors, for the actors' tests.
#pragma once

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <vector>

#include "actors/partition_actor.h"
#include "partitioner/partition_format.h"
#include "partitioner/partition_stores.h"
#include "runtime/actor_system.h"

namespace partita::testing {

inline runtime::ActorSystemOptions actor_test_options(bool networking = false) {
  runtime::ActorSystemOptions options;
  options.threads = 2;
  options.networking = networking;
  add_protocol_types(options);
  return options;
}

// Every part of a partition folder with its stores opened and an actor serving it.
class Cluster {
 public:
  Cluster(const std::string& dir, const SamplerConfig& config, bool networking = false,
          FeatureStorage storage = FeatureStorage::kAuto)
      : system_(actor_test_options(networking)), folder_(dir) {
    for (int p = 0; p < folder_.meta().num_parts; ++p) {
      topologies_.push_back(std::make_shared<const Topology>(load_topology(folder_, p)));
      features_.push_back(std::make_shared<const FeatureStore>(load_features(folder_, p, storage)));
      actors_.push_back(spawn_partition_actor(system_, topologies_.back(), features_.back(), config));
    }
  }
  // The actor system waits for every actor on destruction: stop them first.
  ~Cluster() {
    for (const auto& actor : actors_) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  }

  caf::actor_system& system() { return system_; }
  const PartitionBook& book() const { return folder_.book(); }
  int num_parts() const { return static_cast<int>(actors_.size()); }
  const partition_actor& actor(int part) const { return actors_[part]; }
  const Topology& topology(int part) const { return *topologies_[part]; }

  // Partition p's stores, shared with its actor (a sampler placed with p reads them).
  PartitionStores stores(int part) const { return {topologies_[part], features_[part]}; }
  // Every partition's actor, by part.
  std::vector<caf::actor> actors() const {
    std::vector<caf::actor> out;
    for (const auto& a : actors_) out.push_back(caf::actor_cast<caf::actor>(a));
    return out;
  }

 private:
  runtime::ActorSystem system_;
  PartitionFolder folder_;
  std::vector<std::shared_ptr<const Topology>> topologies_;
  std::vector<std::shared_ptr<const FeatureStore>> features_;
  std::vector<partition_actor> actors_;
};

}  // namespace partita::testing
