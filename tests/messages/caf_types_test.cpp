#include "messages/caf_types.h"

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <gtest/gtest.h>

#include <vector>

#include "messages/codec.h"

namespace partita {
namespace {

std::vector<char> encoded_reply() {
  HopOutput out;
  out.offsets = {0, 2};
  out.neighbors = {5, 6};
  out.edge_ids = {50, 60};
  std::vector<char> bytes;
  Encoder().hop_reply(11, out, bytes);
  return bytes;
}

caf::behavior echo(caf::event_based_actor*) {
  return {[](Encoded& message) { return message; }};
}

TEST(CafTypes, EncodedBytesRoundTripThroughAnActor) {
  caf::actor_system_config config;
  register_message_types(config);
  caf::actor_system system{config};
  auto actor = system.spawn(echo);
  caf::scoped_actor self{system};
  std::vector<char> bytes = encoded_reply();
  bool replied = false;
  self->request(actor, std::chrono::seconds(10), Encoded{bytes})
      .receive(
          [&](Encoded& reply) {
            replied = true;
            EXPECT_EQ(reply.bytes, bytes);
            EXPECT_EQ(decode_hop_reply(reply.bytes).request_id, 11u);
          },
          [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
  EXPECT_TRUE(replied);
  self->send_exit(actor, caf::exit_reason::user_shutdown);
}

// What the middleman does to a message bound for another process: serialise it by type
// name and rebuild it on the other side, which needs the type registered.
TEST(CafTypes, RegisteredTypeSurvivesSerialisation) {
  caf::actor_system_config config;
  register_message_types(config);
  caf::actor_system system{config};
  std::vector<char> bytes = encoded_reply();
  caf::message original = caf::make_message(Encoded{bytes});

  std::vector<char> buffer;
  caf::binary_serializer sink{system, buffer};
  ASSERT_FALSE(sink(original)) << "serialising failed";
  // The payload is copied in one block: the wire form holds the bytes contiguously.
  EXPECT_NE(std::search(buffer.begin(), buffer.end(), bytes.begin(), bytes.end()), buffer.end());

  caf::message copy;
  caf::binary_deserializer source{system, buffer};
  ASSERT_FALSE(source(copy)) << "deserialising failed";
  ASSERT_TRUE(copy.match_elements<Encoded>());
  EXPECT_EQ(copy.get_as<Encoded>(0).bytes, bytes);
}

TEST(CafTypes, UnregisteredTypeIsLostInDeserialisation) {
  // The failure register_message_types exists to prevent: without it CAF 0.17 rebuilds
  // an empty message, silently (measured: no error is returned).
  caf::actor_system_config registered_config;
  register_message_types(registered_config);
  caf::actor_system registered{registered_config};
  std::vector<char> buffer;
  caf::binary_serializer sink{registered, buffer};
  ASSERT_FALSE(sink(caf::make_message(Encoded{encoded_reply()})));

  caf::actor_system_config plain_config;
  caf::actor_system plain{plain_config};
  caf::message copy;
  caf::binary_deserializer source{plain, buffer};
  bool failed = false;
  try {
    failed = static_cast<bool>(source(copy));
  } catch (const std::exception&) {
    failed = true;
  }
  EXPECT_TRUE(failed || !copy.match_elements<Encoded>());
}

}  // namespace
}  // namespace partita
