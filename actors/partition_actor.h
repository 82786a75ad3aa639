// The partition actor: serves one partition's topology and features to samplers in other
// threads or processes.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "base/span.h"
#include "graph/feature_store.h"
#include "graph/hop_sampler.h"
#include "graph/topology.h"
#include "messages/codec.h"

namespace partita {

struct PartitionActorOptions {
  // Where the feature channel's sessions listen (feature_channel.h): an address of this
  // machine that the samplers of other processes reach. Loopback unless told otherwise,
  // like the daemon: the channel has no authentication beyond its per-session tokens.
  std::string channel_host = "127.0.0.1";
  // A client must connect within this, and a started request or reply must move on.
  std::chrono::milliseconds channel_deadline{60000};
};

// Spawns an actor answering partition_actor's requests from `stores` (immutable and
// shared: co-located samplers may read them directly at the same time). Every request is
// validated (structure by the codec; node ids against the partition's range; attributes
// against the store); a bad one gets an error reply with its request id (0 if the bytes
// are unreadable) and the actor keeps serving. The actor's feature channel, opened at the
// first channel request, stops with the actor.
partition_actor spawn_partition_actor(caf::actor_system& system,
                                      std::shared_ptr<const Topology> topology,
                                      std::shared_ptr<const FeatureStore> features,
                                      SamplerConfig config, PartitionActorOptions options = {});

}  // namespace partita
