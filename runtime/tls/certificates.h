// The cluster's certificate authority and the certificates it issues: what `partita cluster
// init` and `partita cluster cert` write, made with OpenSSL's C API (no `openssl` command).
//
// Every port Partita opens speaks TLS 1.3 with certificates on both sides: a peer
// proves it belongs to the cluster by a certificate the cluster's CA signed. The CA is a
// self-signed certificate and its key; each node or user has a certificate (its name in the
// subject's CN, its role in the subject's OU: runtime/tls/roles.h) and a key of its own.
//
// Keys are ECDSA on P-256 (prime256v1): every TLS 1.3 and 1.2 stack verifies it, OpenSSL has
// constant-time x86-64 assembly for it (ecp_nistz256), and a handshake's sign and verify cost
// about 0.1 ms; Ed25519 would serve too, but P-256 is also what CAF 0.17's openssl module
// and older peers accept. Certificates are signed with SHA-256.
//
// A credentials folder (runtime/tls/credentials.h loads one):
//   ca.crt     the cluster's CA certificate (trusted: peers must chain to it)
//   node.crt   this node's or user's certificate, signed by the CA
//   node.key   its private key (mode 0600)
//   ca.key     the CA's private key (mode 0600): only in the folder that issues certificates
#pragma once

#include <filesystem>
#include <string>

#include "runtime/tls/roles.h"

namespace partita::runtime::tls {

inline constexpr const char* kCaCertFile = "ca.crt";
inline constexpr const char* kCaKeyFile = "ca.key";
inline constexpr const char* kCertFile = "node.crt";
inline constexpr const char* kKeyFile = "node.key";

// An identity in PEM text: the CA certificate peers must chain to, and a certificate with
// its key.
struct PemIdentity {
  std::string ca_cert;
  std::string cert;
  std::string key;
};

// A fresh CA (10 years) named `cluster`, and a first certificate for `node_name` (role node)
// signed by it, so that one machine can start a cluster at once. Nothing is written.
struct PemAuthority {
  std::string ca_key;
  PemIdentity identity;
};
PemAuthority make_authority(const std::string& cluster, const std::string& node_name);

// A certificate (2 years) for `name` in `role`, with a new key, signed by the CA given in
// PEM: a node's is usable as TLS client and server, a user's as client only (roles.h).
// Throws Error if the CA's PEM does not parse or its key does not match its certificate.
PemIdentity issue(const std::string& ca_cert_pem, const std::string& ca_key_pem, const std::string& name,
                  MemberRole role);

// `partita cluster init DIR`: creates DIR (and parents; an existing folder must hold no
// CA yet) with ca.crt, ca.key and a first identity node.crt/node.key named `node_name`
// (role node: the first machine of a cluster runs its head);
// keys are written with mode 0600. Throws Error naming the file that exists or cannot be
// written.
void init_cluster(const std::filesystem::path& dir, const std::string& node_name);

// `partita cluster cert NAME --role ROLE`: issues a certificate for `name` in `role` with the
// CA in `ca_dir` and writes a credentials folder `out` (ca.crt, node.crt, node.key; created,
// must not exist) to copy to that node or user. Throws Error naming a missing CA file, a key
// readable by others (InsecureKeyFile) or an existing `out`.
void issue_to_folder(const std::filesystem::path& ca_dir, const std::string& name, MemberRole role,
                     const std::filesystem::path& out);

// Throws UsageError unless `name` is 1..64 characters of [A-Za-z0-9._-]: it becomes a CN
// and a folder name.
void check_identity_name(const std::string& name);

}  // namespace partita::runtime::tls
