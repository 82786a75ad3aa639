#include "training/job_types.h"

#include "actors/actor_types.h"
#include "training/trainer.h"

namespace partita {

runtime::ActorTypeRegistry job_actor_types() {
  runtime::ActorTypeRegistry registry;
  register_actor_types(registry);
  register_training_types(registry);
  return registry;
}

}  // namespace partita
