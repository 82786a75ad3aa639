// The identity a process proves itself with and the CA it checks peers against: one TLS
// context for every port the process opens or connects to (CAF's actor port through the
// gateway, runtime/tls/caf_gateway.h; the bulk transport's connections and the allreduce
// ring, runtime/transport/connection.h).
//
// Where credentials come from (the first that is given wins):
//   1. the flag  `partita --tls-dir DIR ...`
//   2. the environment variable PARTITA_TLS_DIR
//   3. the default folder ~/.partita/tls
// A folder holds ca.crt, node.crt and node.key (runtime/tls/certificates.h). node.key must be
// readable by its owner only (mode 0600 or stricter): a key others can read is refused
// (InsecureKeyFile), as ssh refuses one.
//
// The TLS settings, for every connection alike: TLS 1.3 only; the one cipher suite
// TLS_AES_128_GCM_SHA256 (AES-NI and PCLMULQDQ make it the fastest AEAD on x86-64: ~10 rounds
// where AES-256 takes 14, ~30% more bytes per cycle, and 128-bit keys are ample for links
// inside a cluster); both ends present a certificate and each must chain to the cluster's
// CA, or the handshake fails before any application byte is read. No session tickets, no
// renegotiation. Each end sends its certificate without the CA's (the peer holds it): the
// chain is built once per context, not in every handshake. Names in certificates are not matched against addresses: membership is
// the credential (nodes move between addresses).
//
// The certificate's role (runtime/tls/roles.h) decides what the process may do: loading one
// without a role is refused, saying how to issue it again.
//
// Insecure mode (`--insecure`, or no credentials installed): today's plaintext protocol,
// allowed on loopback addresses only (check_plaintext_bind); it has no roles (every local
// user can connect).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "base/error.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/roles.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace partita::runtime::tls {

// A private key file that its group or others can read.
class InsecureKeyFile : public Error {
 public:
  using Error::Error;
};

// A plaintext listener asked for on an address other hosts can reach.
class PlaintextNotLoopback : public UsageError {
 public:
  using UsageError::UsageError;
};

// No credentials where they were looked for.
class NoCredentials : public Error {
 public:
  using Error::Error;
};

// OpenSSL's queued errors as one line (and the queue emptied); "no detail" if none.
std::string openssl_errors();

class Credentials {
 public:
  // Loads the folder `dir`. Throws NoCredentials if ca.crt, node.crt or node.key is missing,
  // InsecureKeyFile if node.key is readable by group or others, Error if a file does not
  // parse, the key does not belong to the certificate or the certificate carries no role.
  static std::shared_ptr<const Credentials> load(const std::filesystem::path& dir);
  // From PEM text (an in-memory CA: `partita run`'s, the tests'); `origin` names it in
  // messages.
  static std::shared_ptr<const Credentials> from_pem(const PemIdentity& identity, std::string origin);
  // A CA that exists only in this process's memory, and a certificate of it (role node): for
  // a process whose peers are all inside it (`partita run`: its loopback ports trust only
  // itself).
  static std::shared_ptr<const Credentials> ephemeral();

  ~Credentials();
  Credentials(const Credentials&) = delete;
  Credentials& operator=(const Credentials&) = delete;

  // The context of every session, client or server (thread-safe: OpenSSL contexts are
  // shared by reference count).
  SSL_CTX* context() const { return context_; }
  // Where they came from: the folder, or "an in-memory CA".
  const std::string& origin() const { return origin_; }
  // What this process's certificate is: its role and its name (CN).
  MemberRole role() const { return role_; }
  const std::string& name() const { return name_; }

 private:
  Credentials(SSL_CTX* context, std::string origin, MemberRole role, std::string name)
      : context_(context), origin_(std::move(origin)), role_(role), name_(std::move(name)) {}
  SSL_CTX* context_;
  std::string origin_;
  MemberRole role_;
  std::string name_;
};

// The folder to load: `flag` if not empty, else $PARTITA_TLS_DIR if set and not empty, else
// ~/.partita/tls ($HOME; Error if HOME is unset).
std::filesystem::path credentials_dir(const std::string& flag);

// Throws InsecureKeyFile naming `key` and its mode if group or others may read or write it.
void check_key_permissions(const std::filesystem::path& key);

// The process's credentials: every listener and connection made after this uses them;
// null: insecure mode. A process belongs to one cluster: set once at start-up (the CLI from
// its flags; tests from their per-binary CA), before any actor system is made.
void set_process_credentials(std::shared_ptr<const Credentials> credentials);
std::shared_ptr<const Credentials> process_credentials();

// This process's role: its credentials', or node in insecure mode (no roles there).
MemberRole process_role();

// Throws Error unless this process's certificate is a node's (or it runs insecure): a user's
// may not serve the cluster's ports nor run actors on the nodes. The message starts with
// `what` ("cannot connect to daemon HOST:PORT to run actors on it"), names the certificate
// and its folder, and says how to get a node's.
void require_node_role(const std::string& what);

// In insecure mode, throws PlaintextNotLoopback naming `what` ("--listen") unless `host`
// is a loopback address (127.0.0.0/8, ::1, "localhost"). With credentials, does nothing.
void check_plaintext_bind(const std::string& host, const std::string& what);

}  // namespace partita::runtime::tls
