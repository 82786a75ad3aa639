#include "training/job_actor_types.h"

#include "actors/actor_types.h"
#include "embeddings/embedding_shard.h"
#include "runtime/collective/allreduce_member.h"
#include "training/gnn_link_trainer.h"
#include "training/kg_trainer.h"
#include "training/trainer.h"

namespace partita {

runtime::ActorTypeRegistry job_actor_types() {
  runtime::ActorTypeRegistry registry;
  register_actor_types(registry);
  // A member of an allreduce group (runtime/collective/allreduce_member.h). Settings: rank,
  // size, host (where it accepts its ring connection, as the other members reach it;
  // default 127.0.0.1).
  registry.add("allreduce", [](caf::actor_system& system, const runtime::Settings& settings) {
    return caf::actor_cast<caf::actor>(runtime::spawn_allreduce_member(system, runtime::allreduce_config_from(settings)));
  });
  register_training_types(registry);
  register_embedding_shard_type(registry);
  register_kg_trainer_type(registry);
  register_gnn_link_trainer_type(registry);
  return registry;
}

}  // namespace partita
