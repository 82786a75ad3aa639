// The role (runtime/tls/roles.h) of each actor system this process is connected to, by its
// CAF node id: what an actor asks before it lets a message's sender act as a node (the head
// lets a node join, heartbeat and report on a job; a user may only submit, query and stop).
//
// Why by node id: CAF hands an actor its sender as a proxy of the sending node, and that node
// is the one the connection's BASP handshake named. The gateway (runtime/tls/caf_gateway.h)
// reads that handshake before CAF does and files the node it names under the role of the
// connection's certificate, for as long as the connection lives. A node named by connections
// of both roles counts as a user (a user's connection that names a node's id cannot lend the
// user that node's role; CAF ignores the second connection's handshake anyway, and messages
// over it carry no sender), and a node no connection of this process named has no role (a
// message routed through another node: refused where a node is needed).
#pragma once

#include <caf/fwd.hpp>
#include <caf/node_id.hpp>

#include <memory>
#include <optional>

#include "runtime/tls/roles.h"

namespace partita::runtime::tls {

// A node filed under a role, with the name of the certificate that showed it, while this
// lives (one per connection).
class PeerRoleRecord {
 public:
  PeerRoleRecord(const caf::node_id& node, MemberRole role, std::string certificate);
  ~PeerRoleRecord();
  PeerRoleRecord(const PeerRoleRecord&) = delete;
  PeerRoleRecord& operator=(const PeerRoleRecord&) = delete;

 private:
  std::string key_;
  MemberRole role_;
};

// What a node is to this process: its role, and the certificate's name that showed it.
struct PeerIdentity {
  MemberRole role = MemberRole::node;
  std::string certificate;
};

// `node` for `system`: this process's own role for its own node (its certificate's name; ""
// in insecure mode, where every node is a node), the role its connections' certificates carry
// for a connected node (a user's if any of them is a user's), std::nullopt for a node this
// process has no connection from.
std::optional<PeerIdentity> node_identity(caf::actor_system& system, const caf::node_id& node);

// Whether `sender` (an actor's current sender) may act as a node: its node's role is node.
// False for no sender (an anonymous message).
bool sender_is_node(caf::actor_system& system, const caf::strong_actor_ptr& sender);

}  // namespace partita::runtime::tls
