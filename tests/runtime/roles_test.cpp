// Certificates carry a role (runtime/tls/roles.h): a node's may do everything a member does,
// a user's may submit, query and stop jobs at the head and nothing else. What a user relies
// on: `cluster cert --role` writes it, a certificate without one is refused with how to
// re-issue it, the CLI's head commands work with a user's certificate, and a user's
// certificate opens no BASP connection to a node, joins no cluster, and takes no daemon down.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "base/file_util.h"
#include "base/subprocess.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/client.h"
#include "runtime/cluster/head_client.h"
#include "runtime/daemon_child.h"
#include "runtime/errors.h"
#include "runtime/runtime_test_util.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"
#include "runtime/transport/tcp_socket.h"
#include "runtime/transport/wait.h"
#include "test_paths.h"

namespace partita::runtime {
namespace {

using testing::kPartitaBinary;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "partita-roles-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// Restores the process's credentials (the test binary's cluster) when a test swapped them.
struct CredentialsGuard {
  std::shared_ptr<const tls::Credentials> saved = tls::process_credentials();
  ~CredentialsGuard() { tls::set_process_credentials(saved); }
};

// The test binary's cluster (tests/tls_cluster.cpp): its CA signs the certificates issued here.
fs::path cluster_dir() { return std::getenv("PARTITA_TLS_DIR"); }

X509* read_certificate(const fs::path& file) {
  const std::string pem = read_file(file.string());
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return cert;
}

// A certificate as `cluster cert` wrote them before roles: CN only, signed by the CA of
// `ca_dir`, written with its key to a credentials folder `out`.
void write_certificate_without_role(const fs::path& ca_dir, const std::string& name, const fs::path& out) {
  X509* ca = read_certificate(ca_dir / "ca.crt");
  const std::string ca_key_pem = read_file((ca_dir / "ca.key").string());
  BIO* bio = BIO_new_mem_buf(ca_key_pem.data(), static_cast<int>(ca_key_pem.size()));
  EVP_PKEY* ca_key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 7);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, X509_get_subject_name(ca));
  X509_set_pubkey(cert, key);
  ASSERT_GT(X509_sign(cert, ca_key, EVP_sha256()), 0);
  fs::create_directories(out);
  fs::copy_file(ca_dir / "ca.crt", out / "ca.crt");
  FILE* f = std::fopen((out / "node.crt").c_str(), "w");
  PEM_write_X509(f, cert);
  std::fclose(f);
  f = std::fopen((out / "node.key").c_str(), "w");
  PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  fs::permissions(out / "node.key", fs::perms::owner_read | fs::perms::owner_write);
  X509_free(cert);
  EVP_PKEY_free(key);
  EVP_PKEY_free(ca_key);
  X509_free(ca);
}

