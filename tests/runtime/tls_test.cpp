// Mutual TLS on every port (issue 14): the cluster CA and certificates, where credentials
// are loaded from, and a daemon under the probes of the issue: a 32-byte packet, clients
// without a certificate of the cluster, a flood of idle connections beside a real client.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "base/error.h"
#include "daemon_process.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/client.h"
#include "runtime/runtime_test_util.h"
#include "runtime/tls/caf_gateway.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "runtime/transport/connection.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {
namespace {

using std::chrono::seconds;
namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "partita-tls-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// Restores the process's credentials (the test binary's cluster) when a test swapped them.
struct CredentialsGuard {
  std::shared_ptr<const tls::Credentials> saved = tls::process_credentials();
  ~CredentialsGuard() { tls::set_process_credentials(saved); }
};

// A raw TCP connection to a daemon's port, as a hostile local user makes one.
int raw_connect(const std::string& address) {
  const Endpoint endpoint = parse_endpoint(address, "address");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(endpoint.port);
  ::inet_pton(AF_INET, endpoint.host.c_str(), &to.sin_addr);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ADD_FAILURE() << "cannot connect to " << address << ": " << std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

TEST(TlsTest, ClusterInitWritesACaAndAFirstIdentityWithPrivateKeys) {
  TempDir tmp;
  const fs::path dir = tmp.path / "cluster";
  tls::init_cluster(dir, "head");
  for (const char* file : {"ca.crt", "ca.key", "node.crt", "node.key"}) EXPECT_TRUE(fs::exists(dir / file)) << file;
  EXPECT_EQ(mode_of(dir / "ca.key"), 0600u);
  EXPECT_EQ(mode_of(dir / "node.key"), 0600u);
  EXPECT_EQ(mode_of(dir), 0700u);
  EXPECT_NE(tls::Credentials::load(dir), nullptr);
  // A second init would replace the cluster's CA: refused, naming the folder.
  try {
    tls::init_cluster(dir, "head");
    ADD_FAILURE() << "init over an existing CA";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "already holds a cluster CA");
  }
}

TEST(TlsTest, IssuedCertificatesLoadAndAKeyOthersCanReadIsRefused) {
  TempDir tmp;
  tls::init_cluster(tmp.path / "ca", "head");
  tls::issue_to_folder(tmp.path / "ca", "worker-1", tmp.path / "worker-1");
  EXPECT_NE(tls::Credentials::load(tmp.path / "worker-1"), nullptr);
  fs::permissions(tmp.path / "worker-1" / "node.key", fs::perms::group_read, fs::perm_options::add);
  EXPECT_THROW(tls::Credentials::load(tmp.path / "worker-1"), tls::InsecureKeyFile);
  try {
    tls::Credentials::load(tmp.path / "worker-1");
  } catch (const tls::InsecureKeyFile& e) {
    EXPECT_CONTAINS(e.what(), "node.key");
    EXPECT_CONTAINS(e.what(), "0640");
  }
  EXPECT_THROW(tls::Credentials::load(tmp.path / "nowhere"), tls::NoCredentials);
  EXPECT_THROW(tls::check_identity_name("../x"), UsageError);
}

TEST(TlsTest, CredentialsFolderComesFromTheFlagThenTheEnvironmentThenHome) {
  const char* saved = std::getenv("PARTITA_TLS_DIR");
  const std::string env_before = saved != nullptr ? saved : "";
  EXPECT_EQ(tls::credentials_dir("/flag"), fs::path("/flag"));
  ::setenv("PARTITA_TLS_DIR", "/from-env", 1);
  EXPECT_EQ(tls::credentials_dir(""), fs::path("/from-env"));
  ::unsetenv("PARTITA_TLS_DIR");
  EXPECT_EQ(tls::credentials_dir(""), fs::path(std::getenv("HOME")) / ".partita" / "tls");
  if (!env_before.empty()) ::setenv("PARTITA_TLS_DIR", env_before.c_str(), 1);
}

TEST(TlsTest, InsecureModeRefusesToListenBeyondLoopback) {
  CredentialsGuard guard;
  tls::set_process_credentials(nullptr);
  EXPECT_THROW(tls::check_plaintext_bind("0.0.0.0", "--listen"), tls::PlaintextNotLoopback);
  EXPECT_THROW(Listener("0.0.0.0"), tls::PlaintextNotLoopback);
  EXPECT_NO_THROW(tls::check_plaintext_bind("127.0.0.1", "--listen"));
  EXPECT_NO_THROW(tls::check_plaintext_bind("::1", "--listen"));
}

TEST(TlsTest, InsecureDaemonRefusesANonLoopbackListenWithANamedError) {
  ChildProcess child({PARTITA_BINARY, "--insecure", "daemon", "--listen", "0.0.0.0:0"});
  const ProcessResult result = child.wait(30);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_CONTAINS(result.err, "plaintext (--insecure) listens on loopback addresses only");
  EXPECT_CONTAINS(result.err, "--insecure: no TLS");
}

TEST(TlsTest, TransportRefusesAPlaintextHelloAndServesAMemberOfTheCluster) {
  Listener listener("127.0.0.1");
  const uint64_t token = 7;
  // A client that speaks the transport's plaintext protocol, a valid hello included: its
  // bytes are not a TLS handshake (OpenSSL may wait for the rest of what it takes for a
  // record, then the hello deadline ends it) and it is never accepted.
  const int raw = raw_connect(listener.endpoint().to_string());
  ASSERT_GE(raw, 0);
  unsigned char hello[wire::kHelloBytes];
  wire::encode_hello({token, 1}, hello);
  ASSERT_EQ(::send(raw, hello, sizeof(hello), MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(hello)));
  // spdlog's default logger (this test process never sets one up) writes to stdout.
  ::testing::internal::CaptureStdout();
  EXPECT_THROW(listener.accept(token, 1, 0, "member",
                               std::chrono::steady_clock::now() + Listener::kHelloDeadline + seconds(2), nullptr),
               TimedOut);
  const std::string log = ::testing::internal::GetCapturedStdout();
  EXPECT_CONTAINS(log, "refused a connection from 127.0.0.1:");
  ::close(raw);

  // A member of the cluster is accepted and its bytes arrive.
  std::string error;
  std::thread member([&] {
    try {
      const auto until = std::chrono::steady_clock::now() + seconds(10);
      Connection c = Connection::connect(listener.endpoint(), token, 1, "listener", until, nullptr);
      c.confirm(token, 0, until, nullptr);
      const char byte = 42;
      c.send_all(&byte, 1, until, nullptr, "sending");
    } catch (const Error& e) {
      error = e.what();
    }
  });
  Connection accepted = listener.accept(token, 1, 0, "member", std::chrono::steady_clock::now() + seconds(10), nullptr);
  char byte = 0;
  accepted.recv_all(&byte, 1, std::chrono::steady_clock::now() + seconds(10), nullptr, "receiving");
  member.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(byte, 42);
}

TEST(TlsTest, DaemonSurvivesThe32BytePacketAndLogsThePeer) {
  testing::Daemon daemon = testing::start_daemon({"--name", "probe"});
  ASSERT_FALSE(daemon.address.empty());
  for (int i = 0; i < 4; ++i) {
    const int fd = raw_connect(daemon.address);
    ASSERT_GE(fd, 0);
    unsigned char packet[32] = {0x01};
    ASSERT_EQ(::send(fd, packet, sizeof(packet), MSG_NOSIGNAL), 32);
    // The gateway answers the non-TLS bytes by closing the connection.
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1);
    char byte;
    EXPECT_LE(::recv(fd, &byte, 1, 0), 1);  // an alert or the end, never BASP
    ::close(fd);
  }
  ActorSystem client;
  DaemonConnection conn = DaemonConnection::connect(client, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "probe");
  EXPECT_TRUE(daemon.process->running());
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "refused a connection from 127.0.0.1:");
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "TLS handshake failed");
}

