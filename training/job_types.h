// The one list of the actor types a training job spawns, by name: what `partita run` hosts
// in its process, what a `partita daemon` can spawn for a job, what benchmarks and tests
// run jobs with.
#pragma once

#include "runtime/host.h"

namespace partita {

// "partition" and "sampler" (actors/actor_types.h), "allreduce" (the generic collective,
// runtime/collective/allreduce_member.h), "trainer" (training/trainer.h), and for link
// prediction "embedding_shard" (training/embedding_shard.h) and "kg_trainer"
// (training/kg_trainer.h).
runtime::ActorTypeRegistry job_actor_types();

}  // namespace partita
