// The actors' message interfaces, together, readable as the protocol.
//
// Every request and reply is one Cap'n Proto message built by messages/codec.h and carried
// as `Encoded` bytes (one memcpy in CAF, see messages/caf_types.h). Failures travel in-band:
// a partition or sampler actor answers a bad request with an encoded error reply (codec's
// error_reply, keyed by the request id), never with a CAF error, so a peer in another process
// or another language reads every outcome with the same decoder. CAF errors on these
// requests mean the transport failed: a timeout, or the receiver is gone. Bulk feature rows
// between processes bypass CAF: see actors/feature_channel.h.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
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
//   (next) -> sampled batch (messages/sampled_batch.h): the epoch's next batch in plan
//       order, or the reason there is none (a failure naming the batch and the partition)
using sampler_actor = caf::typed_actor<
    caf::replies_to<partitions_atom, std::vector<caf::actor>, std::vector<std::string>>::with<Encoded>,
    caf::replies_to<epoch_atom, std::string, uint64_t, uint64_t, int64_t, bool>::with<Encoded>,
    caf::replies_to<next_atom>::with<SampledBatch>>;

// Training. A trainer is a model replica fed by its sampler; the job driver steers it. Every
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

//   (setup, its sampler actor, its allreduce member) -> true | error: both in its process
//   (epoch, epoch, steps, driver): runs `steps` optimiser steps, reporting as above
//   (evaluate, "val" | "test") -> (loss sum, correct, seeds) over its share of the split
//   (get state) -> model and optimiser state; (set state, bytes) -> true | error
using trainer_actor = caf::typed_actor<
    caf::replies_to<train_setup_atom, caf::actor, caf::actor>::with<bool>,
    caf::reacts_to<train_epoch_atom, uint64_t, int64_t, caf::actor>,
    caf::replies_to<evaluate_atom, std::string>::with<double, int64_t, int64_t>,
    caf::replies_to<get_state_atom>::with<std::vector<char>>,
    caf::replies_to<set_state_atom, std::vector<char>>::with<bool>>;

// The allreduce group (actors/allreduce.h): members 0..N-1 in a ring, summing one float32
// buffer per step. Payloads stream over the members' own TCP connections (runtime/
// bulk_channel.h); these messages set the ring up, carry callers' buffers and failures.
using allreduce_info_atom = caf::atom_constant<caf::atom("ar_info")>;
using allreduce_listen_atom = caf::atom_constant<caf::atom("ar_listen")>;
using allreduce_wire_atom = caf::atom_constant<caf::atom("ar_wire")>;
using allreduce_sum_atom = caf::atom_constant<caf::atom("ar_sum")>;
using allreduce_done_atom = caf::atom_constant<caf::atom("ar_done")>;
using allreduce_failed_atom = caf::atom_constant<caf::atom("ar_failed")>;
using allreduce_abort_atom = caf::atom_constant<caf::atom("ar_abort")>;
using allreduce_ring_atom = caf::atom_constant<caf::atom("ar_ring")>;
using allreduce_timeout_atom = caf::atom_constant<caf::atom("ar_timeout")>;

// A caller's buffer in the member's own process, summed in place (no copy). The member
// holds `mutex` while it uses the buffer and skips one marked `abandoned`, so a caller that
// gives up (deadline, lost member) takes its buffer back by locking it. Never crosses a
// process boundary (the type is not serialisable).
struct AllreduceLease {
  std::mutex mutex;
  bool abandoned = false;
};
struct AllreduceLocalBuffer {
  float* data = nullptr;
  size_t size = 0;
  std::shared_ptr<AllreduceLease> lease;
};

// One member of an allreduce group.
//   info -> (rank, size, next operation's sequence number)
//   (listen, group) -> (host, port) where the left neighbour connects
//   (wire, group, members by rank, right neighbour's host and port, deadline ms) -> true,
//       once both ring connections are up | error
//   (sum, seq, deadline ms, float32 bytes)  => the sender gets (done, seq, float32 bytes)
//   (sum, seq, deadline ms, local buffer)   => the sender gets (done, seq, empty bytes)
//       either way (failed, seq, why) instead when the operation fails
//   (abort, group, seq, why): another member failed; the group is broken
//   (ring, job, why): internal, from the member's own ring thread ("" on success)
//   (timeout, seq): internal, the deadline of an operation still waiting for the wiring
using allreduce_member = caf::typed_actor<
    caf::replies_to<allreduce_info_atom>::with<int32_t, int32_t, uint64_t>,
    caf::replies_to<allreduce_listen_atom, uint64_t>::with<std::string, uint16_t>,
    caf::replies_to<allreduce_wire_atom, uint64_t, std::vector<caf::actor>, std::string, uint16_t, int64_t>::with<bool>,
    caf::reacts_to<allreduce_sum_atom, uint64_t, int64_t, std::vector<char>>,
    caf::reacts_to<allreduce_sum_atom, uint64_t, int64_t, AllreduceLocalBuffer>,
    caf::reacts_to<allreduce_abort_atom, uint64_t, uint64_t, std::string>,
    caf::reacts_to<allreduce_ring_atom, uint64_t, std::string>,
    caf::reacts_to<allreduce_timeout_atom, uint64_t>>;

// Adds the hooks that register this protocol's message types to `options`, so that every
// actor system hosting these actors can ship them across processes.
void add_protocol_types(runtime::ActorSystemOptions& options);

}  // namespace partita

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(partita::AllreduceLocalBuffer)
