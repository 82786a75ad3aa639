#include "runtime/staging/node_staging.h"

#include <caf/all.hpp>
#include <optional>

#include "base/error.h"
#include "runtime/errors.h"
#include "runtime/staging/stager.h"

namespace partita::runtime {

std::vector<StageOutcome> stage_on_nodes(Runtime& rt, const std::vector<std::vector<ServedUnit>>& served,
                                         const std::string& host, std::chrono::milliseconds deadline,
                                         const std::string& what) {
  if (static_cast<int>(served.size()) != rt.num_nodes()) {
    throw UsageError("stage_on_nodes: " + std::to_string(served.size()) + " lists of units for " +
                     std::to_string(rt.num_nodes()) + " nodes");
  }
  StageServer server(host, deadline);
  std::vector<caf::actor> stagers;
  caf::scoped_actor self(rt.system());
  struct StopStagers {
    caf::scoped_actor& self;
    std::vector<caf::actor>& stagers;
    ~StopStagers() {
      for (const auto& s : stagers) {
        self->monitor(s);
        self->send_exit(s, caf::exit_reason::user_shutdown);
      }
      for (size_t gone = 0; gone < stagers.size(); ++gone) {
        bool timed_out = false;
        self->receive([](const caf::down_msg&) {}, caf::after(std::chrono::seconds(5)) >> [&] { timed_out = true; });
        if (timed_out) break;
      }
    }
  } stop{self, stagers};
  std::vector<caf::response_handle<caf::blocking_actor, caf::message, true>> pending;
  for (int node = 0; node < rt.num_nodes(); ++node) {
    std::vector<StagedUnit> units;
    for (const auto& s : served[node]) units.push_back(s.unit);
    const ChannelOffer offer = server.open(served[node]);
    stagers.push_back(rt.spawn(node, kStagerType, {}));
    pending.push_back(self->request(stagers.back(), caf::duration(deadline), stage_atom::value,
                                    stage_request_json(units, offer)));
  }
  std::vector<StageOutcome> outcomes;
  for (int node = 0; node < rt.num_nodes(); ++node) {
    std::optional<std::string> failure;
    std::string answer;
    pending[node].receive([&](std::string& outcome) { answer = std::move(outcome); },
                          [&](caf::error& e) { failure = describe(rt.system(), e); });
    if (failure) throw Error("staging " + what + " on " + rt.node_name(node) + " failed: " + *failure);
    outcomes.push_back(stage_outcome_from_json(answer));
  }
  return outcomes;
}

}  // namespace partita::runtime
