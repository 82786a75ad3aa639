#include "runtime/tls/peer_roles.h"

#include <caf/actor_control_block.hpp>
#include <caf/actor_system.hpp>

#include <map>
#include <mutex>
#include <string>

#include "runtime/tls/credentials.h"

namespace partita::runtime::tls {

namespace {

struct Counts {
  size_t nodes = 0;
  size_t users = 0;
  std::string node_name, user_name;  // the latest of each role
};

// Made on first use, never destroyed (a gateway's thread may outlive static destructors).
struct Table {
  std::mutex mutex;
  std::map<std::string, Counts> nodes;
};
Table& table() {
  static auto* t = new Table();
  return *t;
}

}  // namespace

PeerRoleRecord::PeerRoleRecord(const caf::node_id& node, MemberRole role, std::string certificate)
    : key_(caf::to_string(node)), role_(role) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  Counts& c = t.nodes[key_];
  ++(role == MemberRole::node ? c.nodes : c.users);
  (role == MemberRole::node ? c.node_name : c.user_name) = std::move(certificate);
}

PeerRoleRecord::~PeerRoleRecord() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.nodes.find(key_);
  if (it == t.nodes.end()) return;
  --(role_ == MemberRole::node ? it->second.nodes : it->second.users);
  if (it->second.nodes == 0 && it->second.users == 0) t.nodes.erase(it);
}

std::optional<PeerIdentity> node_identity(caf::actor_system& system, const caf::node_id& node) {
  const std::shared_ptr<const Credentials> own = process_credentials();
  if (!own) return PeerIdentity{};  // insecure mode: no roles
  if (node == system.node()) return PeerIdentity{own->role(), own->name()};
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.nodes.find(caf::to_string(node));
  if (it == t.nodes.end()) return std::nullopt;
  if (it->second.users > 0) return PeerIdentity{MemberRole::user, it->second.user_name};
  return PeerIdentity{MemberRole::node, it->second.node_name};
}

bool sender_is_node(caf::actor_system& system, const caf::strong_actor_ptr& sender) {
  if (sender == nullptr) return false;
  const std::optional<PeerIdentity> identity = node_identity(system, sender->node());
  return identity && identity->role == MemberRole::node;
}

}  // namespace partita::runtime::tls
