// The allreduce group: trainer replicas sum their gradients through it, so every replica
// applies the same update (data parallel, like DDP).
//
// A group is N member actors, ranks 0..N-1, anywhere (one process or several daemons),
// connected in a ring: member r streams to member r+1 over a TCP connection of its own
// (runtime/bulk_channel.h), set up through messages when the driver wires the group; CAF
// messages alone take 2-3x as long to move an operation's bytes as the whole operation
// takes this way (BENCHMARKS.md). Control, failures and deadlines stay with the actors.
// One operation sums one float32 buffer of n elements, the same n on every member: a
// reduce-scatter then an allgather, the buffer cut into N contiguous chunks (chunk c is
// [c*n/N, (c+1)*n/N) in integer arithmetic), each streamed in segments of at most 1 MiB so
// that memory stays bounded and the steps overlap.
//
// The result is bit-identical on every member and from run to run, in one process or
// across machines: element i of chunk c is summed in ring order starting at rank c,
//   ((x[c] + x[c+1]) + x[c+2]) + ... + x[c-1]     (ranks mod N),
// by one member, and copied to the others.
//
// Failures: every operation has a deadline. A member that is lost (process killed, actor
// stopped) fails the operation on every member with an Error naming its rank: its ring
// neighbours see the connection close, members see CAF down messages, and a member that
// fails tells all the others. A group that failed stays failed (a checkpoint restart wires a
// new one). Stop members only after every member's last operation returned.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "runtime/host.h"

namespace partita {

struct AllreduceConfig {
  int rank = 0;
  int size = 1;
  // The address this member accepts its ring connection on, as the other members reach it:
  // loopback for a single machine, the node's address in a cluster.
  std::string host = "127.0.0.1";
};

// Throws UsageError unless 0 <= rank < size.
allreduce_member spawn_allreduce_member(caf::actor_system& system, const AllreduceConfig& config);

// Settings of the "allreduce" actor type: rank, size, host (optional). Throws UsageError
// naming the setting.
AllreduceConfig allreduce_config_from(const runtime::Settings& settings);

// Driver side: wires members[r] as rank r into a ring (in this process or on daemons) and
// returns once every member's ring connections are up. Throws Error naming the rank that
// refuses (wrong rank or size, already wired) or does not answer within `deadline`.
void connect_allreduce_group(caf::actor_system& system, const std::vector<caf::actor>& members,
                             std::chrono::milliseconds deadline);

// The blocking API of one member, for a trainer's own thread (never an actor's handler: it
// blocks). Not thread-safe; one client per member. Every member of the group must call
// sum() for each operation, with the same n. A member in this process sums the caller's
// buffer in place (no copy: co-locate each trainer with its member); a remote one gets a
// copy in a message (for drivers and tests).
class Allreduce {
 public:
  // `deadline` bounds each sum(), from the call to the result.
  Allreduce(caf::actor_system& system, caf::actor member, std::chrono::milliseconds deadline);
  Allreduce(const Allreduce&) = delete;
  Allreduce& operator=(const Allreduce&) = delete;

  // Replaces data[0..n) with the element-wise sum over the group. Throws Error naming the
  // member (rank) that was lost, the deadline that passed, or what was wrong (sizes that
  // differ between members, a group that failed before). The buffer's content is
  // unspecified after a failure.
  void sum(float* data, size_t n);

 private:
  // Learns the member's rank and next sequence number (on the first sum).
  void introduce(caf::scoped_actor& self);

  caf::actor_system& system_;
  caf::actor member_;
  std::chrono::milliseconds deadline_;
  bool local_;
  int rank_ = -1;
  uint64_t next_seq_ = 0;
};

}  // namespace partita
