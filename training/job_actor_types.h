// The one list of the actor types a training job spawns, by name: what `partita run` hosts
// in its process, what a `partita daemon` can spawn for a job, what benchmarks and tests
// run jobs with. (A job's vocabulary, its reports and run options, is training/job_types.h.)
#pragma once

#include "runtime/host.h"

namespace partita {

// "partition" and "sampler" (actors/actor_types.h), "allreduce" (the generic collective,
// runtime/collective/allreduce_member.h), "trainer" (training/trainer.h), and for link
// prediction "embedding_shard" (embeddings/embedding_shard.h), "kg_trainer"
// (training/kg_trainer.h) and "gnn_link_trainer" (training/gnn_link_trainer.h).
runtime::ActorTypeRegistry job_actor_types();

}  // namespace partita
