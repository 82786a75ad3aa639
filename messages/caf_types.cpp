#include "messages/caf_types.h"

#include "messages/sampled_batch.h"

namespace partita {

void register_message_types(caf::actor_system_config& config) {
  config.add_message_type<Encoded>("partita.Encoded");
  config.add_message_type<SampledBatch>("partita.SampledBatch");
}

}  // namespace partita
