// Mutual TLS on every port: the cluster CA and certificates, where credentials are loaded
// from, and a daemon under what an attacker on the network can send: a 32-byte packet,
// clients without a certificate of the cluster, a flood of idle connections beside a real
// client.
#include <arpa/inet.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <fcntl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/subprocess.h"
#include "daemon_process.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/client.h"
#include "runtime/daemon.h"
#include "runtime/daemon_child.h"
#include "runtime/runtime_test_util.h"
#include "runtime/tls/caf_gateway.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "runtime/tls/session.h"
#include "runtime/transport/connection.h"
#include "runtime/transport/wire_format.h"
#include "test_paths.h"

namespace partita::runtime {
namespace {

using testing::kPartitaBinary;
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
    EXPECT_CONTAINS(e.what(), "already holds a cluster CA (ca.crt)");
  }
  // An init cut short after the CA's key: the message names the file that is there.
  const fs::path cut = tmp.path / "cut";
  fs::create_directories(cut);
  fs::copy_file(dir / "ca.key", cut / "ca.key");
  try {
    tls::init_cluster(cut, "head");
    ADD_FAILURE() << "init over an existing CA key";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "already holds a cluster CA (ca.key)");
  }
}

// The chain is built once per context (runtime/tls/credentials.cpp): each end sends its own
// certificate, not the CA's, which its peer holds; both ends still verify the other.
TEST(TlsTest, AMemberSendsItsCertificateWithoutTheCaAndBothEndsVerify) {
  const auto credentials = tls::Credentials::ephemeral();
  SSL* client = SSL_new(credentials->context());
  SSL* server = SSL_new(credentials->context());
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  BIO* client_end = nullptr;
  BIO* server_end = nullptr;
  ASSERT_EQ(BIO_new_bio_pair(&client_end, 0, &server_end, 0), 1);
  SSL_set_bio(client, client_end, client_end);
  SSL_set_bio(server, server_end, server_end);
  SSL_set_connect_state(client);
  SSL_set_accept_state(server);
  bool client_done = false, server_done = false;
  for (int step = 0; step < 20 && !(client_done && server_done); ++step) {
    client_done = client_done || SSL_do_handshake(client) == 1;
    server_done = server_done || SSL_do_handshake(server) == 1;
  }
  ASSERT_TRUE(client_done && server_done) << tls::openssl_errors();
  EXPECT_EQ(SSL_get_verify_result(client), X509_V_OK);
  EXPECT_EQ(SSL_get_verify_result(server), X509_V_OK);
  EXPECT_NE(SSL_get0_peer_certificate(client), nullptr);
  EXPECT_NE(SSL_get0_peer_certificate(server), nullptr);
  // A client's view of what the server sent includes the server's certificate; a server's
  // view of the client's chain does not include the client's.
  EXPECT_EQ(sk_X509_num(SSL_get_peer_cert_chain(client)), 1);
  EXPECT_EQ(sk_X509_num(SSL_get_peer_cert_chain(server)), 0);
  SSL_free(client);
  SSL_free(server);
}

TEST(TlsTest, IssuedCertificatesLoadAndAKeyOthersCanReadIsRefused) {
  TempDir tmp;
  tls::init_cluster(tmp.path / "ca", "head");
  tls::issue_to_folder(tmp.path / "ca", "worker-1", tls::MemberRole::node, tmp.path / "worker-1");
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
  ChildProcess child({kPartitaBinary, "--insecure", "daemon", "--listen", "0.0.0.0:0"});
  const ProcessResult result = child.wait(30);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_CONTAINS(result.err, "plaintext (--insecure) listens on loopback addresses only");
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
    tls::set_process_credentials(nullptr);  // plaintext CAF, as an attacker's 40-line client would
    ActorSystem plaintext;
    try {
      DaemonConnection::connect(plaintext, daemon.address, seconds(10));
      ADD_FAILURE() << "a plaintext client connected to a daemon with TLS";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "it sent nothing within 5 s, as a Partita process with TLS does to one without "
                                "(this one runs --insecure)");
    }
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

