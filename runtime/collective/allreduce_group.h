// Wiring an allreduce group: the driver's side. A fresh token per wiring makes ring
// connections from another group (or an earlier wiring of the same members) be refused.
#pragma once

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <vector>

namespace partita::runtime {

// Wires members[r] as rank r into a ring (in this process or on daemons) and returns once
// every member's ring connections are up. Throws UsageError for no members or a null one,
// Error naming the rank that refuses (wrong rank or size, already wired) or does not
// answer within `deadline`.
void connect_allreduce_group(caf::actor_system& system, const std::vector<caf::actor>& members,
                             std::chrono::milliseconds deadline);

}  // namespace partita::runtime
