// One TLS session over a connected, non-blocking socket: the handshake and the transfers,
// each a single non-blocking step, so that callers keep their own poll loops and deadlines
// (the transport's wait_ready, the gateway's pumps). The settings are the process's
// (runtime/tls/credentials.h): TLS 1.3, AES-128-GCM, a certificate of the cluster on both
// sides.
//
// After a step that made no progress, wants() tells which readiness (POLLIN or POLLOUT) to
// wait for. buffered() is true while decrypted or read-ahead bytes wait inside the session:
// a caller must read before it polls the socket, which cannot see them.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/error.h"
#include "runtime/tls/credentials.h"

typedef struct ssl_st SSL;

namespace partita::runtime::tls {

// A handshake that failed: no certificate, one of another cluster, not TLS at all, or a
// TLS setting the peer does not share. The message says which, as OpenSSL tells it.
class HandshakeFailed : public Error {
 public:
  using Error::Error;
};

// The peer closed the session (or its socket) or broke the protocol.
class SessionClosed : public Error {
 public:
  using Error::Error;
};

class Session {
 public:
  enum class Role { client, server };
  // Does not own `fd`. Keeps `credentials` alive.
  Session(std::shared_ptr<const Credentials> credentials, int fd, Role role);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // One step of the handshake: true once it is complete (then transfers may start). Throws
  // HandshakeFailed with the reason.
  bool handshake();
  bool established() const { return established_; }

  // What the peer's certificate calls it (its CN); empty before the handshake.
  std::string peer_name() const;

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

  std::shared_ptr<const Credentials> credentials_;
  SSL* ssl_ = nullptr;
  short wants_ = 0;
  bool established_ = false;
};

}  // namespace partita::runtime::tls
