// The allreduce group's message interface: what the driver (wiring) and a trainer (its
// blocking client) send to a member. The ring's payloads stream over the members' own
// connections (runtime/collective/ring.h); these messages set the ring up, carry callers'
// buffers and failures. A member's own messages (its worker's reports, its timers) are
// private to runtime/collective/allreduce_member.cpp. Every argument is a built-in CAF type
// (or AllreduceLocalBuffer, which never leaves its process), so members on daemons need
// nothing registered.
//
// Errors, one way per boundary:
//   - listen and wire are requests; a member refuses one with a runtime error
//     (RuntimeErrc::refused, runtime/errors.h) whose text names the member's rank and the
//     problem; connect_allreduce_group turns it into an Error.
//   - a sum is answered by (done, seq, ...) or (failed, seq, why), where `why` names the
//     operation, the member that reports it and the cause (a lost rank, a deadline, sizes
//     that differ); Allreduce::sum throws it as an Error, so the trainer's step fails with
//     that text and the trainer reports it to the job driver.
//   - between members, (abort, group, seq, why) spreads the first failure to every member.
#pragma once

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace partita::runtime {

using allreduce_info_atom = caf::atom_constant<caf::atom("ar_info")>;
using allreduce_listen_atom = caf::atom_constant<caf::atom("ar_listen")>;
using allreduce_wire_atom = caf::atom_constant<caf::atom("ar_wire")>;
using allreduce_sum_atom = caf::atom_constant<caf::atom("ar_sum")>;
using allreduce_done_atom = caf::atom_constant<caf::atom("ar_done")>;
using allreduce_failed_atom = caf::atom_constant<caf::atom("ar_failed")>;
using allreduce_abort_atom = caf::atom_constant<caf::atom("ar_abort")>;
using allreduce_stopped_atom = caf::atom_constant<caf::atom("ar_stopped")>;

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
//       once both ring connections are up | refused
//   (sum, seq, deadline ms, float32 bytes)  => the sender gets (done, seq, float32 bytes)
//   (sum, seq, deadline ms, local buffer)   => the sender gets (done, seq, empty bytes)
//       either way (failed, seq, why) instead when the operation fails, or (stopped, seq, why)
//       when it ended because a member was stopped on purpose (exit reason user_shutdown)
//   (abort, group, seq, why): another member failed; the group is broken
using allreduce_member = caf::typed_actor<
    caf::replies_to<allreduce_info_atom>::with<int32_t, int32_t, uint64_t>,
    caf::replies_to<allreduce_listen_atom, uint64_t>::with<std::string, uint16_t>,
    caf::replies_to<allreduce_wire_atom, uint64_t, std::vector<caf::actor>, std::string, uint16_t, int64_t>::with<bool>,
    caf::reacts_to<allreduce_sum_atom, uint64_t, int64_t, std::vector<char>>,
    caf::reacts_to<allreduce_sum_atom, uint64_t, int64_t, AllreduceLocalBuffer>,
    caf::reacts_to<allreduce_abort_atom, uint64_t, uint64_t, std::string>>;

// How long a caller waits past its deadline for the member's own verdict (which names the
// cause) before reporting a bare timeout.
constexpr std::chrono::milliseconds kAllreduceReplyGrace{1000};

}  // namespace partita::runtime

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(partita::runtime::AllreduceLocalBuffer)
