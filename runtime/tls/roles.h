// The role a certificate of the cluster carries: what its holder may do with the cluster.
//
//   node  a daemon (the head, a node) or a process that runs actors on the nodes (a job's
//         driver, `run --daemons`, `submit --daemons`, a Python cluster client): a full
//         member, which speaks the node-to-node protocol (CAF's BASP) and the bulk transport
//         with every other node.
//   user  a client of the head: `partita submit`, `status`, `logs`, `stop`. It may connect
//         to the head's port only, and there only submit, query and stop jobs and the
//         cluster (runtime/cluster/head.h refuses it a join, a heartbeat or a job report;
//         runtime/tls/caf_gateway.h keeps it to direct messages to actors of the head's).
//         Node ports and the transport refuse it once its handshake completes.
//
// Where the role is written: the subject's organizational unit (OU=node, OU=user), beside
// the cluster's O and the holder's CN. The subject is what the CA signs and what every tool
// shows (`openssl x509 -noout -subject`: O = partita cluster, OU = user, CN = alice), and it
// needs no object identifier of our own, which a private extendedKeyUsage or extension would
// (Kubernetes names a client's groups in its subject the same way). The extendedKeyUsage
// says the rest in the standard way: a node's certificate is for TLS servers and clients, a
// user's for clients only, so OpenSSL itself refuses a user's certificate on a listening
// side.
//
// A certificate issued before roles existed has no OU: it is refused, by its own process when
// it loads it and by every peer, with a message that says how to re-issue it (the CA stays
// valid: only the certificate is new). Accepting it as a node would leave every user
// certificate already handed out as powerful as before.
#pragma once

#include <optional>
#include <string>

typedef struct x509_st X509;

namespace partita::runtime::tls {

enum class MemberRole { node, user };

// "node" or "user".
const char* role_name(MemberRole role);

// The role named `text` ("node", "user"). Throws UsageError naming `what` (the option) and
// the roles there are.
MemberRole parse_role(const std::string& text, const std::string& what);

// The role `cert`'s subject carries; std::nullopt when it carries none (or one this version
// does not know).
std::optional<MemberRole> certificate_role(X509* cert);

// `cert`'s name (its subject's CN); "" if it has none.
std::string certificate_name(X509* cert);

// What a certificate that carries no role is told: its name, where it is, how to re-issue it.
std::string no_role_message(const std::string& name, const std::string& where);

}  // namespace partita::runtime::tls