// The first head of a cluster creates its CA where credentials are looked for, and a later
// start loads it rather than making another: a member of that CA is served, a member of
// another (this test binary's) is not.
TEST(TlsTest, TheFirstHeadCreatesTheClusterCaAndLaterStartsKeepIt) {
  TempDir tmp;
  const fs::path dir = tmp.path / "new-cluster";
  std::string first_ca;
  for (int start = 0; start < 2; ++start) {
    DaemonChild head = start_daemon_child(kPartitaBinary, {"--head", "--name", "head-1", "--runs", (tmp.path / "runs").string()},
                                     {"--log-level", "warn", "--tls-dir", dir.string()});
    ASSERT_FALSE(head.address.empty());
    for (const char* file : {tls::kCaCertFile, tls::kCaKeyFile, tls::kCertFile, tls::kKeyFile}) {
      ASSERT_TRUE(fs::exists(dir / file)) << file;
    }
    EXPECT_EQ(mode_of(dir / tls::kCaKeyFile), 0600);
    EXPECT_EQ(mode_of(dir / tls::kKeyFile), 0600);
    std::ifstream ca(dir / tls::kCaCertFile);
    const std::string pem((std::istreambuf_iterator<char>(ca)), std::istreambuf_iterator<char>());
    if (start == 0) {
      first_ca = pem;
      EXPECT_CONTAINS(head.process->output_so_far(), "created the cluster's certificate authority");
    } else {
      EXPECT_EQ(pem, first_ca);
      EXPECT_EQ(head.process->output_so_far().find("created the cluster's"), std::string::npos);
    }
    // `partita status` with the new CA's credentials reaches the head; with this test
    // binary's CA (PARTITA_TLS_DIR) it is refused.
    const ProcessResult member =
        run_process({kPartitaBinary, "--tls-dir", dir.string(), "status", "--address", head.address}, 60);
    EXPECT_EQ(member.exit_code, 0) << member.err;
    const ProcessResult stranger = run_process({kPartitaBinary, "status", "--address", head.address}, 60);
    EXPECT_EQ(stranger.exit_code, 1) << stranger.err;
  }
}

// The peak resident set of process `pid` (VmHWM), in bytes; -1 if it cannot be read.
int64_t peak_resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  }
  return -1;
}

// CAF 0.17 sizes its buffer from a BASP header's payload length before the payload comes:
// a member of the cluster (a certificate of its CA gets through the gateway) whose header
// claims 1 GiB made the daemon allocate and zero 1 GiB at once, and as much again on every
// further connection. The gateway reads each header first and closes the connection.
TEST(TlsTest, AMemberClaimingAGigabyteMessageIsCutBeforeTheDaemonAllocatesIt) {
  testing::Daemon daemon = testing::start_daemon({"--name", "bounded"});
  ASSERT_FALSE(daemon.address.empty());
  const int64_t before = peak_resident_bytes(daemon.process->pid());
  ASSERT_GT(before, 0);
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = raw_connect(daemon.address);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK), 0);
    const auto until = std::chrono::steady_clock::now() + seconds(60);
    size_t sent = 0;
    bool closed = false;
    try {
      tls::Session session(tls::process_credentials(), fd, tls::Session::Role::client);
      while (!session.handshake()) wait_ready(fd, session.wants(), until, nullptr, "the TLS handshake");
      // A client handshake (operation 1) claiming 2^30 bytes of payload (network order),
      // then zeros as its payload, as fast as the daemon takes them, until it closes.
      std::vector<char> bytes(1 << 20, 0);
      bytes[0] = 0x01;
      bytes[4] = 0x40;
      while (sent < (size_t{1} << 30)) {
        const size_t n = session.write_some(bytes.data(), bytes.size());
        if (n == 0) wait_ready(fd, session.wants(), until, nullptr, "sending the message");
        sent += n;
        bytes[0] = bytes[4] = 0;
      }
    } catch (const tls::SessionClosed&) {
      closed = true;
    } catch (const Error& e) {
      closed = std::string(e.what()).find("timed out") == std::string::npos;
    }
    ::close(fd);
    EXPECT_TRUE(closed) << "sent " << sent << " bytes of a 1 GiB message";
    EXPECT_LT(sent, size_t{1} << 30);
  }
  // The daemon lives, serves a member, named the peer, and its peak memory did not take the
  // claimed gigabytes (it grows by a few MiB of buffers at most).
  ActorSystem member;
  DaemonConnection conn = DaemonConnection::connect(member, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "bounded");
  EXPECT_LT(peak_resident_bytes(daemon.process->pid()), before + (int64_t{256} << 20));
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "closed the connection with 127.0.0.1:");
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "a message of 1073741824 bytes, over the limit");
}

