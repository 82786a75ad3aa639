// partita::Runtime: the same spawns in one process and on daemons, placement by partition,
// bad daemon lists, and a lost daemon named.
#include "runtime/runtime.h"

#include <caf/all.hpp>

#include <chrono>
#include <string>

#include "base/error.h"
#include "daemon_process.h"
#include "runtime/runtime_test_util.h"

namespace partita::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
constexpr milliseconds kTimeout{10000};
constexpr double kProcessSeconds = 60;

using echo_atom = caf::atom_constant<caf::atom("t_echo")>;

ActorSystemOptions test_options() {
  ActorSystemOptions options;
  options.threads = 2;
  return options;
}

// An actor type that answers with the setting it was spawned with.
ActorTypeRegistry echo_registry() {
  ActorTypeRegistry registry;
  registry.add("echo", [](caf::actor_system& system, const Settings& settings) {
    auto it = settings.find("word");
    if (it == settings.end()) throw UsageError("setting 'word' is missing");
    return system.spawn([word = it->second](caf::event_based_actor*) -> caf::behavior {
      return {[word](echo_atom) { return word; }};
    });
  });
  return registry;
}

std::string ask(caf::actor_system& system, const caf::actor& actor) {
  caf::scoped_actor self{system};
  std::string answer;
  self->request(actor, kTimeout, echo_atom::value)
      .receive([&](std::string& word) { answer = word; },
               [&](caf::error& err) { answer = "error: " + system.render(err); });
  return answer;
}

TEST(RuntimeTest, InProcessSpawnsRegisteredTypesOnItsOneNode) {
  auto runtime = Runtime::in_process(test_options(), echo_registry());
  EXPECT_FALSE(runtime->is_distributed());
  EXPECT_EQ(runtime->num_nodes(), 1);
  EXPECT_EQ(runtime->node_name(0), "in-process");

  caf::actor echo = runtime->spawn(0, "echo", {{"word", "hello"}});
  EXPECT_EQ(ask(runtime->system(), echo), "hello");
  EXPECT_EQ(runtime->node_of(echo.address()), 0);
  EXPECT_FALSE(runtime->lost_node().has_value());
}

TEST(RuntimeTest, InProcessSpawnErrorsNameTheProblem) {
  auto runtime = Runtime::in_process(test_options(), echo_registry());
  try {
    runtime->spawn(0, "nope", {});
    ADD_FAILURE() << "spawned an unregistered type";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "unknown actor type 'nope'");
    EXPECT_CONTAINS(e.what(), "echo");
  }
  try {
    runtime->spawn(0, "echo", {});
    ADD_FAILURE() << "spawned without a required setting";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "setting 'word' is missing");
  }
  EXPECT_THROW(runtime->spawn(1, "echo", {{"word", "x"}}), UsageError);
}

TEST(RuntimeTest, RejectsBadDaemonLists) {
  EXPECT_THROW(Runtime::connect(test_options(), {}, kTimeout), UsageError);
  EXPECT_THROW(Runtime::connect(test_options(), {"127.0.0.1"}, kTimeout), UsageError);
  try {
    Runtime::connect(test_options(), {"127.0.0.1:7001", "127.0.0.1:7001"}, kTimeout);
    ADD_FAILURE() << "accepted a repeated daemon";
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), "listed twice");
  }
}

TEST(RuntimeTest, PlacesPartitionsRoundRobinOnDaemonsAndNamesALostOne) {
  testing::Daemon first = testing::start_daemon({"--name", "first"});
  testing::Daemon second = testing::start_daemon({"--name", "second"});
  ASSERT_FALSE(first.address.empty());
  ASSERT_FALSE(second.address.empty());
  {
    auto runtime = Runtime::connect(test_options(), {first.address, second.address}, kTimeout);
    EXPECT_TRUE(runtime->is_distributed());
    EXPECT_EQ(runtime->num_nodes(), 2);
    EXPECT_EQ(runtime->node_name(1), second.address);
    EXPECT_FALSE(runtime->lost_node().has_value());

    // The daemons know only their own types: the error comes from the right one.
    try {
      runtime->spawn(1, "echo", {{"word", "x"}});
      ADD_FAILURE() << "a daemon spawned a type it does not have";
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "second");
      EXPECT_CONTAINS(e.what(), "unknown actor type 'echo'");
    }

    second.process->kill();
    second.process->wait(kProcessSeconds);
    std::optional<Error> lost;
    const auto deadline = std::chrono::steady_clock::now() + seconds(10);
    while (!lost && std::chrono::steady_clock::now() < deadline) {
      lost = runtime->lost_node();
      if (!lost) std::this_thread::sleep_for(milliseconds(50));
    }
    ASSERT_TRUE(lost.has_value()) << "a killed daemon was not noticed within 10 s";
    EXPECT_CONTAINS(lost->what(), second.address);
    EXPECT_THROW(runtime->spawn(1, "partition", {}), Error);
  }
  // The first daemon outlives the job's runtime.
  EXPECT_TRUE(first.process->running());
}

}  // namespace
}  // namespace partita::runtime
