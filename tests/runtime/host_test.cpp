// The host actor in one process: spawning registered types, errors for unknown or failing
// ones, ping, and shutdown taking the spawned actors with it.
#include <caf/all.hpp>
#include <gtest/gtest.h>

#include "base/error.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/errors.h"
#include "runtime/host.h"
#include "runtime/runtime_test_util.h"

namespace partita::runtime {
namespace {

constexpr auto kTimeout = std::chrono::seconds(10);

ActorSystemOptions local_options() {
  ActorSystemOptions options;
  options.threads = 2;
  options.networking = false;
  return options;
}

// "echo" replies to a string with the setting "prefix" in front of it.
ActorTypeRegistry test_registry() {
  ActorTypeRegistry registry;
  registry.add("echo", [](caf::actor_system& system, const Settings& settings) {
    auto it = settings.find("prefix");
    if (it == settings.end()) throw Error("setting 'prefix' is missing");
    std::string prefix = it->second;
    return system.spawn([prefix]() -> caf::behavior {
      return {[prefix](const std::string& text) { return prefix + text; }};
    });
  });
  return registry;
}

// Asks `host` to spawn (for `owner`, if given) and returns the actor or the error as text.
std::pair<caf::actor, std::string> spawn_on(caf::actor_system& system, const host_actor& host,
                                            const std::string& type, const Settings& settings,
                                            const caf::actor& owner = {}) {
  caf::scoped_actor self{system};
  std::pair<caf::actor, std::string> result;
  self->request(host, kTimeout, spawn_atom::value, type, settings, owner)
      .receive([&](caf::actor& actor) { result.first = std::move(actor); },
               [&](caf::error& err) { result.second = describe(system, err); });
  return result;
}

TEST(HostTest, SpawnsARegisteredTypeWithItsSettings) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-a", "1.2.3"}, test_registry());
  auto [echo, error] = spawn_on(system, host, "echo", {{"prefix", ">> "}});
  ASSERT_TRUE(echo) << error;
  caf::scoped_actor self{system};
  std::string reply;
  self->request(echo, kTimeout, std::string("hello"))
      .receive([&](const std::string& text) { reply = text; },
               [&](caf::error& err) { reply = "error: " + describe(system, err); });
  EXPECT_EQ(reply, ">> hello");
  self->send(host, shutdown_atom::value);
}

TEST(HostTest, UnknownTypeIsAnErrorNamingItAndTheKnownTypes) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-a", "1.2.3"}, test_registry());
  auto [actor, error] = spawn_on(system, host, "sampler", {});
  EXPECT_FALSE(actor);
  EXPECT_CONTAINS(error, "node-a");
  EXPECT_CONTAINS(error, "unknown actor type 'sampler'");
  EXPECT_CONTAINS(error, "registered: echo");
  // The host keeps serving after a bad request.
  auto [echo, echo_error] = spawn_on(system, host, "echo", {{"prefix", ""}});
  EXPECT_TRUE(echo) << echo_error;
  caf::anon_send(host, shutdown_atom::value);
}

TEST(HostTest, FactoryErrorsBecomeErrorReplies) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-a", "1.2.3"}, test_registry());
  auto [actor, error] = spawn_on(system, host, "echo", {});
  EXPECT_FALSE(actor);
  EXPECT_CONTAINS(error, "cannot spawn 'echo'");
  EXPECT_CONTAINS(error, "setting 'prefix' is missing");
  caf::anon_send(host, shutdown_atom::value);
}

TEST(HostTest, PingAnswersWithNameAndVersion) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-b", "9.8.7"}, test_registry());
  caf::scoped_actor self{system};
  std::string name, version, error;
  self->request(host, kTimeout, ping_atom::value)
      .receive(
          [&](pong_atom, const std::string& n, const std::string& v) {
            name = n;
            version = v;
          },
          [&](caf::error& err) { error = describe(system, err); });
  EXPECT_EQ(error, "");
  EXPECT_EQ(name, "node-b");
  EXPECT_EQ(version, "9.8.7");
  caf::anon_send(host, shutdown_atom::value);
}

TEST(HostTest, ShutdownStopsTheHostAndEverythingItSpawned) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-a", "1.2.3"}, test_registry());
  auto [echo, error] = spawn_on(system, host, "echo", {{"prefix", ""}});
  ASSERT_TRUE(echo) << error;
  caf::scoped_actor self{system};
  self->monitor(host);
  self->monitor(echo);
  self->send(host, shutdown_atom::value);
  std::vector<caf::actor_addr> down;
  for (int i = 0; i < 2; ++i) {
    self->receive([&](const caf::down_msg& msg) { down.push_back(msg.source); },
                  caf::after(kTimeout) >> [] {});
  }
  ASSERT_EQ(down.size(), 2u) << "the host or its child is still running";
  EXPECT_NE(std::find(down.begin(), down.end(), host.address()), down.end());
  EXPECT_NE(std::find(down.begin(), down.end(), echo.address()), down.end());
}

