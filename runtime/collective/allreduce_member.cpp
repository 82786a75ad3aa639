#include "runtime/collective/allreduce_member.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <optional>

#include "base/error.h"
#include "runtime/collective/ring.h"
#include "runtime/errors.h"
#include "runtime/transport/worker.h"

namespace partita::runtime {

namespace {

// Deadlines come in messages: bounded, so that adding one to the clock cannot overflow (a
// day is beyond any operation's or wiring's reasonable wait).
constexpr int64_t kMaxDeadlineMs = int64_t{24} * 3600 * 1000;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The member's own messages, private to this file:
//   (ring, job, why): its worker finished a job (0: the wiring, else an operation's seq),
//       "" on success
//   (timeout, seq): the deadline of an operation still waiting for the wiring
//   (grace, seq): the end of the hold on a running operation's failure (see hold)
using allreduce_ring_atom = caf::atom_constant<caf::atom("ar_ring")>;
using allreduce_timeout_atom = caf::atom_constant<caf::atom("ar_timeout")>;
using allreduce_grace_atom = caf::atom_constant<caf::atom("ar_grace")>;
using member_actor = allreduce_member::extend<caf::reacts_to<allreduce_ring_atom, uint64_t, std::string>,
                                              caf::reacts_to<allreduce_timeout_atom, uint64_t>,
                                              caf::reacts_to<allreduce_grace_atom, uint64_t>>;

// When a running operation fails without a member's down message (a neighbour closed its
// connection, another member's abort), the member holds the failure this long for the down
// message that tells why: a member stopped on purpose ends the operation as stopped, a lost
// one fails it. Well within the caller's reply grace, so the caller hears the outcome.
constexpr milliseconds kStopGrace = kAllreduceReplyGrace / 2;

// Reasons from other members are shown to users: keep them to one readable line.
constexpr size_t kMaxReasonBytes = 1000;

std::string clip(std::string text) {
  if (text.size() > kMaxReasonBytes) text.resize(kMaxReasonBytes);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

caf::error refuse(std::string why) { return make_runtime_error(RuntimeErrc::refused, std::move(why)); }

// An operation a caller asked for: waiting for the wiring, or running on the worker.
struct Operation {
  Operation(uint64_t seq, caf::actor caller, int64_t deadline_ms)
      : seq(seq), caller(std::move(caller)), deadline_ms(deadline_ms) {}

  uint64_t seq = 0;
  caf::actor caller;
  int64_t deadline_ms = 0;
  Deadline deadline;
  std::vector<char> bytes;     // a remote caller's floats, summed in place and sent back
  AllreduceLocalBuffer local;  // or a caller's buffer in this process
  bool running = false;
  bool ring_done = false;  // its worker reported a failure (the outcome may still be held)
};

struct MemberState {
  AllreduceConfig config;
  uint64_t group = 0;  // set by listen
  std::vector<caf::actor> members;
  std::unique_ptr<Listener> listener;
  caf::typed_response_promise<bool> wired_promise;
  std::string failure;  // why the group failed; empty while it works
  bool stopped = false;  // the failure is a member stopped on purpose
  std::string held;      // a running operation's failure held for its cause (see hold)
  bool held_tell_others = false;
  uint64_t next_seq = 1;
  std::optional<Operation> op;
  std::shared_ptr<Ring> ring;
  std::unique_ptr<Worker> worker;  // last: joined before the buffers above go away

  static inline const char* name = "partita.allreduce";
};

using MemberPointer = member_actor::stateful_pointer<MemberState>;

std::string me(const MemberState& s) { return rank_name(s.config.rank); }

// --- What every phase does alike ---

void finish(MemberPointer self, const std::string& why) {
  auto& s = self->state;
  Operation& op = *s.op;
  if (why.empty()) {
    caf::anon_send(op.caller, allreduce_done_atom::value, op.seq, std::move(op.bytes));
  } else if (s.stopped) {
    caf::anon_send(op.caller, allreduce_stopped_atom::value, op.seq,
                   "allreduce operation " + std::to_string(op.seq) + " stopped on rank " +
                       std::to_string(s.config.rank) + ": " + why);
  } else {
    caf::anon_send(op.caller, allreduce_failed_atom::value, op.seq,
                   "allreduce operation " + std::to_string(op.seq) + " failed on rank " +
                       std::to_string(s.config.rank) + ": " + why);
  }
  s.op.reset();
}

// Runs the accepted operation on the worker, which reports (ring, seq, why).
void start(MemberPointer self) {
  auto& s = self->state;
  Operation& op = *s.op;
  op.running = true;
  float* data = op.local.lease ? op.local.data : reinterpret_cast<float*>(op.bytes.data());
  const size_t n = op.local.lease ? op.local.size : op.bytes.size() / sizeof(float);
  s.worker->post(op.seq, [ring = s.ring, data, n, seq = op.seq, deadline = op.deadline, lease = op.local.lease] {
    std::unique_lock<std::mutex> lock;
    if (lease) {
      lock = std::unique_lock<std::mutex>(lease->mutex);
      if (lease->abandoned) throw Error("the caller gave up before the operation started");
    }
    ring->run(data, n, seq, deadline);
  });
}

member_actor::behavior_type failed(MemberPointer self);

// The group cannot go on: record why, stop the ring's waits, tell the other members (unless
// one of them told us), fail an operation that is not running (a running one fails through
// its worker's report), and refuse everything from now on.
void fail_group(MemberPointer self, const std::string& why, bool tell_others) {
  auto& s = self->state;
  if (!s.failure.empty()) return;
  s.failure = why;
  // Between operations this is usually the job stopping its members; it matters (and is
  // reported to the caller as well) when an operation is under way.
  if (s.op && s.stopped) {
    spdlog::info("{}: the group stopped: {}", me(s), why);
  } else if (s.op) {
    spdlog::warn("{}: the group failed: {}", me(s), why);
  } else {
    spdlog::debug("{}: the group failed: {}", me(s), why);
  }
  s.ring->abort(why);
  if (tell_others) {
    const uint64_t seq = s.op ? s.op->seq : s.next_seq - 1;
    for (const auto& m : s.members) {
      if (m && m.address() != self->address()) {
        self->send(caf::actor_cast<allreduce_member>(m), allreduce_abort_atom::value, s.group, seq, why);
      }
    }
  }
  if (s.op && !s.op->running) finish(self, why);
  self->become(failed(self));
}

// Ends a running operation once both its worker reported and the group's fate is known.
void settle(MemberPointer self) {
  auto& s = self->state;
  if (s.op && s.op->running && s.op->ring_done && !s.failure.empty()) finish(self, s.failure);
}

// A failure that names no cause (a connection closed, another member's abort): while an
// operation runs, stop the ring and wait up to kStopGrace for a member's down message,
// which decides between stopped and failed; otherwise fail the group at once.
void hold(MemberPointer self, const std::string& why, bool tell_others) {
  auto& s = self->state;
  if (!s.failure.empty() || !s.held.empty()) return;
  if (!s.op || !s.op->running) return fail_group(self, why, tell_others);
  spdlog::debug("{}: operation {} broke ({}); waiting for the cause", me(s), s.op->seq, why);
  s.held = why;
  s.held_tell_others = tell_others;
  s.ring->abort(why);
  self->delayed_send(self, kStopGrace, allreduce_grace_atom::value, s.op->seq);
}

// Validates an operation and makes it the current one; returns why it is refused (the
// group stays usable).
std::string accept(MemberPointer self, Operation op) {
  auto& s = self->state;
  const std::string what = "operation " + std::to_string(op.seq);
  if (op.seq != s.next_seq) {
    return what + " is out of order: " + me(s) + " expects operation " + std::to_string(s.next_seq);
  }
  if (s.op) return what + " arrived while operation " + std::to_string(s.op->seq) + " is in progress";
  if (op.deadline_ms <= 0 || op.deadline_ms > kMaxDeadlineMs) {
    return what + ": the deadline must be in (0, " + std::to_string(kMaxDeadlineMs) + "] ms, got " +
           std::to_string(op.deadline_ms) + " ms";
  }
  if (op.local.lease == nullptr && op.bytes.size() % sizeof(float) != 0) {
    return what + ": " + std::to_string(op.bytes.size()) + " bytes are not a whole number of float32";
  }
  if (op.local.lease != nullptr && op.local.data == nullptr && op.local.size > 0) return what + ": no buffer";
  ++s.next_seq;
  op.deadline = Clock::now() + milliseconds(op.deadline_ms);
  s.op = std::move(op);
  return "";
}

void tell_refused(MemberPointer self, const Operation& op, const std::string& why) {
  spdlog::warn("{}: refused a sum: {}", me(self->state), why);
  caf::anon_send(op.caller, allreduce_failed_atom::value, op.seq,
                 "allreduce operation " + std::to_string(op.seq) + " refused by rank " +
                     std::to_string(self->state.config.rank) + ": " + why);
}

// What a phase does with a sum.
using Take = void (*)(MemberPointer self, Operation op);

// Before the ring is up: the operation waits for the wiring until its deadline.
void wait_for_wiring(MemberPointer self, Operation op) {
  const Operation copy_for_refusal(op.seq, op.caller, op.deadline_ms);
  if (std::string why = accept(self, std::move(op)); !why.empty()) return tell_refused(self, copy_for_refusal, why);
  self->delayed_send(self, milliseconds(self->state.op->deadline_ms), allreduce_timeout_atom::value,
                     self->state.op->seq);
}

void run_now(MemberPointer self, Operation op) {
  const Operation copy_for_refusal(op.seq, op.caller, op.deadline_ms);
  if (std::string why = accept(self, std::move(op)); !why.empty()) return tell_refused(self, copy_for_refusal, why);
  start(self);
}

void refuse_failed(MemberPointer self, Operation op) {
  auto& s = self->state;
  if (!s.stopped) return tell_refused(self, op, "the group failed earlier: " + s.failure);
  spdlog::info("{}: refused a sum: the group stopped earlier: {}", me(s), s.failure);
  caf::anon_send(op.caller, allreduce_stopped_atom::value, op.seq,
                 "allreduce operation " + std::to_string(op.seq) + " refused by rank " + std::to_string(s.config.rank) +
                     ": the group stopped earlier: " + s.failure);
}

// A phase's behaviour: its own answers to listen, wire and its worker's reports, what it
// does with a sum, and what every phase answers alike.
template <typename Listen, typename Wire, typename Report>
member_actor::behavior_type phase(MemberPointer self, Take take, Listen listen, Wire wire, Report report) {
  return {
      std::move(listen),
      std::move(wire),
      std::move(report),
      [self](allreduce_info_atom) -> caf::result<int32_t, int32_t, uint64_t> {
        auto& s = self->state;
        return {static_cast<int32_t>(s.config.rank), static_cast<int32_t>(s.config.size), s.next_seq};
      },
      [self, take](allreduce_sum_atom, uint64_t seq, int64_t deadline_ms, std::vector<char>& bytes) {
        Operation op(seq, caf::actor_cast<caf::actor>(self->current_sender()), deadline_ms);
        op.bytes = std::move(bytes);
        take(self, std::move(op));
      },
      [self, take](allreduce_sum_atom, uint64_t seq, int64_t deadline_ms, AllreduceLocalBuffer& buffer) {
        Operation op(seq, caf::actor_cast<caf::actor>(self->current_sender()), deadline_ms);
        op.local = std::move(buffer);
        if (!op.local.lease) op.local.lease = std::make_shared<AllreduceLease>();
        take(self, std::move(op));
      },
      [self](allreduce_abort_atom, uint64_t group, uint64_t seq, const std::string& why) {
        auto& s = self->state;
        if (group != s.group || s.members.empty()) {
          spdlog::warn("{}: ignored an abort for another group", me(s));
          return;
        }
        std::string from = "another member";
        for (size_t r = 0; r < s.members.size(); ++r) {
          if (s.members[r].address() == self->current_sender()) from = rank_name(static_cast<int>(r));
        }
        hold(self, from + " failed operation " + std::to_string(seq) + ": " + clip(why), false);
        settle(self);
      },
      [self](allreduce_timeout_atom, uint64_t seq) {
        auto& s = self->state;
        if (s.op && s.op->seq == seq && !s.op->running) finish(self, "not wired into a group within the deadline");
      },
      [self](allreduce_grace_atom, uint64_t) {
        auto& s = self->state;
        if (s.held.empty() || !s.failure.empty()) return;
        fail_group(self, s.held, s.held_tell_others);
        settle(self);
      },
  };
}

auto refuse_listen(MemberPointer self) {
  return [self](allreduce_listen_atom, uint64_t) -> caf::result<std::string, uint16_t> {
    return refuse(me(self->state) + ": already in a group (a member joins one group once)");
  };
}

caf::error not_listening(const MemberState& s) {
  return refuse(me(s) + ": wire for a group it is not listening for (listen first; a member joins one group once)");
}

auto refuse_wire(MemberPointer self) {
  return [self](allreduce_wire_atom, uint64_t, std::vector<caf::actor>&, const std::string&, uint16_t,
                int64_t) -> caf::result<bool> { return not_listening(self->state); };
}

auto ignore_report() {
  return [](allreduce_ring_atom, uint64_t, const std::string&) {};
}

// A report once operations may run (ready, or failed while one ran): the operation's
// outcome; a late wiring report only answers the wiring request.
auto operation_report(MemberPointer self) {
  return [self](allreduce_ring_atom, uint64_t job, const std::string& why) {
    auto& s = self->state;
    if (job == 0) {
      if (s.wired_promise.pending()) s.wired_promise.deliver(refuse(me(s) + ": " + s.failure));
      return;
    }
    if (!s.op || !s.op->running || s.op->seq != job) return;  // a stale report
    if (why.empty()) return finish(self, "");
    s.op->ring_done = true;
    hold(self, why, true);
    // The group's first failure is the cause; the ring's own error may just be "aborted".
    settle(self);
  };
}

// --- The phases ---

member_actor::behavior_type ready(MemberPointer self) {
  return phase(self, run_now, refuse_listen(self), refuse_wire(self), operation_report(self));
}

member_actor::behavior_type failed(MemberPointer self) {
  return phase(self, refuse_failed, refuse_listen(self), refuse_wire(self), operation_report(self));
}

member_actor::behavior_type wiring(MemberPointer self) {
  return phase(self, wait_for_wiring, refuse_listen(self), refuse_wire(self),
               [self](allreduce_ring_atom, uint64_t job, const std::string& why) {
                 auto& s = self->state;
                 if (job != 0) return;  // no operation runs before the ring is up
                 if (!why.empty()) {
                   fail_group(self, "wiring failed: " + why, true);
                   s.wired_promise.deliver(refuse(me(s) + ": " + s.failure));
                   return;
                 }
                 spdlog::debug("{}: ring connections up", me(s));
                 self->become(ready(self));
                 s.wired_promise.deliver(true);
                 if (s.op) start(self);
               });
}

caf::result<bool> wire(MemberPointer self, uint64_t group, std::vector<caf::actor>& members,
                       const std::string& right_host, uint16_t right_port, int64_t deadline_ms) {
  auto& s = self->state;
  const int size = s.config.size, rank = s.config.rank;
  if (group != s.group) return not_listening(s);
  if (static_cast<int>(members.size()) != size) {
    return refuse(me(s) + ": wired with " + std::to_string(members.size()) + " members, its group has " +
                  std::to_string(size));
  }
  for (size_t r = 0; r < members.size(); ++r) {
    if (!members[r]) return refuse(me(s) + ": member " + std::to_string(r) + " is not an actor");
  }
  if (members[rank].address() != self->address()) {
    return refuse(me(s) + ": members[" + std::to_string(rank) + "] is another actor");
  }
  if (size > 1 && (right_host.empty() || right_port == 0)) {
    return refuse(me(s) + ": no address for its right neighbour");
  }
  if (deadline_ms <= 0 || deadline_ms > kMaxDeadlineMs) {
    return refuse(me(s) + ": the wiring deadline must be in (0, " + std::to_string(kMaxDeadlineMs) + "] ms");
  }
  s.members = std::move(members);
  for (const auto& m : s.members) {
    if (m.address() != self->address()) self->monitor(m);
  }
  if (size == 1) {
    self->become(ready(self));
    if (s.op) start(self);
    return true;
  }
  self->become(wiring(self));
  s.wired_promise = self->make_response_promise<bool>();  // delivered on the worker's report
  s.worker->post(0, [ring = s.ring, listener = std::shared_ptr<Listener>(std::move(s.listener)),
                     right = Endpoint{right_host, right_port}, group,
                     deadline = Clock::now() + milliseconds(deadline_ms)] {
    ring->wire(*listener, right, group, deadline);
  });
  return caf::delegated<bool>();
}

member_actor::behavior_type listening(MemberPointer self) {
  return phase(self, wait_for_wiring, refuse_listen(self),
               [self](allreduce_wire_atom, uint64_t group, std::vector<caf::actor>& members, const std::string& host,
                      uint16_t port, int64_t deadline_ms) { return wire(self, group, members, host, port, deadline_ms); },
               ignore_report());
}

member_actor::behavior_type unwired(MemberPointer self) {
  return phase(
      self, wait_for_wiring,
      [self](allreduce_listen_atom, uint64_t group) -> caf::result<std::string, uint16_t> {
        auto& s = self->state;
        if (group == 0) return refuse(me(s) + ": group token 0 is reserved");
        if (s.config.size > 1) {
          try {
            s.listener = std::make_unique<Listener>(s.config.host);
          } catch (const Error& e) {
            return refuse(me(s) + ": " + e.what());
          }
        }
        s.group = group;
        self->become(listening(self));
        if (!s.listener) return {std::string(), uint16_t{0}};
        return {s.listener->endpoint().host, s.listener->endpoint().port};
      },
      refuse_wire(self), ignore_report());
}

member_actor::behavior_type member(MemberPointer self, AllreduceConfig config) {
  auto& s = self->state;
  s.config = std::move(config);
  s.ring = std::make_shared<Ring>(s.config.rank, s.config.size);
  s.worker = std::make_unique<Worker>("allreduce.ring", report_to<member_actor>(self->address(),
                                                                               allreduce_ring_atom::value),
                                      [ring = s.ring] { ring->abort("the member stopped"); });
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& s = self->state;
    for (size_t r = 0; r < s.members.size(); ++r) {
      if (s.members[r].address() == msg.source) {
        const bool on_purpose = msg.reason == caf::exit_reason::user_shutdown;
        if (on_purpose && s.failure.empty()) s.stopped = true;
        const std::string what = on_purpose ? " was stopped" : " was lost (" + describe(self->system(), msg.reason) + ")";
        fail_group(self, rank_name(static_cast<int>(r)) + what, true);
        settle(self);
        return;
      }
    }
  });
  return unwired(self);
}

}  // namespace

allreduce_member spawn_allreduce_member(caf::actor_system& system, const AllreduceConfig& config) {
  if (config.size < 1) throw UsageError("allreduce member: size must be at least 1, got " + std::to_string(config.size));
  if (config.rank < 0 || config.rank >= config.size) {
    throw UsageError("allreduce member: rank " + std::to_string(config.rank) + " is not in 0.." +
                     std::to_string(config.size - 1));
  }
  if (config.host.empty()) throw UsageError("allreduce member: no host to accept ring connections on");
  return caf::actor_cast<allreduce_member>(system.spawn(member, config));
}

AllreduceConfig allreduce_config_from(const Settings& settings) {
  AllreduceConfig config;
  config.size = static_cast<int>(integer_setting(settings, "size", 1, 1 << 16));
  config.rank = static_cast<int>(integer_setting(settings, "rank", 0, config.size - 1));
  config.host = text_setting(settings, "host", config.host);
  return config;
}

}  // namespace partita::runtime
