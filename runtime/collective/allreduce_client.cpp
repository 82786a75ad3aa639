#include "runtime/collective/allreduce_client.h"

#include <caf/all.hpp>

#include <cstring>
#include <optional>

#include "base/error.h"
#include "runtime/collective/allreduce_protocol.h"
#include "runtime/collective/allreduce_stopped.h"
#include "runtime/collective/ring.h"
#include "runtime/errors.h"

namespace partita::runtime {

Allreduce::Allreduce(caf::actor_system& system, caf::actor member, std::chrono::milliseconds deadline)
    : system_(system), member_(std::move(member)), deadline_(deadline), local_(false) {
  if (!member_) throw UsageError("allreduce: no member");
  if (deadline_.count() <= 0) throw UsageError("allreduce: the deadline must be positive");
  local_ = member_.node() == system_.node();
}

void Allreduce::introduce(caf::scoped_actor& self) {
  std::optional<caf::error> failed;
  self->request(caf::actor_cast<allreduce_member>(member_), deadline_, allreduce_info_atom::value)
      .receive(
          [&](int32_t rank, int32_t, uint64_t next_seq) {
            rank_ = rank;
            next_seq_ = next_seq;
          },
          [&](caf::error& e) { failed = e; });
  if (failed) throw Error("allreduce: its member does not answer: " + describe(system_, *failed));
}

void Allreduce::sum(float* data, size_t n) {
  if (data == nullptr && n > 0) throw UsageError("allreduce: no buffer for " + std::to_string(n) + " floats");
  caf::scoped_actor self{system_};
  self->monitor(member_);
  // Monitors outlive the scoped actor otherwise: one per call.
  struct Demonitor {
    caf::scoped_actor& self;
    const caf::actor& member;
    ~Demonitor() { self->demonitor(member.address()); }
  } demonitor{self, member_};
  if (next_seq_ == 0) introduce(self);
  const uint64_t seq = next_seq_++;
  const std::string who = rank_name(rank_);
  const auto member = caf::actor_cast<allreduce_member>(member_);
  std::shared_ptr<AllreduceLease> lease;
  if (local_) {
    lease = std::make_shared<AllreduceLease>();
    self->send(member, allreduce_sum_atom::value, seq, static_cast<int64_t>(deadline_.count()),
               AllreduceLocalBuffer{data, n, lease});
  } else {
    std::vector<char> bytes(n * sizeof(float));
    if (n > 0) std::memcpy(bytes.data(), data, bytes.size());
    self->send(member, allreduce_sum_atom::value, seq, static_cast<int64_t>(deadline_.count()), std::move(bytes));
  }
  const auto give_up = std::chrono::steady_clock::now() + deadline_ + kAllreduceReplyGrace;
  bool done = false;
  std::optional<Error> failure;
  bool stopped = false;  // the failure is the member's stop (allreduce_stopped.h)
  while (!done && !failure) {
    const auto left = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                  give_up - std::chrono::steady_clock::now()));
    self->receive(
        [&](allreduce_done_atom, uint64_t s, std::vector<char>& result) {
          if (s != seq) return;
          if (!local_ && result.size() != n * sizeof(float)) {
            failure = Error(who + " answered with " + std::to_string(result.size()) + " bytes for " +
                            std::to_string(n) + " floats");
          } else if (!local_ && n > 0) {
            std::memcpy(data, result.data(), result.size());
          }
          done = true;
        },
        [&](allreduce_failed_atom, uint64_t s, std::string& why) {
          if (s == seq) failure = Error(why);
        },
        [&](allreduce_stopped_atom, uint64_t s, std::string& why) {
          if (s != seq) return;
          failure = Error(why);
          stopped = true;
        },
        [&](caf::down_msg& msg) {
          stopped = msg.reason == caf::exit_reason::user_shutdown;
          const std::string why = stopped ? "it was stopped" : describe(system_, msg.reason);
          failure = Error("allreduce operation " + std::to_string(seq) + ": its member, " + who + ", was lost (" +
                          why + ")");
        },
        caf::after(left) >> [&] {
          failure = Error("allreduce operation " + std::to_string(seq) + ": no result from " + who + " within " +
                          std::to_string(deadline_.count()) + " ms");
        });
  }
  if (lease) {
    // Waits for the worker to let go of the buffer (the ring stops at its own deadline).
    std::lock_guard<std::mutex> lock(lease->mutex);
    lease->abandoned = true;
  }
  if (failure) {
    next_seq_ = 0;  // ask the member where it stands before the next operation
    if (stopped) throw AllreduceStopped(failure->what());
    throw *failure;
  }
}

}  // namespace partita::runtime
