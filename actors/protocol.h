// The actors' message interfaces, together, readable as the protocol.
//
// Every request and reply is one Cap'n Proto message built by messages/codec.h and carried
// as `Encoded` bytes (one memcpy in CAF, see messages/caf_types.h). Failures travel in-band:
// a partition actor answers a bad request with an encoded error reply (codec's error_reply,
// keyed by the request id), never with a CAF error, so a peer in another process or another
// language reads every outcome with the same decoder. CAF errors on these requests mean the
// transport failed: a timeout, or the receiver is gone.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/caf_types.h"
#include "runtime/actor_system.h"

namespace partita {

using hop_atom = caf::atom_constant<caf::atom("p_hop")>;
using feature_atom = caf::atom_constant<caf::atom("p_feature")>;

// One partition's stores.
//   (hop, hop request)         -> hop reply     | error reply
//   (feature, feature request) -> feature reply | error reply
using partition_actor = caf::typed_actor<
    caf::replies_to<hop_atom, Encoded>::with<Encoded>,
    caf::replies_to<feature_atom, Encoded>::with<Encoded>>;

// Adds the hooks that register this protocol's message types to `options`, so that every
// actor system hosting these actors can ship them across processes.
void add_protocol_types(runtime::ActorSystemOptions& options);

}  // namespace partita
