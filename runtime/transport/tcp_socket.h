// TCP sockets: the one place Partita resolves a host, binds a listening port and connects
// with a deadline. The bulk transport's connections and listeners and the TLS gateway in
// front of CAF's own ports all open their sockets here, so that every socket is
// close-on-exec and non-blocking, every connect is bounded by a deadline, and a failure
// reads the same whichever port it is.
#pragma once

#include <cstdint>
#include <string>

#include "base/file_util.h"
#include "runtime/address.h"
#include "runtime/transport/wait.h"

namespace partita::runtime {

// A socket listening on `host` (empty: every address) at `port` (0: a free port the system
// chooses), with room for `backlog` pending connections. `reuse_address` sets SO_REUSEADDR
// (a restarted daemon takes its port back while old connections linger in TIME_WAIT).
struct ListeningSocket {
  ScopedFd socket;    // non-blocking, close-on-exec
  Endpoint endpoint;  // `host` as given and the port bound
};
// Tries each address `host` resolves to until one binds. Throws Error "cannot resolve
// 'HOST': ..." or "cannot listen on HOST:PORT: <the last address's reason>".
ListeningSocket listen_tcp(const std::string& host, uint16_t port, int backlog, bool reuse_address);

// A connected TCP socket to host:port: non-blocking, close-on-exec, TCP_NODELAY (every
// exchange ends with a short segment; Nagle must not hold it). Tries each address the host
// resolves to. Throws TimedOut at `deadline`, Interrupted when `wakeup` (may be null) is
// notified, and Error "cannot resolve 'HOST': ..." or with the last address's reason
// ("Connection refused") when none connects.
ScopedFd connect_tcp(const std::string& host, uint16_t port, Deadline deadline, const Wakeup* wakeup);

// The next connection pending on `listening` (a listen_tcp socket): non-blocking,
// close-on-exec, TCP_NODELAY. Empty (get() < 0) when none is pending or accept failed:
// errno tells which (EAGAIN: none).
ScopedFd accept_tcp(int listening);

// Sets O_NONBLOCK on `fd`; throws Error naming the reason.
void set_nonblocking(int fd);

}  // namespace partita::runtime