TEST(HostTest, AFailingChildDoesNotTakeTheHostDown) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-a", "1.2.3"}, test_registry());
  auto [echo, error] = spawn_on(system, host, "echo", {{"prefix", ""}});
  ASSERT_TRUE(echo) << error;
  caf::scoped_actor self{system};
  self->monitor(echo);
  self->send_exit(echo, caf::sec::runtime_error);
  bool child_down = false;
  self->receive([&](const caf::down_msg&) { child_down = true; }, caf::after(kTimeout) >> [] {});
  ASSERT_TRUE(child_down);
  std::string name;
  self->request(host, kTimeout, ping_atom::value)
      .receive([&](pong_atom, const std::string& n, const std::string&) { name = n; },
               [&](caf::error& err) { name = "error: " + describe(system, err); });
  EXPECT_EQ(name, "node-a");
  self->send(host, shutdown_atom::value);
}

// What keeps a job's actors from outliving its driver: when the owner goes, so do they, and
// only they (the process-level cases are in tests/training/job_lifetime_test.cpp).
TEST(HostTest, TheActorsOfAnOwnerStopWhenItGoesAndOnlyThey) {
  ActorSystem system(local_options());
  host_actor host = spawn_host(system, {"node-a", "1.2.3"}, test_registry());
  auto idle = []() -> caf::behavior { return {[](caf::ok_atom) {}}; };
  caf::actor owner = system.get().spawn(idle);
  caf::actor other_owner = system.get().spawn(idle);
  auto [first, e1] = spawn_on(system, host, "echo", {{"prefix", ""}}, owner);
  auto [second, e2] = spawn_on(system, host, "echo", {{"prefix", ""}}, owner);
  auto [others, e3] = spawn_on(system, host, "echo", {{"prefix", ""}}, other_owner);
  auto [unowned, e4] = spawn_on(system, host, "echo", {{"prefix", ""}});
  ASSERT_TRUE(first && second && others && unowned) << e1 << e2 << e3 << e4;
  caf::scoped_actor self{system};
  for (const auto& a : {first, second, others, unowned}) self->monitor(a);
  caf::anon_send_exit(owner, caf::exit_reason::kill);
  std::vector<caf::actor_addr> down;
  for (int i = 0; i < 2; ++i) {
    self->receive([&](const caf::down_msg& msg) { down.push_back(msg.source); }, caf::after(kTimeout) >> [] {});
  }
  ASSERT_EQ(down.size(), 2u) << "the owner's actors are still running";
  EXPECT_NE(std::find(down.begin(), down.end(), first.address()), down.end());
  EXPECT_NE(std::find(down.begin(), down.end(), second.address()), down.end());
  // The others answer, and so does the host.
  for (const auto& a : {others, unowned}) {
    std::string reply;
    self->request(a, kTimeout, std::string("still here"))
        .receive([&](const std::string& text) { reply = text; },
                 [&](caf::error& err) { reply = "error: " + describe(system, err); });
    EXPECT_EQ(reply, "still here");
  }
  // An owner already gone when its actor is spawned: the actor stops at once.
  auto [late, e5] = spawn_on(system, host, "echo", {{"prefix", ""}}, owner);
  ASSERT_TRUE(late) << e5;
  self->monitor(late);
  bool late_down = false;
  // An init-capture: C++17 lambdas cannot name a structured binding.
  self->receive([&, &late = late](const caf::down_msg& msg) { late_down = msg.source == late.address(); },
                caf::after(kTimeout) >> [] {});
  EXPECT_TRUE(late_down) << "an actor of an owner that was already gone kept running";
  caf::anon_send_exit(other_owner, caf::exit_reason::user_shutdown);
  self->send(host, shutdown_atom::value);
}

TEST(ActorTypeRegistryTest, RejectsDuplicatesAndEmptyNames) {
  ActorTypeRegistry registry = test_registry();
  auto factory = [](caf::actor_system&, const Settings&) { return caf::actor{}; };
  EXPECT_THROW(registry.add("echo", factory), UsageError);
  EXPECT_THROW(registry.add("", factory), UsageError);
  EXPECT_THROW(registry.add("empty", ActorFactory{}), UsageError);
  EXPECT_EQ(registry.names(), std::vector<std::string>{"echo"});
  EXPECT_EQ(registry.find("nope"), nullptr);
}

TEST(EndpointTest, ParsesHostAndPort) {
  Endpoint e = parse_endpoint("127.0.0.1:7070", "--listen");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 7070);
  EXPECT_EQ(e.to_string(), "127.0.0.1:7070");
  Endpoint v6 = parse_endpoint("[::1]:0", "--listen");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 0);
  EXPECT_EQ(v6.to_string(), "[::1]:0");
  EXPECT_EQ(parse_endpoint("node-3.example:65535", "x").port, 65535);
}

TEST(EndpointTest, MalformedAddressesAreUsageErrorsNamingTheValue) {
  for (const std::string bad : {"127.0.0.1", "127.0.0.1:", ":7070", "127.0.0.1:70x", "127.0.0.1:65536",
                                "127.0.0.1:123456", "::1:80", "[::1]80", "[::1:80", "bad host:80", ""}) {
    try {
      parse_endpoint(bad, "--listen");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_CONTAINS(e.what(), "--listen '" + bad + "'");
    }
  }
}

}  // namespace
}  // namespace partita::runtime
