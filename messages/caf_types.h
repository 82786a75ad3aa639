// The CAF message types that carry encoded protocol messages between actors.
//
// Bulk data travels as std::vector<char>: CAF 0.17 serialises it with one memcpy, while a
// vector<float> or vector<int64_t> goes element by element (measured 8-10x slower). The
// bytes are a Cap'n Proto message built by messages/codec.h.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/meta/type_name.hpp>

#include <utility>
#include <vector>

namespace partita {

// One encoded protocol message. A distinct type (rather than a bare vector<char>) so that
// typed actor interfaces say what they exchange and cannot be matched by unrelated bytes.
struct Encoded {
  std::vector<char> bytes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Encoded& x) {
  return f(caf::meta::type_name("partita.Encoded"), x.bytes);
}

// Adds every type this protocol sends to `config`. Call it before creating the actor
// system: a type that is not registered compiles, and only fails when a message carrying
// it crosses a process boundary.
void register_message_types(caf::actor_system_config& config);

}  // namespace partita
