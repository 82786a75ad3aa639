// The partition actor: serves one partition's topology and features to samplers in other
// threads or processes.
#pragma once

#include <caf/fwd.hpp>

#include <memory>

#include "actors/protocol.h"
#include "graph/feature_store.h"
#include "graph/neighbor_sampler.h"
#include "graph/topology.h"

namespace partita {

// Spawns an actor answering partition_actor's requests from `topology` and `features`
// (immutable and shared: co-located samplers may read them directly at the same time).
// Every request is validated (structure by the codec; node ids against the partition's
// range; attributes against the store); a bad one gets an error reply with its request id
// (0 if the bytes are unreadable) and the actor keeps serving.
partition_actor spawn_partition_actor(caf::actor_system& system,
                                      std::shared_ptr<const Topology> topology,
                                      std::shared_ptr<const FeatureStore> features,
                                      SamplerConfig config);

}  // namespace partita