TEST(TlsTest, ClientsWithoutACertificateOfTheClusterCannotPingOrSpawn) {
  testing::Daemon daemon = testing::start_daemon({"--name", "guarded"});
  ASSERT_FALSE(daemon.address.empty());
  {
    CredentialsGuard guard;
    tls::set_process_credentials(tls::Credentials::ephemeral());  // another cluster's CA
    ActorSystem stranger;
    EXPECT_THROW(DaemonConnection::connect(stranger, daemon.address, seconds(10)), Error);
  }
  {
    CredentialsGuard guard;
    tls::set_process_credentials(nullptr);  // plaintext CAF, as the issue's 40-line client
    ActorSystem plaintext;
    EXPECT_THROW(DaemonConnection::connect(plaintext, daemon.address, seconds(10)), Error);
  }
  ActorSystem member;
  DaemonConnection conn = DaemonConnection::connect(member, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "guarded");
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "refused a connection from 127.0.0.1:");
}

TEST(TlsTest, IdleConnectionsAreClosedByTheDeadlineWhileAMemberIsServed) {
  testing::Daemon daemon = testing::start_daemon({"--name", "flooded"});
  ASSERT_FALSE(daemon.address.empty());
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    const int fd = raw_connect(daemon.address);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // A member gets through the flood at once and is served.
  ActorSystem member;
  DaemonConnection conn = DaemonConnection::connect(member, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "flooded");
  // Every idle connection is closed by the daemon: the oldest cut by the cap on pending
  // handshakes, the rest at the handshake deadline (10 s).
  const auto deadline = std::chrono::steady_clock::now() + tls::kHandshakeDeadline + seconds(10);
  size_t closed = 0;
  for (int fd : idle) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) == 1) {
      char byte;
      if (::recv(fd, &byte, 1, 0) <= 0) ++closed;
    }
    ::close(fd);
  }
  EXPECT_EQ(closed, idle.size());
  EXPECT_EQ(conn.ping(seconds(10)).name, "flooded");
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "no TLS handshake within 10 s");
}

}  // namespace
}  // namespace partita::runtime
