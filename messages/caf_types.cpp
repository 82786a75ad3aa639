#include "messages/caf_types.h"

namespace partita {

void register_message_types(caf::actor_system_config& config) {
  config.add_message_type<Encoded>("partita.Encoded");
}

}  // namespace partita
