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

#include <string>
#include <vector>

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

// Training. A trainer is a model replica with its loader; the job driver steers it. Every
// argument is a built-in CAF type, so trainers on daemons need nothing registered. Within
// an epoch a trainer reports to the driver by plain messages (so that the driver can watch
// every trainer at once), not by replies:
//   (train_step, trainer, epoch, step, steps, loss_sum, seeds, correct, parameter hash)
//       after every optimiser step, the sums over all trainers (every replica has them);
//   (train_epoch_done, trainer, epoch) at the end of the epoch;
//   (train_failed, trainer, message) when the epoch cannot go on.
using train_setup_atom = caf::atom_constant<caf::atom("t_setup")>;
using train_epoch_atom = caf::atom_constant<caf::atom("t_epoch")>;
using train_step_atom = caf::atom_constant<caf::atom("t_step")>;
using train_done_atom = caf::atom_constant<caf::atom("t_done")>;
using train_failed_atom = caf::atom_constant<caf::atom("t_failed")>;
using evaluate_atom = caf::atom_constant<caf::atom("t_eval")>;
using get_state_atom = caf::atom_constant<caf::atom("t_getstate")>;
using set_state_atom = caf::atom_constant<caf::atom("t_setstate")>;

//   (setup, partition actors by part, allreduce member) -> true | error
//   (epoch, epoch, steps, driver): runs `steps` optimiser steps, reporting as above
//   (evaluate, "val" | "test") -> (loss sum, correct, seeds) over its share of the split
//   (get state) -> model and optimiser state; (set state, bytes) -> true | error
using trainer_actor = caf::typed_actor<
    caf::replies_to<train_setup_atom, std::vector<caf::actor>, caf::actor>::with<bool>,
    caf::reacts_to<train_epoch_atom, uint64_t, int64_t, caf::actor>,
    caf::replies_to<evaluate_atom, std::string>::with<double, int64_t, int64_t>,
    caf::replies_to<get_state_atom>::with<std::vector<char>>,
    caf::replies_to<set_state_atom, std::vector<char>>::with<bool>>;

// Adds the hooks that register this protocol's message types to `options`, so that every
// actor system hosting these actors can ship them across processes.
void add_protocol_types(runtime::ActorSystemOptions& options);

}  // namespace partita
