// CAF's actor port behind TLS: the gateway between the network and CAF 0.17's BASP.
//
// Why not CAF's own openssl module: CAF 0.17's caf::openssl does require client
// certificates once `openssl.certificate`/`openssl.key`/`openssl.cafile` are set (its
// session sets SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT and trusts the cafile), so
// unauthenticated bytes would not reach BASP either. But it builds a new SSL_CTX (reading
// every file again) per connection, allows TLS 1.2 with any HIGH cipher, keeps a half-open
// handshake for ever, accepts any number of them, and logs nothing about a refused peer.
// And CAF 0.17 trusts what a connected peer sends: a handshake header without payload
// makes it read through a null pointer, a payload length of 4 GiB makes it allocate that.
// So the process's own code owns every socket on the network side, TLS or (insecure mode)
// plaintext alike, and CAF speaks BASP only over local sockets that only the gateway can
// reach:
//
//   listening: the gateway accepts on HOST:PORT; each connection gets kHandshakeDeadline to
//     complete a TLS 1.3 handshake with a certificate of the cluster, at most
//     kMaxHandshakes are pending at once (a new one cuts the oldest, so a flood delays a
//     member by one round of handshakes, not by the deadline), and a refusal is logged
//     (warn) with the peer's address. Only then is it connected to CAF's doorman, which
//     listens on a Unix socket in a folder only this user can enter (/tmp/partita-caf-UID,
//     mode 0700; sockets of killed processes are removed by the next gate), whose doorman
//     accepts only this process (SO_PEERCRED): every byte CAF reads came through the gateway.
//     In insecure mode (no credentials; loopback only) there is no TLS handshake; the rest
//     is the same. Refusals are logged (warn) in bursts of at most 10, then one a second,
//     each with the count of those left out (base/refusal_log.h).
//   connecting: the TLS session to the peer is made first (same deadline); CAF gets one end
//     of a socket pair as its connection, the gateway bridges the other to the session.
//     A connection is handed to CAF only once the peer's first BASP header is in CAF's
//     end (same deadline): CAF 0.17 drops an outgoing connection at its next heartbeat tick
//     if the peer's handshake has not been read by then (its basp_broker leaves the
//     connection's "last seen" time at zero), so a peer whose network thread was busy for
//     longer than the rest of a heartbeat interval could not be connected to. Seen in CI: a
//     restarted job's sampler failed with "connection_timeout" (tls_test.cpp, ...Heartbeat).
//
//   bridged: every BASP message a peer sends is followed header by header, and a header
//     CAF must not see closes the connection (logged as a warning with the peer's address
//     and certificate name) before CAF sees it: a payload over 512 MiB (CAF 0.17 allocates
//     a message's whole payload when its header arrives), an unknown operation, or a
//     payload length its operation does not allow (a handshake without one crashed CAF).
//
//   roles (runtime/tls/roles.h): a gate admits node certificates only, unless its actor was
//     published admitting users too (the head's); a certificate it does not admit, or one
//     without a role, is refused once the TLS handshake completes (logged as above, naming
//     the certificate and its role) and never reaches CAF. On a user's connection the
//     bridge also refuses what a user has no business sending to the head (a routed
//     message, a message to a named actor other than CAF's "SpawnServ" handshake query, a
//     server handshake). Every connection's BASP handshake is read whole before CAF sees it,
//     and the node id it names filed under the certificate's role (runtime/tls/peer_roles.h):
//     what the head asks before it lets a sender join. Outgoing connections admit only a
//     node's certificate on the server's side.
//
// One thread per process does all of it (accepts, handshakes, bridges) with non-blocking
// sockets and one poll, so a process's thread count does not grow with its connections;
// each established connection has 2 × 256 KiB of buffers, and kMaxBridges bounds them.
//
// Memory over all connections together (tests/runtime/tls_test.cpp, ManyConnections...):
//   - before authentication, at most kMaxHandshakes handshakes are held, each at most
//     kMaxHandshakeBytes: OpenSSL sizes a handshake message's buffer from its header, and
//     the largest a client may send is a ClientHello of 131,396 bytes (its buffer grows
//     by a third), beside the session's record buffers. So however many peers connect, what
//     they make the gateway hold stays under kMaxHandshakes × kMaxHandshakeBytes = 16 MiB.
//   - established (authenticated) connections: kMaxBridges × 2 × 256 KiB = 128 MiB of
//     bridge buffers, plus CAF's receive buffer of each connection, sized by the largest
//     message its member sent (at most 512 MiB each). That last part is bounded per
//     connection, not over all of them: the members of the cluster are trusted with it.
//
// Use middleman_actor(system) wherever CAF's middleman().actor_handle() would be used
// (connect_atom requests) and publish() instead of middleman().publish().
#pragma once

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/io/middleman_actor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <set>
#include <string>

#include "runtime/address.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"

namespace partita::runtime::tls {

inline constexpr std::chrono::seconds kHandshakeDeadline{10};
inline constexpr size_t kMaxHandshakes = 64;
inline constexpr size_t kMaxBridges = 256;
// What one pending handshake holds at most (above: OpenSSL's limits, not ours to set).
inline constexpr size_t kMaxHandshakeBytes = 256 * 1024;

// Spawns the gateway's middleman actor for `system` (with networking) and registers it;
// null `credentials`: insecure mode (plaintext, loopback only). Called by ActorSystem
// (runtime/actor_system.h).
caf::actor start_gateway(caf::actor_system& system, std::shared_ptr<const Credentials> credentials);

// Stops it (before the actor system goes: it waits for the gateway's thread).
void stop_gateway(caf::actor_system& system, caf::actor gateway);

// The middleman actor of connect_atom requests: start_gateway's, or CAF's own without one
// (an actor system without networking has no connections to make).
caf::io::middleman_actor middleman_actor(caf::actor_system& system);

// Publishes `actor` on `endpoint` (port 0: any free port) through middleman_actor(system);
// `reuse` sets SO_REUSEADDR; `admits`: the certificates the port accepts (users only on the
// head's: see "roles" above). Returns the bound port or CAF's error. In insecure mode,
// throws PlaintextNotLoopback for an address other than loopback.
caf::expected<uint16_t> publish(caf::actor_system& system, caf::strong_actor_ptr actor,
                                std::set<std::string> interface, const Endpoint& endpoint, bool reuse,
                                Session::Admits admits = Session::Admits::nodes);
template <class Handle>
caf::expected<uint16_t> publish(caf::actor_system& system, const Handle& actor, const Endpoint& endpoint, bool reuse,
                                Session::Admits admits = Session::Admits::nodes) {
  caf::detail::type_list<Handle> handle_type;
  return publish(system, caf::actor_cast<caf::strong_actor_ptr>(actor), system.message_types(handle_type), endpoint,
                 reuse, admits);
}

}  // namespace partita::runtime::tls
