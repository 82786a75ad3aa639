// The actors' message interfaces, together, readable as the protocol.
//
// Every request and reply is one Cap'n Proto message built by messages/codec.h and carried
// as `Encoded` bytes (one memcpy in CAF, see messages/caf_types.h). Bulk feature rows
// between processes bypass CAF: see actors/feature_channel.h. The allreduce group is a
// generic collective with its own interface (runtime/collective/allreduce_protocol.h).
//
// Errors, one way per boundary:
//   - partition and sampler requests, in one process or between processes, by message or
//     over the feature channel: failures travel in-band. A partition or sampler actor
//     answers a bad request with an encoded error reply (codec's error_reply, keyed by the
//     request id, its text naming the partition and the problem), never with a CAF error,
//     so a peer in another process or another language reads every outcome with the same
//     decoder. CAF errors on these requests mean the transport failed: a timeout, or the
//     receiver is gone; the feature channel's transport failures are Errors naming the
//     partition ("partition 1: feature channel: ...").
//   - trainers report to the job driver by message, (train_failed, trainer, message), with
//     the message of the Error that stopped the step (a failed allreduce names its rank);
//     the driver also monitors every actor it spawned and names the one that went down.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "messages/caf_types.h"
#include "messages/sampled_batch.h"
#include "runtime/actor_system.h"

namespace partita {

using hop_atom = caf::atom_constant<caf::atom("p_hop")>;
using feature_atom = caf::atom_constant<caf::atom("p_feature")>;
using channel_atom = caf::atom_constant<caf::atom("p_channel")>;

// One partition's stores.
//   (hop, hop request)         -> hop reply     | error reply
//   (feature, feature request) -> feature reply | error reply
//   (channel)                  -> channel offer | error reply: a session of the partition's
//       feature channel (actors/feature_channel.h) for one client, which then sends its
//       feature requests as frames there; for samplers in other processes
using partition_actor = caf::typed_actor<
    caf::replies_to<hop_atom, Encoded>::with<Encoded>,
    caf::replies_to<feature_atom, Encoded>::with<Encoded>,
    caf::replies_to<channel_atom>::with<Encoded>>;

using partitions_atom = caf::atom_constant<caf::atom("p_parts")>;
using epoch_atom = caf::atom_constant<caf::atom("p_epoch")>;
using next_atom = caf::atom_constant<caf::atom("p_next")>;
using link_plan_atom = caf::atom_constant<caf::atom("p_lplan")>;

// The sampler of one trainer (actors/sampler_actor.h): the mini-batches of its partition's
// training seeds, that partition read by direct call, the others through their actors.
//   (partitions, actors by part, addresses by part) -> sampler ack | error reply: where the
//       partitions are (the sampler's own entry is not used); opens the feature channels of
//       those in other processes. addresses[p], "HOST:PORT" of the daemon hosting partition
//       p or "" (unknown, or in this process), lets the sampler's node connect to it
//       directly: CAF 0.17 would otherwise route every hop request through the process
//       that sent the handles (its automatic connections made daemon connects flaky here)
//   (epoch, split, plan seed, epoch, batch size, shuffle) -> sampler ack with the plan's
//       batch count | error reply: plans the epoch of the split ("train", "val", "test"):
//       its seeds, shuffled with (plan seed, epoch) when `shuffle`, cut into batches keyed
//       (plan seed, epoch, batch); starts sampling at once, at most `prefetch` batches ahead
//       of the next messages; supersedes what is left of the previous epoch
//   (link plan, link plan message) -> sampler ack with its batch count | error reply: an
//       epoch whose batches the trainer planned (a link-prediction trainer: each batch's
//       seeds are its edges' endpoints and negatives, keyed (plan seed, epoch, batch), its
//       hops leaving out the step's positive edges; messages/codec.h link_plan); otherwise
//       as epoch, and read with next
//   (next) -> sampled batch (messages/sampled_batch.h): the epoch's next batch in plan
//       order, or the reason there is none (a failure naming the batch and the partition)
using sampler_actor = caf::typed_actor<
    caf::replies_to<partitions_atom, std::vector<caf::actor>, std::vector<std::string>>::with<Encoded>,
    caf::replies_to<epoch_atom, std::string, uint64_t, uint64_t, int64_t, bool>::with<Encoded>,
    caf::replies_to<link_plan_atom, Encoded>::with<Encoded>,
    caf::replies_to<next_atom>::with<SampledBatch>>;

// Training. A trainer is a model replica fed by its sampler; the job driver steers it. Every
// argument is a built-in CAF type, so trainers on daemons need nothing registered. Within
// an epoch a trainer reports to the driver by plain messages (so that the driver can watch
// every trainer at once), not by replies:
//   (train_step, trainer, epoch, step, steps, loss_sum, seeds, correct, parameter hash)
//       after every optimiser step, the sums over all trainers (every replica has them);
//   (train_epoch_done, trainer, epoch) at the end of the epoch;
//   (train_failed, trainer, message) when the epoch cannot go on;
//   (train_checkpoint, trainer, epoch, step, state) from trainer 0 only, after every
//       `checkpoint every`-th step of an epoch (its last too, so that a loss during the
//       evaluation that follows re-does no step): the model and optimiser state after that
//       step (every replica holds the same), for a checkpoint inside the epoch.
using train_setup_atom = caf::atom_constant<caf::atom("t_setup")>;
using train_epoch_atom = caf::atom_constant<caf::atom("t_epoch")>;
using train_step_atom = caf::atom_constant<caf::atom("t_step")>;
using train_done_atom = caf::atom_constant<caf::atom("t_done")>;
using train_failed_atom = caf::atom_constant<caf::atom("t_failed")>;
using train_checkpoint_atom = caf::atom_constant<caf::atom("t_ckpt")>;
using evaluate_atom = caf::atom_constant<caf::atom("t_eval")>;
using get_state_atom = caf::atom_constant<caf::atom("t_getstate")>;
using set_state_atom = caf::atom_constant<caf::atom("t_setstate")>;

//   (setup, its sampler actor, its allreduce member) -> true | error: both in its process
//   (epoch, epoch, first step, steps, checkpoint every, driver): runs steps [first step,
//       steps) of the epoch, reporting as above (0 < first step: an epoch resumed from a
//       checkpoint inside it; the batches before it are drawn and dropped, so the later
//       ones are those of the uninterrupted epoch); checkpoint every 0: no state sent
//   (evaluate, "val" | "test") -> (loss sum, correct, seeds) over its share of the split
//   (get state) -> model and optimiser state; (set state, bytes) -> true | error
using trainer_actor = caf::typed_actor<
    caf::replies_to<train_setup_atom, caf::actor, caf::actor>::with<bool>,
    caf::reacts_to<train_epoch_atom, uint64_t, int64_t, int64_t, int64_t, caf::actor>,
    caf::replies_to<evaluate_atom, std::string>::with<double, int64_t, int64_t>,
    caf::replies_to<get_state_atom>::with<std::vector<char>>,
    caf::replies_to<set_state_atom, std::vector<char>>::with<bool>>;

// Adds the hooks that register this protocol's message types to `options`, so that every
// actor system hosting these actors can ship them across processes.
void add_protocol_types(runtime::ActorSystemOptions& options);

}  // namespace partita
