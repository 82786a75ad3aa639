// `partita daemon` as a real process: ready line, connecting, ping, remote errors, shutdown
// by message and by signal, a killed daemon noticed by its client, bad --listen values.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <regex>
#include <thread>

#include "base/error.h"
#include "base/subprocess.h"
#include "daemon_process.h"
#include "runtime/actor_system.h"
#include "runtime/client.h"
#include "runtime/daemon.h"
#include "runtime/runtime_test_util.h"
#include "test_paths.h"

namespace partita::runtime {
namespace {

using testing::kPartitaBinary;
using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr auto kTimeout = seconds(10);
// ChildProcess::wait counts from the child's start; generous, it only bounds a hang.
constexpr double kProcessSeconds = 60;

ActorSystemOptions client_options() {
  ActorSystemOptions options;
  options.threads = 2;
  return options;
}

using testing::Daemon;
using testing::start_daemon;

TEST(DaemonTest, PrintsItsAddressAnswersPingAndShutsDownOnRequest) {
  Daemon daemon = start_daemon({"--name", "node-7"});
  ASSERT_FALSE(daemon.address.empty());
  ActorSystem client(client_options());
  DaemonConnection conn = DaemonConnection::connect(client, daemon.address, kTimeout);
  EXPECT_EQ(conn.address(), daemon.address);
  HostInfo info = conn.ping(kTimeout);
  EXPECT_EQ(info.name, "node-7");
  EXPECT_EQ(info.version, partita_version());

  // An error reply crosses the process boundary with its message intact.
  try {
    conn.spawn("no-such-type", {{"part", "0"}}, kTimeout);
    ADD_FAILURE() << "spawned an unregistered type";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "node-7");
    EXPECT_CONTAINS(e.what(), "unknown actor type 'no-such-type'");
    EXPECT_CONTAINS(e.what(), "partition");  // the registered types are listed
  }

  conn.request_shutdown();
  std::optional<Error> lost = conn.wait_lost(kTimeout);
  ASSERT_TRUE(lost) << "the host actor is still up after shutdown";
  EXPECT_CONTAINS(lost->what(), daemon.address);
  EXPECT_CONTAINS(lost->what(), "it shut down");
  ProcessResult result = daemon.process->wait(kProcessSeconds);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_CONTAINS(result.err, "daemon node-7 stopped");
}

class DaemonSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(DaemonSignalTest, ShutsDownCleanlyWithAClientConnected) {
  Daemon daemon = start_daemon();
  ASSERT_FALSE(daemon.address.empty());
  ActorSystem client(client_options());
  DaemonConnection conn = DaemonConnection::connect(client, daemon.address, kTimeout);
  conn.ping(kTimeout);
  daemon.process->signal(GetParam());
  ProcessResult result = daemon.process->wait(kProcessSeconds);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_CONTAINS(result.err, std::string("received ") + strsignal(GetParam()));
  EXPECT_CONTAINS(result.err, "stopped");
  std::optional<Error> lost = conn.wait_lost(kTimeout);
  ASSERT_TRUE(lost);
  EXPECT_CONTAINS(lost->what(), daemon.address);
}

INSTANTIATE_TEST_SUITE_P(TermAndInt, DaemonSignalTest, ::testing::Values(SIGTERM, SIGINT),
                         [](const auto& info) { return std::string(info.param == SIGTERM ? "SIGTERM" : "SIGINT"); });

TEST(DaemonTest, AKilledDaemonIsNoticedAndNamedByItsClient) {
  Daemon daemon = start_daemon();
  ASSERT_FALSE(daemon.address.empty());
  ActorSystem client(client_options());
  DaemonConnection conn = DaemonConnection::connect(client, daemon.address, kTimeout);
  conn.ping(kTimeout);
  daemon.process->kill();
  std::optional<Error> lost = conn.wait_lost(kTimeout);
  ASSERT_TRUE(lost) << "the client did not notice the killed daemon within 10 s";
  EXPECT_CONTAINS(lost->what(), "lost daemon " + daemon.address);
  try {
    conn.ping(kTimeout);
    ADD_FAILURE() << "a killed daemon answered";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), daemon.address);
  }
}

