// The CAF message types that carry encoded protocol messages between actors.
//
// Bulk data travels as std::vector<char>: CAF 0.17 serialises it with one memcpy, while a
// vector<float> or vector<int64_t> goes element by element (measured 8-10x slower). The
// bytes are a Cap'n Proto message built by messages/codec.h.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/sec.hpp>

#include <utility>
#include <vector>

namespace partita {

// One encoded protocol message. A distinct type (rather than a bare vector<char>) so that
// typed actor interfaces say what they exchange and cannot be matched by unrelated bytes.
struct Encoded {
  std::vector<char> bytes;
};

// Writes or reads `bytes` as CAF's byte sequence (a length, then the bytes). On read, a
// length beyond the bytes left in the message is refused before anything is allocated:
// CAF 0.17 sizes the vector from the length first, so a 40-byte message claiming 4 GiB
// made the receiver allocate 4 GiB (found by fuzz/fuzz_caf_messages.cpp). BASP reads
// every message with a binary_deserializer over its received payload, which says how many
// bytes are left; other deserializers keep CAF's own reading.
template <class Inspector>
typename Inspector::result_type inspect_bytes(Inspector& f, const char* type_name, std::vector<char>& bytes) {
  if constexpr (Inspector::reads_state) {
    return f(caf::meta::type_name(type_name), bytes);
  } else {
    auto* binary = dynamic_cast<caf::binary_deserializer*>(&f);
    if (binary == nullptr) return f(caf::meta::type_name(type_name), bytes);
    size_t size = 0;
    if (auto failed = binary->begin_sequence(size)) return failed;
    if (size > binary->remaining()) return caf::make_error(caf::sec::end_of_stream);
    bytes.resize(size);
    if (size > 0) {
      if (auto failed = binary->apply_raw(size, bytes.data())) return failed;
    }
    return binary->end_sequence();
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Encoded& x) {
  return inspect_bytes(f, "partita.Encoded", x.bytes);
}

// Adds every type this protocol sends to `config`. Call it before creating the actor
// system: a type that is not registered compiles, and only fails when a message carrying
// it crosses a process boundary.
void register_message_types(caf::actor_system_config& config);

}  // namespace partita
