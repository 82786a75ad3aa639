// One TLS session over a connected, non-blocking socket: the handshake and the transfers,
// each a single non-blocking step, so that callers keep their own poll loops and deadlines
// (the transport's wait_ready, the gateway's pumps). The settings are the process's
// (runtime/tls/credentials.h): TLS 1.3, AES-128-GCM, a certificate of the cluster on both
// sides.
//
// After a step that made no progress, wants() tells which readiness (POLLIN or POLLOUT) to
// wait for. buffered() is true while decrypted or read-ahead bytes wait inside the session:
// a caller must read before it polls the socket, which cannot see them.
//
// A handshake is complete only once the peer's certificate has a role this end admits
// (runtime/tls/roles.h): a server admits nodes, and users too where it is told so (the
// head's actor port, runtime/tls/caf_gateway.h); a client admits only a node as its server.
// A certificate without a role is refused everywhere.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/error.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/roles.h"

typedef struct ssl_st SSL;

namespace partita::runtime::tls {

// A handshake that failed: no certificate, one of another cluster, not TLS at all, or a
// TLS setting the peer does not share. The message says which, as OpenSSL tells it.
class HandshakeFailed : public Error {
 public:
  using Error::Error;
};

// A peer whose certificate of the cluster carries no role, or one this end does not admit.
class RoleRefused : public HandshakeFailed {
 public:
  using HandshakeFailed::HandshakeFailed;
};

// The peer closed the session (or its socket) or broke the protocol.
class SessionClosed : public Error {
 public:
  using Error::Error;
};

class Session {
 public:
  enum class Role { client, server };
  // The peers a server admits (a client admits only nodes, whatever this says).
  enum class Admits { nodes, nodes_and_users };
  // Does not own `fd`. Keeps `credentials` alive.
  Session(std::shared_ptr<const Credentials> credentials, int fd, Role role, Admits admits = Admits::nodes);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // One step of the handshake: true once it is complete (then transfers may start). Throws
  // HandshakeFailed with the reason, RoleRefused naming the peer's certificate and its role
  // (or its lack of one) when this end does not admit it.
  bool handshake();
  bool established() const { return established_; }

  // What the peer's certificate calls it (its CN); empty before the handshake.
  std::string peer_name() const;
  // The role the peer's certificate carries; valid once handshake() returned true.
  MemberRole peer_role() const { return peer_role_; }

  // Sends what the session takes now, at most `bytes` (0: wait for wants()). Throws
  // SessionClosed.
  size_t write_some(const void* data, size_t bytes);
  // Receives what has arrived, at most `bytes` (0: wait for wants()). Throws SessionClosed
  // when the peer closed or broke the stream.
  size_t read_some(void* data, size_t bytes);

  short wants() const { return wants_; }
  bool buffered() const;

 private:
  // Sorts a result <= 0 of SSL_*: sets wants_ and returns for a retry, or throws.
  void on_no_progress(int result, const char* doing, bool handshaking);
  // Throws RoleRefused unless the peer's certificate carries a role this end admits.
  void check_peer_role();

  std::shared_ptr<const Credentials> credentials_;
  SSL* ssl_ = nullptr;
  Role role_;
  Admits admits_;
  MemberRole peer_role_ = MemberRole::node;
  short wants_ = 0;
  bool established_ = false;
};

}  // namespace partita::runtime::tls
