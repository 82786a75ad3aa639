// The runtime's CAF error category: errors that cross the network (a reply to `spawn`)
// travel as caf::error with a one-line context string, and become partita::Error at the
// caller.
#pragma once

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <string>

namespace partita::runtime {

constexpr caf::atom_value kErrorCategory = caf::atom("partita");

enum class RuntimeErrc : uint8_t {
  unknown_actor_type = 1,
  spawn_failed = 2,
  refused = 3,  // an actor refused a request (bad arguments, wrong state); the context says why
};

// An error of our category whose context is `what` (a complete sentence for the user).
caf::error make_runtime_error(RuntimeErrc code, std::string what);
// The renderer registered with every actor system (see configure()).
std::string render_runtime_error(uint8_t code, const caf::message& context);
// One line for the user: our own errors give their context as is, CAF's are rendered.
std::string describe(caf::actor_system& system, const caf::error& error);

}  // namespace partita::runtime
