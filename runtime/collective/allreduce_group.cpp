#include "runtime/collective/allreduce_group.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <optional>
#include <random>

#include "base/error.h"
#include "runtime/collective/allreduce_protocol.h"
#include "runtime/collective/ring.h"
#include "runtime/errors.h"

namespace partita::runtime {

void connect_allreduce_group(caf::actor_system& system, const std::vector<caf::actor>& members,
                             std::chrono::milliseconds deadline) {
  using std::chrono::milliseconds;
  if (members.empty()) throw UsageError("allreduce group: no members");
  for (size_t r = 0; r < members.size(); ++r) {
    if (!members[r]) throw UsageError("allreduce group: member " + std::to_string(r) + " is not an actor");
  }
  const size_t n = members.size();
  std::random_device random;
  const uint64_t group = ((uint64_t{random()} << 32) | random()) | 1;  // never 0
  const auto until = std::chrono::steady_clock::now() + deadline;
  auto left = [&] {
    return std::max<int64_t>(
        1, std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now()).count());
  };
  caf::scoped_actor self{system};
  auto typed = [&](size_t r) { return caf::actor_cast<allreduce_member>(members[r]); };
  std::optional<Error> failure;
  auto fail = [&](size_t r, const std::string& doing, const caf::error& e) {
    if (!failure) {
      failure = Error("allreduce group: " + rank_name(static_cast<int>(r)) + " " + doing + ": " + describe(system, e));
    }
  };

  std::vector<Endpoint> endpoints(n);
  for (size_t r = 0; r < n && !failure; ++r) {
    self->request(typed(r), milliseconds(left()), allreduce_listen_atom::value, group)
        .receive([&](std::string& host, uint16_t port) { endpoints[r] = {std::move(host), port}; },
                 [&](caf::error& e) { fail(r, "cannot listen", e); });
  }
  if (failure) throw *failure;
  // Every member must be asked before any answers: each waits for its left neighbour.
  using Handle = decltype(self->request(typed(0), deadline, allreduce_wire_atom::value, group, members,
                                        std::string(), uint16_t{0}, int64_t{0}));
  std::vector<Handle> handles;
  const int64_t wiring_ms = left();
  for (size_t r = 0; r < n; ++r) {
    const Endpoint& right = endpoints[(r + 1) % n];
    handles.push_back(self->request(typed(r), milliseconds(wiring_ms) + kAllreduceReplyGrace,
                                    allreduce_wire_atom::value, group, members, right.host, right.port, wiring_ms));
  }
  for (size_t r = 0; r < n; ++r) {
    handles[r].receive([](bool) {}, [&](caf::error& e) { fail(r, "cannot join the ring", e); });
  }
  if (failure) throw *failure;
  spdlog::debug("allreduce group of {} wired", n);
}

}  // namespace partita::runtime