TEST(RolesTest, ACertificateCarriesItsRoleAndOneWithoutIsRefusedSayingHowToReissue) {
  TempDir tmp;
  const fs::path ca = tmp.path / "ca";
  tls::init_cluster(ca, "head");
  EXPECT_EQ(tls::Credentials::load(ca)->role(), tls::MemberRole::node) << "the first certificate runs the head";
  tls::issue_to_folder(ca, "alice", tls::MemberRole::user, tmp.path / "alice");
  tls::issue_to_folder(ca, "worker", tls::MemberRole::node, tmp.path / "worker");
  const auto alice = tls::Credentials::load(tmp.path / "alice");
  EXPECT_EQ(alice->role(), tls::MemberRole::user);
  EXPECT_EQ(alice->name(), "alice");
  EXPECT_EQ(tls::Credentials::load(tmp.path / "worker")->role(), tls::MemberRole::node);

  // In the subject, as every tool shows it; a user's is a TLS client only.
  X509* user_cert = read_certificate(tmp.path / "alice" / "node.crt");
  X509* node_cert = read_certificate(tmp.path / "worker" / "node.crt");
  ASSERT_NE(user_cert, nullptr);
  ASSERT_NE(node_cert, nullptr);
  char subject[256];
  X509_NAME_oneline(X509_get_subject_name(user_cert), subject, sizeof(subject));
  EXPECT_CONTAINS(std::string(subject), "/OU=user/CN=alice");
  EXPECT_EQ(X509_check_purpose(user_cert, X509_PURPOSE_SSL_CLIENT, 0), 1);
  EXPECT_NE(X509_check_purpose(user_cert, X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_purpose(node_cert, X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_purpose(node_cert, X509_PURPOSE_SSL_CLIENT, 0), 1);
  X509_free(user_cert);
  X509_free(node_cert);

  // One issued before roles: refused on load, naming it and the command that re-issues it.
  write_certificate_without_role(ca, "old-node", tmp.path / "old");
  try {
    tls::Credentials::load(tmp.path / "old");
    ADD_FAILURE() << "a certificate without a role loaded";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "the certificate 'old-node'");
    EXPECT_CONTAINS(e.what(), "carries no role");
    EXPECT_CONTAINS(e.what(), "partita cluster cert old-node --role node");
  }

  // The command line: a user's by default, a role it does not know named.
  ProcessResult r = run_process({kPartitaBinary, "cluster", "cert", "carol", "--dir", ca.string()}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "user certificate for carol");
  EXPECT_EQ(tls::Credentials::load(ca / "carol")->role(), tls::MemberRole::user);
  r = run_process({kPartitaBinary, "cluster", "cert", "dave", "--dir", ca.string(), "--role", "admin"}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_CONTAINS(r.err, "--role 'admin'");
  EXPECT_FALSE(fs::exists(ca / "dave"));
}

// Waits (at most 60 s) until `partita status --json` run with `tls_dir` lists `name` as
// alive. False, with what it printed last in `out`, if it does not.
bool wait_for_member(const std::string& head, const fs::path& tls_dir, const std::string& name, std::string& out) {
  const auto until = Clock::now() + seconds(60);
  while (Clock::now() < until) {
    ProcessResult r =
        run_process({kPartitaBinary, "--tls-dir", tls_dir.string(), "status", "--json", "--address", head}, 60);
    out = r.out + r.err;
    if (r.exit_code == 0) {
      try {
        const nlohmann::json s = nlohmann::json::parse(r.out);
        for (const auto& n : s["nodes"]) {
          if (n["name"] == name && n["state"] == "alive") return true;
        }
      } catch (const nlohmann::json::exception&) {
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return false;
}

// Reads a session until the peer closes it (true) or `until` passes (false).
bool closed_by_peer(tls::Session& session, int fd, Clock::time_point until) {
  char buffer[4096];
  for (;;) {
    try {
      if (session.read_some(buffer, sizeof(buffer)) == 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, session.wants(), 0};
        ::poll(&p, 1, static_cast<int>(left.count()));
      }
    } catch (const Error&) {
      return true;
    }
  }
}

// A head and a node daemon (the cluster's node certificates) and a user, alice, with a
// user's certificate: she submits, follows, queries and cancels a job and stops the cluster
// with the CLI; her certificate opens no connection to the node's port (the node logs her
// certificate and role and lives), joins nothing and sends no heartbeat; a node's
// certificate still spawns on the node.
TEST(RolesTest, AUserSubmitsQueriesAndStopsButCannotSpawnOnANodeOrJoin) {
  TempDir tmp;
  const fs::path user = tmp.path / "alice";
  tls::issue_to_folder(cluster_dir(), "alice", tls::MemberRole::user, user);
  DaemonChild head = start_daemon_child(kPartitaBinary, {"--head", "--name", "head", "--runs", (tmp.path / "runs").string()},
                                        {"--log-level", "info"});
  ASSERT_FALSE(head.address.empty());
  DaemonChild node = start_daemon_child(
      kPartitaBinary, {"--join", head.address, "--name", "member", "--cache", (tmp.path / "cache").string()},
      {"--log-level", "info"});
  ASSERT_FALSE(node.address.empty());
  std::string status;
  ASSERT_TRUE(wait_for_member(head.address, user, "member", status)) << status;

  // The user's CLI at the head: submit (the job's driver, the head's child, holds a node's
  // certificate and runs it on the node), logs, status, stop.
  std::ofstream(tmp.path / "roles.yaml")
      << "data:\n"
         "  generate: {kind: sbm, nodes: 400, classes: 4, features: 8, avg_degree: 6, seed: 5}\n"
         "  num_partitions: 1\n"
         "model: {kind: graphsage, hidden: 8, layers: 2}\n"
         "sampling: {fanouts: [3, 3], batch_size: 16}\n"
         "train: {epochs: 100000}\n"
         "output: unused\n";
  const std::string as_user = "--tls-dir=" + user.string();
  ProcessResult r = run_process(
      {kPartitaBinary, as_user, "submit", (tmp.path / "roles.yaml").string(), "--address", head.address, "--detach"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "job roles-1 submitted to " + head.address);
  r = run_process({kPartitaBinary, as_user, "logs", "roles-1", "--address", head.address}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_process({kPartitaBinary, as_user, "status", "--address", head.address}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "roles-1");
  r = run_process({kPartitaBinary, as_user, "stop", "roles-1", "--address", head.address}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "job roles-1 cancelled");

  const auto alice = tls::Credentials::load(user);
  {
    // Her bytes to the node's actor port: the handshake completes on her side, then the node
    // closes the connection before CAF sees a byte, logging her certificate and its role.
    const Endpoint at = parse_endpoint(node.address, "node");
    const auto until = Clock::now() + seconds(20);
    ScopedFd fd = connect_tcp(at.host, at.port, until, nullptr);
    tls::Session session(alice, fd.get(), tls::Session::Role::client);
    bool refused = false;
    try {
      while (!session.handshake()) wait_ready(fd.get(), session.wants(), until, nullptr, "the TLS handshake");
      refused = closed_by_peer(session, fd.get(), until);
    } catch (const Error&) {
      refused = true;  // the node's refusal arrived within the handshake
    }
    EXPECT_TRUE(refused);
  }
  {
    // Her actor system: no BASP connection to the node, so nothing spawned there; the
    // client's own check says why first.
    CredentialsGuard guard;
    tls::set_process_credentials(alice);
    ActorSystemOptions options;
    options.networking = true;
    ActorSystem system(options);
    EXPECT_THROW(connect_published(system.get(), parse_endpoint(node.address, "node"), std::chrono::seconds(10),
                                   "cannot reach the node at"),
                 Error);
    try {
      DaemonConnection::connect(system.get(), node.address, seconds(10));
      ADD_FAILURE() << "a user's certificate connected to a node";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "cannot connect to daemon " + node.address + " to run actors on it");
      EXPECT_CONTAINS(e.what(), "needs a node's certificate");
      EXPECT_CONTAINS(e.what(), "has role user");
    }
    // At the head she is a client: a join and a heartbeat are refused, naming her certificate.
    const head_actor handle = connect_head(system.get(), parse_endpoint(head.address, "head"), seconds(10));
    caf::scoped_actor self{system.get()};
    caf::actor agent = system.get().spawn([]() -> caf::behavior { return {[](stop_node_atom) {}}; });
    std::optional<std::string> join_error;
    self->request(handle, seconds(10), join_atom::value, NodeInfo{"intruder", "127.0.0.1:1", "0", 1, 1}, agent)
        .receive([&](uint64_t, int64_t, int64_t) {}, [&](caf::error& e) { join_error = describe(system.get(), e); });
    ASSERT_TRUE(join_error.has_value()) << "a user's certificate joined the cluster";
    EXPECT_CONTAINS(*join_error, "join as intruder refused");
    EXPECT_CONTAINS(*join_error, "the certificate 'alice' (role user)");
    std::optional<std::string> beat_error;
    self->request(handle, seconds(10), heartbeat_atom::value, uint64_t{1}, NodeLoad{})
        .receive([&](bool) {}, [&](caf::error& e) { beat_error = describe(system.get(), e); });
    ASSERT_TRUE(beat_error.has_value()) << "a user's certificate sent a member's heartbeat";
    EXPECT_CONTAINS(*beat_error, "only a node's certificate may do that");
    caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
    const ClusterStatus s = cluster_status(system.get(), handle, head.address, seconds(10));
    for (const NodeStatus& n : s.nodes) EXPECT_NE(n.info.name, "intruder");
  }
  // A daemon with her certificate does not start.
  r = run_process({kPartitaBinary, as_user, "daemon", "--join", head.address, "--listen", "127.0.0.1:0"}, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_CONTAINS(r.err, "a node serves the cluster's ports: this needs a node's certificate");

  ASSERT_TRUE(node.process->running()) << node.process->errors_so_far();
  ASSERT_TRUE(head.process->running()) << head.process->errors_so_far();
  EXPECT_CONTAINS(node.process->errors_so_far(), "the certificate 'alice' has role user: this port admits node "
                                                 "certificates only");
  EXPECT_CONTAINS(head.process->errors_so_far(), "head: refused join as intruder from the certificate 'alice' (role user)");
  {
    // A node's certificate (the test binary's) still spawns on the node.
    ActorSystemOptions options;
    options.networking = true;
    ActorSystem member(options);
    DaemonConnection conn = DaemonConnection::connect(member.get(), node.address, seconds(10));
    EXPECT_EQ(conn.ping(seconds(10)).name, "member");
    caf::actor spawned = conn.spawn("allreduce", {{"rank", "0"}, {"size", "1"}}, seconds(30));
    EXPECT_TRUE(spawned);
    caf::anon_send_exit(spawned, caf::exit_reason::user_shutdown);
  }
  // And she stops the cluster.
  r = run_process({kPartitaBinary, as_user, "down", "--yes", "--address", head.address}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "1 node(s) and the head");
  EXPECT_EQ(node.process->wait(60).exit_code, 0) << node.process->errors_so_far();
  EXPECT_EQ(head.process->wait(60).exit_code, 0) << head.process->errors_so_far();
}

}  // namespace
}  // namespace partita::runtime
