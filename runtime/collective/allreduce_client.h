// The blocking API of one allreduce member, for a trainer's own thread (never an actor's
// handler: it blocks). Trainer replicas sum their gradients through it, so every replica
// applies the same update (data parallel, like DDP). See runtime/collective/ring.h for the
// order of the sum and allreduce_member.h for failures.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace partita::runtime {

// Not thread-safe; one client per member. Every member of the group must call sum() for
// each operation, with the same n. A member in this process sums the caller's buffer in
// place (no copy: co-locate each trainer with its member); a remote one gets a copy in a
// message (for drivers and tests).
class Allreduce {
 public:
  // `deadline` bounds each sum(), from the call to the result. Throws UsageError for no
  // member or a deadline that is not positive.
  Allreduce(caf::actor_system& system, caf::actor member, std::chrono::milliseconds deadline);
  Allreduce(const Allreduce&) = delete;
  Allreduce& operator=(const Allreduce&) = delete;

  // Replaces data[0..n) with the element-wise sum over the group. Throws Error naming the
  // member (rank) that was lost, the deadline that passed, or what was wrong (sizes that
  // differ between members, a group that failed before). The buffer's content is
  // unspecified after a failure.
  void sum(float* data, size_t n);

 private:
  // Learns the member's rank and next sequence number (on the first sum, and after a failure).
  void introduce(caf::scoped_actor& self);

  caf::actor_system& system_;
  caf::actor member_;
  std::chrono::milliseconds deadline_;
  bool local_;
  int rank_ = -1;
  uint64_t next_seq_ = 0;
};

}  // namespace partita::runtime
