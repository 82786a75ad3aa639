// A cluster in real processes: a head (`partita daemon --head`) and nodes that join it
// (`--join`), asked with `partita status --json` as a user or a script would. Joining, the
// status of each node, a killed node and a frozen one declared dead (the frozen one back as
// a new member), nodes joining a restarted head, `partita stop`, and bad input named. First
// on loopback, then with every daemon on a host of its own (netns/netns_cluster.h).
//
// Waits are bounded only to end a hang; what is checked is the state reached and why.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/subprocess.h"
#include "daemon_process.h"
#include "netns/netns_cluster.h"
#include "runtime/runtime_test_util.h"
#include "test_paths.h"

namespace partita::runtime {
namespace {

using testing::kPartitaBinary;
using nlohmann::json;

constexpr double kProcessSeconds = 60;
constexpr auto kBound = std::chrono::seconds(30);

// Runs `argv` (partita status ... --json, maybe through a wrapper) and parses its output;
// null when it fails.
json status_of(const std::vector<std::string>& argv) {
  ProcessResult r = run_process(argv, kProcessSeconds);
  if (r.exit_code != 0) return json();
  try {
    return json::parse(r.out);
  } catch (const json::exception& e) {
    ADD_FAILURE() << "status --json printed no JSON: " << e.what() << "\n" << r.out;
    return json();
  }
}

std::vector<std::string> status_command(const std::string& head) {
  return {kPartitaBinary, "status", "--address", head, "--json"};
}

// The status once `done` holds for it, or the last one seen when kBound passed.
json wait_for_status(const std::vector<std::string>& argv, const std::function<bool(const json&)>& done) {
  const auto until = std::chrono::steady_clock::now() + kBound;
  json s = status_of(argv);
  while (!(s.is_object() && done(s)) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    s = status_of(argv);
  }
  return s;
}

// The node named `name` (the most recent member of that name), or null.
json node_named(const json& status, const std::string& name) {
  json found;
  if (!status.is_object()) return found;
  for (const auto& n : status["nodes"]) {
    if (n["name"] == name) found = n;
  }
  return found;
}

bool is(const json& status, const std::string& name, const std::string& state) {
  const json n = node_named(status, name);
  return n.is_object() && n["state"] == state;
}

size_t alive(const json& status) {
  size_t n = 0;
  for (const auto& node : status["nodes"]) n += node["state"] == "alive" ? 1 : 0;
  return n;
}

// `partita daemon --listen LISTEN ARGS...`, run through `wrapper` if given (ip netns exec).
testing::Daemon start(const std::vector<std::string>& args, const std::string& listen = "127.0.0.1:0",
                      std::vector<std::string> wrapper = {}) {
  wrapper.insert(wrapper.end(), {kPartitaBinary, "--log-level", "info"});
  const std::string binary = wrapper.front();
  wrapper.erase(wrapper.begin());
  try {
    return start_daemon_child(binary, args, wrapper, std::chrono::seconds(30), listen);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
}

testing::Daemon start_node(const std::string& head, const std::string& name) {
  return start({"--join", head, "--name", name});
}

struct LoopbackCluster {
  testing::Daemon head, a, b;
  json status;  // once both nodes are alive, or as it was when the wait ended
};

// A head and two nodes, node-a and node-b.
LoopbackCluster start_cluster() {
  LoopbackCluster c;
  c.head = start({"--head"});
  if (c.head.address.empty()) return c;
  c.a = start_node(c.head.address, "node-a");
  c.b = start_node(c.head.address, "node-b");
  c.status = wait_for_status(status_command(c.head.address), [](const json& s) { return alive(s) == 2; });
  return c;
}

TEST(ClusterTest, NodesJoinStatusShowsThemAKilledNodeIsDeadAndStopEndsTheRest) {
  auto [head, a, b, s] = start_cluster();
  ASSERT_EQ(alive(s), 2u) << s.dump(2);
  EXPECT_EQ(s["head"], head.address);
  EXPECT_EQ(s["heartbeat_ms"], 1000);
  EXPECT_EQ(s["heartbeat_timeout_ms"], 5000);
  for (const auto& [name, daemon] : {std::pair<std::string, testing::Daemon*>{"node-a", &a}, {"node-b", &b}}) {
    const json n = node_named(s, name);
    EXPECT_EQ(n["address"], daemon->address) << "a node is reached at the address it listens on";
    EXPECT_GT(n["cores"].get<int>(), 0);
    EXPECT_GT(n["memory_bytes"].get<int64_t>(), 0);
    EXPECT_GT(n["memory_available_bytes"].get<int64_t>(), 0);
    EXPECT_GT(n["disk_free_bytes"].get<int64_t>(), 0);
    EXPECT_EQ(n["actors"], json::object()) << "nothing runs on a fresh node";
  }
  EXPECT_EQ(s["jobs"], json::array());
  // The table says the same to a person.
  ProcessResult table = run_process({kPartitaBinary, "status", "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_CONTAINS(table.out, "nodes: 2 alive, 0 dead");
  EXPECT_CONTAINS(table.out, a.address);

  b.process->kill();
  s = wait_for_status(status_command(head.address), [](const json& s) { return is(s, "node-b", "dead"); });
  ASSERT_TRUE(is(s, "node-b", "dead")) << s.dump(2);
  EXPECT_CONTAINS(node_named(s, "node-b")["lost"].get<std::string>(), "connection was lost");
  EXPECT_TRUE(is(s, "node-a", "alive"));

  ProcessResult stop = run_process({kPartitaBinary, "down", "--yes", "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_CONTAINS(stop.out, "1 node(s) and the head");
  for (testing::Daemon* d : {&head, &a}) {
    ProcessResult r = d->process->wait(kProcessSeconds);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

// A frozen process keeps its socket open: only the heartbeats tell it is gone. Thawed, it
// notices the head no longer knows it and joins again, as a new member.
TEST(ClusterTest, AFrozenNodeIsDeadAndComesBackAsANewMember) {
  testing::Daemon head = start({"--head"});
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  ASSERT_FALSE(a.address.empty());
  json s = wait_for_status(status_command(head.address), [](const json& s) { return is(s, "node-a", "alive"); });
  ASSERT_TRUE(is(s, "node-a", "alive")) << s.dump(2);
  const uint64_t first = node_named(s, "node-a")["member"];

  a.process->signal(SIGSTOP);
  s = wait_for_status(status_command(head.address), [](const json& s) { return is(s, "node-a", "dead"); });
  ASSERT_TRUE(is(s, "node-a", "dead")) << s.dump(2);

  a.process->signal(SIGCONT);
  s = wait_for_status(status_command(head.address), [](const json& s) { return is(s, "node-a", "alive"); });
  ASSERT_TRUE(is(s, "node-a", "alive")) << s.dump(2);
  const json back = node_named(s, "node-a");
  EXPECT_GT(back["member"].get<uint64_t>(), first) << "a node that comes back is a new member";
  EXPECT_EQ(back["address"], a.address);
  size_t dead = 0;
  for (const auto& n : s["nodes"]) dead += n["state"] == "dead" ? 1 : 0;
  EXPECT_EQ(dead, 1u) << "its first life stays listed as dead";
}

TEST(ClusterTest, NodesJoinARestartedHeadAgain) {
  auto [head, a, b, s] = start_cluster();
  ASSERT_EQ(alive(s), 2u) << s.dump(2);

  head.process->kill();
  head.process->wait(kProcessSeconds);
  testing::Daemon again = start({"--head"}, head.address);  // the same address: what nodes know
  ASSERT_EQ(again.address, head.address);
  s = wait_for_status(status_command(head.address), [](const json& s) { return alive(s) == 2; });
  ASSERT_EQ(alive(s), 2u) << "the nodes did not join the restarted head: " << s.dump(2);
  EXPECT_EQ(node_named(s, "node-a")["address"], a.address);
  EXPECT_EQ(node_named(s, "node-b")["address"], b.address);
  EXPECT_TRUE(a.process->running() && b.process->running());
}

void expect_error(const std::vector<std::string>& args, int exit_code, const std::string& message) {
  std::vector<std::string> argv{kPartitaBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, kProcessSeconds);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, exit_code) << r.err;
  EXPECT_CONTAINS(r.err, message);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ClusterTest, BadInputIsNamed) {
  testing::RefusingPort nobody;
  const std::string nowhere = "127.0.0.1:" + std::to_string(nobody.port());
  expect_error({"daemon", "--head", "--join", "127.0.0.1:7070"}, 2, "--head and --join exclude each other");
  expect_error({"daemon", "--join", "127.0.0.1"}, 2, "--join '127.0.0.1': no port");
  expect_error({"daemon", "--join", "127.0.0.1:0"}, 2, "port 0 cannot be connected to");
  expect_error({"daemon", "--runs", "/tmp/x"}, 2, "--runs needs --head");
  expect_error({"daemon", "--max-jobs", "2"}, 2, "--max-jobs needs --head");
  expect_error({"daemon", "--head", "--max-jobs", "0"}, 2, "--max-jobs");
  expect_error({"daemon", "--join", "127.0.0.1:7070", "--listen", "0.0.0.0:0"}, 2,
               "--listen '0.0.0.0:0' with --join: a node tells the cluster the address others reach it at");
  expect_error({"daemon", "--head", "--heartbeat-ms", "5000", "--heartbeat-timeout-ms", "5000"}, 2,
               "must be longer than the period");
  expect_error({"daemon", "--join", nowhere, "--join-timeout", "5"}, 1,
               "cannot join the cluster: cannot reach the head at " + nowhere);
  expect_error({"status", "--address", nowhere}, 1, "cannot reach the head at " + nowhere);
  expect_error({"status", "--address", "nowhere"}, 2, "--address 'nowhere': no port");
  expect_error({"down", "--yes", "--address", nowhere}, 1, "cannot reach the head at " + nowhere);
  // A node daemon is not a head: joining it, or asking it for a status, says so.
  testing::Daemon lone = start({});
  ASSERT_FALSE(lone.address.empty());
  expect_error({"daemon", "--join", lone.address}, 1, lone.address + " is a Partita node daemon, not a head");
  expect_error({"status", "--address", lone.address}, 1, "not a head");
}

// The same cluster with each daemon on a host of its own: addresses that exist only in
// their namespaces, traffic over `link`s and a bridge; the wire with 1 ms of delay each way
// and 10 Gbit/s, as `partita bench network` runs it.
void membership_across_separate_hosts(NetnsLink link) {
  NetnsCluster hosts(3, link);
  if (!hosts.unavailable().empty()) GTEST_SKIP() << "no separate hosts: " << hosts.unavailable();
  if (link == NetnsLink::kWire) hosts.set_wire(1, "10gbit");
  const std::string head_address = hosts.address(0) + ":7070";
  auto start_in = [&](int host, const std::vector<std::string>& args, const std::string& listen) {
    return start(args, listen, hosts.command(host, {}));
  };
  testing::Daemon head = start_in(0, {"--head"}, head_address);
  ASSERT_EQ(head.address, head_address);
  testing::Daemon a = start_in(1, {"--join", head_address, "--name", "node-a"}, hosts.address(1) + ":0");
  testing::Daemon b = start_in(2, {"--join", head_address, "--name", "node-b"}, hosts.address(2) + ":0");
  ASSERT_FALSE(a.address.empty() || b.address.empty());
  // status from the head's host: the test's own namespace cannot reach these addresses.
  const auto status = hosts.command(0, status_command(head_address));
  json s = wait_for_status(status, [](const json& s) { return alive(s) == 2; });
  ASSERT_EQ(alive(s), 2u) << s.dump(2);
  EXPECT_EQ(node_named(s, "node-a")["address"], a.address);
  EXPECT_EQ(node_named(s, "node-b")["address"].get<std::string>().rfind(hosts.address(2) + ":", 0), 0u);

  b.process->kill();
  s = wait_for_status(status, [](const json& s) { return is(s, "node-b", "dead"); });
  ASSERT_TRUE(is(s, "node-b", "dead")) << s.dump(2);

  ProcessResult stop = run_process(hosts.command(0, {kPartitaBinary, "down", "--yes", "--address", head_address}), kProcessSeconds);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  for (testing::Daemon* d : {&head, &a}) {
    ProcessResult r = d->process->wait(kProcessSeconds);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

TEST(NetnsClusterTest, MembershipAcrossSeparateHosts) { membership_across_separate_hosts(NetnsLink::kVeth); }

TEST(NetnsClusterTest, MembershipAcrossHostsOnADelayingWire) { membership_across_separate_hosts(NetnsLink::kWire); }

}  // namespace
}  // namespace partita::runtime