// A BASP header (32 bytes, network order) with `operation` and a payload `length`.
std::vector<unsigned char> basp_header(uint8_t operation, uint32_t length) {
  std::vector<unsigned char> header(32, 0);
  header[0] = operation;
  for (int i = 0; i < 4; ++i) header[4 + i] = static_cast<unsigned char>(length >> (24 - 8 * i));
  header[8] = 1;  // operation data: a server handshake's version
  return header;
}

// Headers CAF 0.17 must never see, and how the gateway names each.
struct BadHeader {
  uint8_t operation;
  uint32_t length;
  const char* named;
};
const BadHeader kBadHeaders[] = {
    {0, 0, "a server_handshake without payload"},  // crashed CAF: it read the payload through a null pointer
    {1, 0, "a client_handshake without payload"},
    {2, 0, "a direct_message without payload"},
    {6, 8, "a heartbeat with a payload of 8 bytes"},
    {7, 0, "an unknown operation (7)"},
    {1, 0xFFFFFFFFu, "a message of 4294967295 bytes, over the limit"},
};

// Reads what `read` gives until the peer closes (true) or `until` passes (false).
template <class Read>
bool closed_by_peer(int fd, Read read, std::chrono::steady_clock::time_point until) {
  char buffer[4096];
  for (;;) {
    try {
      if (read(buffer, sizeof(buffer)) == 0) {
        pollfd p{fd, POLLIN, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        ::poll(&p, 1, static_cast<int>(left.count()));
      }
    } catch (const Error&) {
      return true;
    }
  }
}

// closed_by_peer's read of a plain socket: what has arrived (0: nothing yet); Error once the
// peer closed or the socket broke.
auto plain_read(int fd) {
  return [fd](char* b, size_t n) -> size_t {
    const ssize_t got = ::recv(fd, b, n, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) throw Error("closed");
    return got < 0 ? 0 : static_cast<size_t>(got);
  };
}

// Any certificate of the cluster gets through the handshake (a CLI user's is enough); what
// it sends next must not take the daemon down: a handshake header without payload made CAF
// read through a null pointer (the daemon died of SIGSEGV), a length of 4 GiB made it
// allocate that much. Each is refused before CAF sees it, named in the log.
TEST(TlsTest, AMembersMalformedBaspHeadersAreRefusedAndTheDaemonLives) {
  testing::Daemon daemon = testing::start_daemon({"--name", "sturdy"});
  ASSERT_FALSE(daemon.address.empty());
  const int64_t before = peak_resident_bytes(daemon.process->pid());
  for (const BadHeader& bad : kBadHeaders) {
    const int fd = raw_connect(daemon.address);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK), 0);
    const auto until = std::chrono::steady_clock::now() + seconds(20);
    tls::Session session(tls::process_credentials(), fd, tls::Session::Role::client);
    while (!session.handshake()) wait_ready(fd, session.wants(), until, nullptr, "the TLS handshake");
    const std::vector<unsigned char> header = basp_header(bad.operation, bad.length);
    size_t sent = 0;
    while (sent < header.size()) {
      const size_t n = session.write_some(header.data() + sent, header.size() - sent);
      if (n == 0) wait_ready(fd, session.wants(), until, nullptr, "sending the header");
      sent += n;
    }
    EXPECT_TRUE(closed_by_peer(fd, [&](char* b, size_t n) { return session.read_some(b, n); }, until)) << bad.named;
    ::close(fd);
    ASSERT_TRUE(daemon.process->running()) << "died of " << bad.named << ": " << daemon.process->errors_so_far();
  }
  ActorSystem member;
  DaemonConnection conn = DaemonConnection::connect(member, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "sturdy");
  EXPECT_LT(peak_resident_bytes(daemon.process->pid()), before + (int64_t{256} << 20));
  for (const BadHeader& bad : kBadHeaders) EXPECT_CONTAINS(daemon.process->errors_so_far(), bad.named);
}

