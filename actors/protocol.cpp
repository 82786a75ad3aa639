#include "actors/protocol.h"

#include <caf/actor_system_config.hpp>

namespace partita {

void add_protocol_types(runtime::ActorSystemOptions& options) {
  options.hooks.push_back([](caf::actor_system_config& config) {
    register_message_types(config);
    // A sampler on one daemon learns the partition actors of the others from whoever
    // wires the job; CAF 0.17 would then route every hop request through that process.
    // Automatic connections let the daemons connect to each other directly.
    config.set("middleman.enable-automatic-connections", true);
  });
}

}  // namespace partita
