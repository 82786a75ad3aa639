// The actor types a node daemon can spawn for a job, by name (runtime/host.h).
#pragma once

#include "graph/neighbor_sampler.h"
#include "runtime/host.h"

namespace partita {

// Registers:
//   "partition": one part of a partition folder, served by a partition actor. Settings:
//     dir (the folder, as the daemon's machine sees it), part, fanouts ("15,10,5"),
//     replace and disjoint ("true"/"false", default false).
void register_actor_types(runtime::ActorTypeRegistry& registry);

// The sampler config of a partition actor's settings; throws UsageError naming the setting.
SamplerConfig sampler_config_from(const runtime::Settings& settings);

}  // namespace partita