// The same bytes without TLS: an --insecure daemon's port (loopback, so any local user's)
// and the local socket behind the gateway (this user's folder) refuse them too.
TEST(TlsTest, AnInsecureDaemonRefusesMalformedHeadersOnItsPortAndItsLocalSocket) {
  CredentialsGuard guard;
  tls::set_process_credentials(nullptr);
  DaemonChild daemon = start_daemon_child(kPartitaBinary, {"--name", "plain"}, {"--insecure", "--log-level", "info"});
  ASSERT_FALSE(daemon.address.empty());
  const int64_t before = peak_resident_bytes(daemon.process->pid());
  for (const BadHeader& bad : kBadHeaders) {
    const int fd = raw_connect(daemon.address);
    ASSERT_GE(fd, 0);
    const std::vector<unsigned char> header = basp_header(bad.operation, bad.length);
    ASSERT_EQ(::send(fd, header.data(), header.size(), MSG_NOSIGNAL), 32);
    EXPECT_TRUE(closed_by_peer(fd, plain_read(fd), std::chrono::steady_clock::now() + seconds(20))) << bad.named;
    ::close(fd);
    ASSERT_TRUE(daemon.process->running()) << "died of " << bad.named << ": " << daemon.process->errors_so_far();
  }
  // The actor system's own socket: a process other than the daemon is turned away at once.
  const fs::path folder = "/tmp/partita-caf-" + std::to_string(::getuid());
  const std::string prefix = std::to_string(daemon.process->pid()) + "-";
  int sockets = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0) continue;
    ++sockets;
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un to{};
    to.sun_family = AF_UNIX;
    std::strncpy(to.sun_path, entry.path().c_str(), sizeof(to.sun_path) - 1);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0) << std::strerror(errno);
    const std::vector<unsigned char> header = basp_header(0, 0);
    ::send(fd, header.data(), header.size(), MSG_NOSIGNAL);
    EXPECT_TRUE(closed_by_peer(fd, plain_read(fd), std::chrono::steady_clock::now() + seconds(20)));
    ::close(fd);
  }
  EXPECT_EQ(sockets, 1);
  EXPECT_TRUE(daemon.process->running()) << daemon.process->errors_so_far();
  ActorSystem client;
  DaemonConnection conn = DaemonConnection::connect(client, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "plain");
  EXPECT_LT(peak_resident_bytes(daemon.process->pid()), before + (int64_t{256} << 20));
  for (const BadHeader& bad : kBadHeaders) EXPECT_CONTAINS(daemon.process->errors_so_far(), bad.named);
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "refused a local connection from process");
}

// An insecure head asked for a wildcard address refused it and then never exited, not even
// on SIGTERM: its actor was left running and the actor system's destructor waited for it.
TEST(TlsTest, AnInsecureHeadRefusesANonLoopbackListenAndExits) {
  ChildProcess child({kPartitaBinary, "--insecure", "daemon", "--head", "--listen", "0.0.0.0:0"});
  const ProcessResult result = child.wait(30);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_CONTAINS(result.err, "plaintext (--insecure) listens on loopback addresses only");
}

