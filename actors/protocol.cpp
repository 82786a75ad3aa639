#include "actors/protocol.h"

namespace partita {

void add_protocol_types(runtime::ActorSystemOptions& options) {
  options.hooks.push_back([](caf::actor_system_config& config) { register_message_types(config); });
}

}  // namespace partita