// A frozen daemon keeps its socket open, so only heartbeats can tell it is gone: this is
// what a machine that loses power or network looks like to its peers.
TEST(DaemonTest, ASilentDaemonIsNoticedThroughHeartbeats) {
  Daemon daemon = start_daemon();
  ASSERT_FALSE(daemon.address.empty());
  ActorSystem client(client_options());
  DaemonConnection conn = DaemonConnection::connect(client, daemon.address, kTimeout);
  conn.ping(kTimeout);
  daemon.process->signal(SIGSTOP);
  std::optional<Error> lost = conn.wait_lost(kTimeout);
  daemon.process->kill();
  ASSERT_TRUE(lost) << "the client did not notice the frozen daemon within 10 s";
  EXPECT_CONTAINS(lost->what(), "lost daemon " + daemon.address);
}

TEST(DaemonClientTest, ConnectingToNothingIsAnErrorNamingTheAddress) {
  testing::RefusingPort port;
  const std::string address = "127.0.0.1:" + std::to_string(port.port());
  ActorSystem client(client_options());
  try {
    DaemonConnection::connect(client, address, kTimeout);
    ADD_FAILURE() << "connected to a port nobody listens on";
  } catch (const UsageError& e) {
    ADD_FAILURE() << "not a usage error: " << e.what();
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "cannot connect to daemon " + address);
  }
  EXPECT_THROW(DaemonConnection::connect(client, "127.0.0.1", kTimeout), UsageError);
}

// A failing ready callback must not leave the host running, which would block the actor
// system's exit forever (ctest's timeout catches that hang).
TEST(DaemonInProcessTest, AFailureAfterStartingStopsEverything) {
  DaemonOptions options;
  options.system.threads = 2;
  bool called = false;
  try {
    run_daemon(options, ActorTypeRegistry{}, [&](const Endpoint& bound, const std::string&) {
      called = true;
      EXPECT_NE(bound.port, 0);
      throw Error("cannot write the ready line");
    });
    ADD_FAILURE() << "run_daemon returned normally";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "cannot write the ready line");
  }
  EXPECT_TRUE(called);
}

// One line on stderr naming the problem, and the CLI's exit code for it.
void expect_listen_error(const std::string& listen, int exit_code, const std::string& message) {
  ProcessResult r = run_process({kPartitaBinary, "daemon", "--listen", listen}, kProcessSeconds);
  EXPECT_FALSE(r.timed_out) << listen;
  EXPECT_EQ(r.exit_code, exit_code) << listen << ": " << r.err;
  EXPECT_EQ(r.out, "") << listen;
  EXPECT_CONTAINS(r.err, message);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(DaemonTest, MalformedListenValuesAreUsageErrors) {
  expect_listen_error("127.0.0.1", 2, "partita: error: --listen '127.0.0.1': no port");
  expect_listen_error("127.0.0.1:70000", 2, "port out of range");
  expect_listen_error("127.0.0.1:http", 2, "the port is not a number");
  expect_listen_error(":7070", 2, "no host");
}

TEST(DaemonTest, UnusableListenAddressesAreRuntimeErrors) {
  expect_listen_error("no-such-host.invalid:0", 1, "partita: error: cannot listen on no-such-host.invalid:0");
  Daemon first = start_daemon();
  ASSERT_FALSE(first.address.empty());
  expect_listen_error(first.address, 1, "partita: error: cannot listen on " + first.address);
  // The first daemon is unharmed.
  ActorSystem client(client_options());
  EXPECT_EQ(DaemonConnection::connect(client, first.address, kTimeout).ping(kTimeout).version, partita_version());
}

}  // namespace
}  // namespace partita::runtime