// run_daemon itself, past the command line's checks: a head whose port is refused after its
// actor exists stops that actor and returns the error (it waited for it for ever).
TEST(TlsTest, AHeadWhosePortIsRefusedAfterItsActorExistsReturnsTheError) {
  CredentialsGuard guard;
  tls::set_process_credentials(nullptr);
  DaemonOptions options;
  options.head = true;
  options.listen = "0.0.0.0:0";
  auto outcome = std::async(std::launch::async, [&options] {
    try {
      run_daemon(options, {}, [](const Endpoint&, const std::string&) {});
      return std::string("returned without an error");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  ASSERT_EQ(outcome.wait_for(seconds(60)), std::future_status::ready) << "run_daemon did not return";
  EXPECT_CONTAINS(outcome.get(), "plaintext (--insecure) listens on loopback addresses only");
}

// A head's arguments are all checked before it creates the cluster's CA (a status page on
// an address it refuses created the CA first).
TEST(TlsTest, AHeadWithBadArgumentsCreatesNoCa) {
  TempDir dir;
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--dashboard", "10.1.2.3:80"}, {"--heartbeat-ms", "5000", "--heartbeat-timeout-ms", "1000"}}) {
    std::vector<std::string> argv{kPartitaBinary, "--tls-dir", (dir.path / "tls").string(), "daemon", "--head",
                                  "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), bad.begin(), bad.end());
    ChildProcess child(argv);
    const ProcessResult result = child.wait(30);
    EXPECT_EQ(result.exit_code, 2) << bad[0] << ": " << result.err;
    EXPECT_FALSE(fs::exists(dir.path / "tls")) << bad[0] << ": " << result.err;
  }
}

// The bound over all connections before a peer is authenticated (caf_gateway.h, "Memory"):
// whatever the number of connections, at most kMaxHandshakes handshakes are held, each at
// most kMaxHandshakeBytes. Each connection here makes the daemon hold what OpenSSL lets a
// client make it hold: a ClientHello whose header claims 131,000 bytes (under OpenSSL's
// limit for that message, so the buffer is sized to it at once) and the first 16 KiB of it,
// and never the rest. 400 of them grew the daemon's peak by 71 MB with the cap lifted, by
// 16 MB with it (2026-11-24).
TEST(TlsTest, ManyConnectionsEachHoldingAHandshakeStayWithinTheStatedBound) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang's spelling of gcc's __SANITIZE_ADDRESS__
#define PARTITA_TEST_UNDER_ASAN
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(PARTITA_TEST_UNDER_ASAN)
  // ASan keeps freed memory in quarantine (256 MiB): the peak resident set of an ASan
  // daemon measures the quarantine, not what the gateway holds.
  GTEST_SKIP() << "peak memory is not the gateway's under AddressSanitizer";
#endif
  testing::Daemon daemon = testing::start_daemon({"--name", "held"});
  ASSERT_FALSE(daemon.address.empty());
  const int64_t before = peak_resident_bytes(daemon.process->pid());
  ASSERT_GT(before, 0);
  // A TLS record of 16 KiB (content type 22, handshake) opening a ClientHello (type 1) of
  // 131,000 bytes (3 bytes, network order), then zeros as the first part of its body.
  std::vector<unsigned char> record(5 + 16384, 0);
  const unsigned char head[] = {0x16, 0x03, 0x01, 0x40, 0x00, 0x01, 0x01, 0xFF, 0xB8};
  std::memcpy(record.data(), head, sizeof(head));
  constexpr int kConnections = 400;
  std::vector<int> held;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = raw_connect(daemon.address);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
    // The socket's buffer takes the 16 KiB whether or not the daemon read them yet.
    ASSERT_EQ(::send(fd, record.data(), record.size(), MSG_NOSIGNAL), static_cast<ssize_t>(record.size()));
  }
  // A member is served beside them (its handshake comes after theirs were read).
  ActorSystem member;
  DaemonConnection conn = DaemonConnection::connect(member, daemon.address, seconds(10));
  EXPECT_EQ(conn.ping(seconds(10)).name, "held");
  const int64_t grown = peak_resident_bytes(daemon.process->pid()) - before;
  for (int fd : held) ::close(fd);
  // The stated bound, with 16 MiB for the allocator's own slack.
  const int64_t bound = static_cast<int64_t>(tls::kMaxHandshakes * tls::kMaxHandshakeBytes) + (int64_t{16} << 20);
  EXPECT_LT(grown, bound) << "bytes of peak resident set grown with " << kConnections << " connections";
  EXPECT_TRUE(daemon.process->running());
  EXPECT_CONTAINS(daemon.process->errors_so_far(), "handshakes pending: cut the oldest");
}

// CAF's side of every gate is a Unix socket in this user's private folder. A daemon killed
// with SIGKILL cannot remove its own; the next gate any process opens does, and puts the
// folder's mode back to 0700 if it was widened.
TEST(TlsTest, TheSocketOfAKilledDaemonIsRemovedByTheNextGate) {
  const fs::path folder = "/tmp/partita-caf-" + std::to_string(::getuid());
  testing::Daemon daemon = testing::start_daemon({"--name", "killed"});
  ASSERT_FALSE(daemon.address.empty());
  const std::string prefix = std::to_string(daemon.process->pid()) + "-";
  auto sockets_of = [&](const std::string& owner) {
    size_t n = 0;
    for (const auto& entry : fs::directory_iterator(folder)) n += entry.path().filename().string().rfind(owner, 0) == 0;
    return n;
  };
  ASSERT_EQ(sockets_of(prefix), 1u) << "the daemon's gate socket is not in " << folder;
  daemon.process->kill();
  for (int i = 0; i < 500 && daemon.process->running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(daemon.process->running());
  // Its socket is left (not checked here: a gate of a test running beside this one may
  // already have removed it).
  fs::permissions(folder, fs::perms::all);
  ActorSystem next;
  caf::actor actor = next.get().spawn([]() -> caf::behavior { return {[](int x) { return x; }}; });
  const caf::expected<uint16_t> port = tls::publish(next.get(), actor, Endpoint{"127.0.0.1", 0}, false);
  caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  ASSERT_TRUE(port) << next.get().render(port.error());
  EXPECT_EQ(sockets_of(prefix), 0u) << "the killed daemon's socket is still there";
  EXPECT_EQ(sockets_of(std::to_string(::getpid()) + "-"), 1u) << "this process's gate has no socket";
  EXPECT_EQ(mode_of(folder), 0700u);
}

// CAF 0.17 drops an outgoing connection at its first heartbeat tick (every second here) if
// the peer's BASP handshake has not arrived by then: it leaves that connection's "last seen"
// time at zero. So a peer whose network thread was busy for longer than that could not be
// connected to (a restarted job's sampler failed with "connection_timeout" in CI). The
// middleman actor hands CAF a connection only once the peer's first bytes are there; here the
// server's network thread is busy for 2.5 s, and the connection waits for it and is made.
void ConnectsToAPeerWhoseHandshakeComesAfterAHeartbeat() {
  ActorSystem server;
  caf::actor echo = server.get().spawn([]() -> caf::behavior { return {[](int x) { return x + 1; }}; });
  struct StopAtReturn {  // before the server's system waits for its actors
    caf::actor actor;
    ~StopAtReturn() { caf::anon_send_exit(actor, caf::exit_reason::user_shutdown); }
  } stop{echo};
  const caf::expected<uint16_t> port = tls::publish(server.get(), echo, Endpoint{"127.0.0.1", 0}, false);
  ASSERT_TRUE(port) << server.get().render(port.error());
  ActorSystem client;  // heartbeats every second (ActorSystemOptions' default)
  constexpr auto kBusy = std::chrono::milliseconds(2500);
  std::promise<void> busy;
  server.get().middleman().backend().dispatch([&busy, kBusy] {
    busy.set_value();
    std::this_thread::sleep_for(kBusy);
  });
  busy.get_future().wait();
  const auto started = std::chrono::steady_clock::now();
  PublishedActor published;
  ASSERT_NO_THROW(published = connect_published(client, Endpoint{"127.0.0.1", *port}, seconds(10), "cannot connect to"));
  EXPECT_GE(std::chrono::steady_clock::now() - started, kBusy / 2)
      << "the server's handshake was not delayed: this test tests nothing";
  caf::scoped_actor self{client.get()};
  int answer = 0;
  self->request(caf::actor_cast<caf::actor>(published.actor), seconds(10), 41)
      .receive([&](int x) { answer = x; }, [&](caf::error& e) { ADD_FAILURE() << client.get().render(e); });
  EXPECT_EQ(answer, 42);
}

TEST(TlsTest, AMemberWhoseHandshakeComesAfterAHeartbeatIsConnected) {
  ConnectsToAPeerWhoseHandshakeComesAfterAHeartbeat();
}

TEST(TlsTest, InsecureModeConnectsToAPeerWhoseHandshakeComesAfterAHeartbeat) {
  CredentialsGuard guard;
  tls::set_process_credentials(nullptr);
  ConnectsToAPeerWhoseHandshakeComesAfterAHeartbeat();
}

}  // namespace
}  // namespace partita::runtime
