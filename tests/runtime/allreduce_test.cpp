// The allreduce group: the ring's schedule alone; exact sums in the documented order,
// bit-identical on every member, in one process and across daemon processes; lost members,
// deadlines and bad messages end an operation with an error naming the cause, never with a
// hang or a crash. No test asserts a time: a failure noticed only at its deadline says
// "timed out", which the tests tell apart from the cause they expect.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/random.h"
#include "daemon_process.h"
#include "runtime/actor_system.h"
#include "runtime/client.h"
#include "runtime/collective/allreduce_client.h"
#include "runtime/collective/allreduce_stopped.h"
#include "runtime/collective/allreduce_group.h"
#include "runtime/collective/allreduce_member.h"
#include "runtime/collective/ring.h"
#include "runtime/runtime_test_util.h"

namespace partita::runtime {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using Buffers = std::vector<std::vector<float>>;

// Floats of many magnitudes, so that a different summation order gives different bits.
Buffers random_inputs(int members, size_t n, uint64_t seed) {
  Buffers inputs(members, std::vector<float>(n));
  Rng rng(seed);
  for (auto& buffer : inputs) {
    for (float& x : buffer) x = static_cast<float>(rng.normal() * std::ldexp(1.0, static_cast<int>(rng.below(21)) - 10));
  }
  return inputs;
}

// The documented result, computed independently: element i of chunk c (chunk c is
// [c*n/N, (c+1)*n/N)) is ((x[c] + x[c+1]) + ...) + x[c-1], ranks mod N.
std::vector<float> reference_sum(const Buffers& inputs) {
  const size_t members = inputs.size(), n = inputs[0].size();
  std::vector<float> out(n);
  for (size_t c = 0; c < members; ++c) {
    for (size_t i = c * n / members; i < (c + 1) * n / members; ++i) {
      float acc = inputs[c][i];
      for (size_t j = 1; j < members; ++j) acc = acc + inputs[(c + j) % members][i];
      out[i] = acc;
    }
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp must not get the null data() of an empty vector, even for 0 bytes (UBSan).
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

struct Outcome {
  std::vector<float> data;
  std::string error;  // empty if the sum succeeded
  bool stopped = false;  // the error is an AllreduceStopped
};

// Every client sums its own input at once, each on a thread of its own (sum blocks until
// the whole group took part). Clients that are null sit the operation out.
std::vector<Outcome> sum_on_all(std::vector<std::unique_ptr<Allreduce>>& clients, Buffers inputs) {
  std::vector<Outcome> outcomes(clients.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < clients.size(); ++r) {
    outcomes[r].data = std::move(inputs[r]);
    if (!clients[r]) continue;
    threads.emplace_back([&, r] {
      try {
        clients[r]->sum(outcomes[r].data.data(), outcomes[r].data.size());
      } catch (const AllreduceStopped& e) {
        outcomes[r].error = e.what();
        outcomes[r].stopped = true;
      } catch (const std::exception& e) {
        outcomes[r].error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

std::vector<std::unique_ptr<Allreduce>> clients_of(caf::actor_system& system, const std::vector<caf::actor>& members,
                                                   milliseconds deadline) {
  std::vector<std::unique_ptr<Allreduce>> clients;
  for (const auto& m : members) clients.push_back(std::make_unique<Allreduce>(system, m, deadline));
  return clients;
}

// A group of members in one actor system, stopped on destruction (before the system).
class LocalGroup {
 public:
  LocalGroup(caf::actor_system& system, int size, milliseconds deadline = 20s, bool wire = true) {
    for (int r = 0; r < size; ++r) {
      members.push_back(caf::actor_cast<caf::actor>(spawn_allreduce_member(system, AllreduceConfig{r, size, "127.0.0.1"})));
    }
    if (wire) connect_allreduce_group(system, members, 10s);
    clients = clients_of(system, members, deadline);
  }
  ~LocalGroup() {
    for (const auto& m : members) caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  }

  std::vector<Outcome> sum(Buffers inputs) { return sum_on_all(clients, std::move(inputs)); }

  std::vector<caf::actor> members;
  std::vector<std::unique_ptr<Allreduce>> clients;
};

void expect_reference(const std::vector<Outcome>& outcomes, const Buffers& inputs, const std::string& what) {
  const std::vector<float> want = reference_sum(inputs);
  for (size_t r = 0; r < outcomes.size(); ++r) {
    ASSERT_EQ(outcomes[r].error, "") << what << ", rank " << r;
    EXPECT_TRUE(same_bits(outcomes[r].data, want)) << what << ", rank " << r << ": not the reference's bits";
  }
}

ActorSystemOptions test_options(bool networking = false) {
  ActorSystemOptions options;
  options.threads = 2;
  options.networking = networking;
  return options;
}

class AllreduceTest : public ::testing::Test {
 protected:
  ActorSystem system_{test_options()};
};

TEST(RingSchedule, EachMemberReceivesWhatItsLeftNeighbourSendsInTheSameOrder) {
  for (int size = 2; size <= 5; ++size) {
    for (size_t n : {size_t{0}, size_t{3}, size_t{1000003}, size_t{5} << 20}) {
      for (int rank = 0; rank < size; ++rank) {
        const RingSchedule mine = ring_schedule(n, rank, size);
        const RingSchedule left = ring_schedule(n, (rank + size - 1) % size, size);
        ASSERT_EQ(mine.recvs.size(), left.sends.size()) << size << " members, " << n << " floats, rank " << rank;
        size_t reduced = 0, floats = 0;
        for (size_t j = 0; j < mine.recvs.size(); ++j) {
          EXPECT_EQ(mine.recvs[j].offset, left.sends[j].offset);
          EXPECT_EQ(mine.recvs[j].count, left.sends[j].count);
          EXPECT_GT(mine.recvs[j].count, 0u);
          EXPECT_LE(mine.recvs[j].count, (size_t{1} << 20) / sizeof(float)) << "a segment over 1 MiB";
          floats += mine.recvs[j].count;
          if (mine.recvs[j].reduce) reduced += mine.recvs[j].count;
        }
        // Reduce-scatter: every chunk but the member's own, summed; allgather: every chunk
        // but its right neighbour's (which that neighbour finished), copied.
        auto chunk = [&](int c) { return chunk_begin(n, size, c + 1) - chunk_begin(n, size, c); };
        const size_t own = chunk(rank), right = chunk((rank + 1) % size);
        EXPECT_EQ(reduced, n - own);
        EXPECT_EQ(floats, (n - own) + (n - right)) << size << " members, " << n << " floats";
        EXPECT_LE(mine.first, mine.sends.size());
      }
    }
  }
}

TEST_F(AllreduceTest, ExactOddSizesForOneToFourMembers) {
  for (int members = 1; members <= 4; ++members) {
    LocalGroup group(system_, members);
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{1000}, size_t{1000003}}) {
      const Buffers inputs = random_inputs(members, n, 100 * members + n);
      expect_reference(group.sum(inputs), inputs, std::to_string(members) + " members, " + std::to_string(n) + " floats");
    }
  }
}

TEST_F(AllreduceTest, TheOrderIsFixedSoTheTestCanTellOrdersApart) {
  // Guards the test above: with these inputs a different order changes the bits.
  const Buffers inputs = random_inputs(4, 1000, 7);
  const std::vector<float> want = reference_sum(inputs);
  size_t differ = 0;
  for (size_t i = 0; i < 1000; ++i) {
    const float forward = ((inputs[0][i] + inputs[1][i]) + inputs[2][i]) + inputs[3][i];
    const float backward = ((inputs[3][i] + inputs[2][i]) + inputs[1][i]) + inputs[0][i];
    differ += forward != backward;
  }
  EXPECT_GT(differ, 10u);
}

TEST_F(AllreduceTest, ManyMembersAndRepeatedOperationsOfChangingSizes) {
  LocalGroup group(system_, 6);
  uint64_t seed = 1;
  for (size_t n : {size_t{5}, size_t{300001}, size_t{0}, size_t{11}, size_t{262145}, size_t{6}}) {
    const Buffers inputs = random_inputs(6, n, seed++);
    expect_reference(group.sum(inputs), inputs, "operation " + std::to_string(seed - 1));
  }
}

TEST_F(AllreduceTest, ASumOfIntegersIsExact) {
  LocalGroup group(system_, 3);
  Buffers inputs(3, std::vector<float>(100));
  for (int r = 0; r < 3; ++r) {
    for (size_t i = 0; i < 100; ++i) inputs[r][i] = static_cast<float>(i * (r + 1));
  }
  for (const Outcome& o : group.sum(inputs)) {
    ASSERT_EQ(o.error, "");
    for (size_t i = 0; i < 100; ++i) EXPECT_EQ(o.data[i], static_cast<float>(6 * i));
  }
}

TEST_F(AllreduceTest, ACallerThatArrivesBeforeTheWiringWaitsForIt) {
  LocalGroup group(system_, 2, 20s, /*wire=*/false);
  const Buffers inputs = random_inputs(2, 1001, 3);
  std::vector<Outcome> outcomes;
  std::thread summing([&] { outcomes = group.sum(inputs); });
  std::this_thread::sleep_for(50ms);  // the sums are (most likely) waiting now
  connect_allreduce_group(system_, group.members, 10s);
  summing.join();
  expect_reference(outcomes, inputs, "wired late");
}

TEST_F(AllreduceTest, AStoppedMemberFailsEveryonesSumNamingIt) {
  LocalGroup group(system_, 3, 60s);
  expect_reference(group.sum(random_inputs(3, 100, 1)), random_inputs(3, 100, 1), "before");
  caf::anon_send_exit(group.members[1], caf::exit_reason::user_shutdown);
  std::vector<Outcome> outcomes = group.sum(random_inputs(3, 100000, 2));
  for (int r = 0; r < 3; ++r) {
    EXPECT_NE(outcomes[r].error.find("rank 1"), std::string::npos) << "rank " << r << ": " << outcomes[r].error;
    EXPECT_EQ(outcomes[r].error.find("timed out"), std::string::npos) << "noticed only at the deadline: "
                                                                       << outcomes[r].error;
  }
}

// Rank 1 sits the operation out, so the others' sums are under way when it ends.
std::vector<Outcome> end_rank_one_during_a_sum(LocalGroup& group, caf::exit_reason reason) {
  std::vector<std::unique_ptr<Allreduce>> without_one;
  without_one.push_back(std::move(group.clients[0]));
  without_one.push_back(nullptr);
  without_one.push_back(std::move(group.clients[2]));
  std::vector<Outcome> outcomes;
  std::thread summing([&] { outcomes = sum_on_all(without_one, random_inputs(3, 100000, 4)); });
  std::this_thread::sleep_for(50ms);  // the sums are (most likely) running now
  caf::anon_send_exit(group.members[1], reason);
  summing.join();
  return outcomes;
}

TEST_F(AllreduceTest, AMemberStoppedOnPurposeDuringASumEndsTheOthersAsStopped) {
  LocalGroup group(system_, 3, 60s);
  std::vector<Outcome> outcomes = end_rank_one_during_a_sum(group, caf::exit_reason::user_shutdown);
  for (int r : {0, 2}) {
    EXPECT_TRUE(outcomes[r].stopped) << "rank " << r << " failed instead: " << outcomes[r].error;
    EXPECT_NE(outcomes[r].error.find("rank 1"), std::string::npos) << "rank " << r << ": " << outcomes[r].error;
  }
}

TEST_F(AllreduceTest, AMemberKilledDuringASumFailsTheOthers) {
  LocalGroup group(system_, 3, 60s);
  std::vector<Outcome> outcomes = end_rank_one_during_a_sum(group, caf::exit_reason::kill);
  for (int r : {0, 2}) {
    EXPECT_NE(outcomes[r].error, "") << "rank " << r;
    EXPECT_FALSE(outcomes[r].stopped) << "rank " << r << " ended as stopped: " << outcomes[r].error;
    EXPECT_NE(outcomes[r].error.find("rank 1"), std::string::npos) << "rank " << r << ": " << outcomes[r].error;
  }
}

TEST_F(AllreduceTest, AMemberThatDoesNotTakePartFailsTheOthersAtTheDeadline) {
  LocalGroup group(system_, 2, 300ms);
  std::vector<std::unique_ptr<Allreduce>> only_first;
  only_first.push_back(std::move(group.clients[0]));
  only_first.push_back(nullptr);
  std::vector<Outcome> outcomes = sum_on_all(only_first, random_inputs(2, 10, 1));
  EXPECT_NE(outcomes[0].error.find("timed out"), std::string::npos) << outcomes[0].error;
  EXPECT_NE(outcomes[0].error.find("rank 1"), std::string::npos) << outcomes[0].error;
  // The group is broken for good: rank 1's next sum fails at once with the cause.
  std::vector<float> data(10);
  try {
    group.clients[1]->sum(data.data(), data.size());
    FAIL() << "a sum in a failed group succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed"), std::string::npos) << e.what();
  }
}

TEST_F(AllreduceTest, SizesThatDifferBetweenMembersAreAnErrorNotACorruption) {
  LocalGroup group(system_, 2, 5s);
  Buffers inputs{std::vector<float>(1000, 1.f), std::vector<float>(1001, 1.f)};
  std::vector<Outcome> outcomes = group.sum(inputs);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(outcomes[r].error.find("same number of floats"), std::string::npos) << outcomes[r].error;
  }
}

// Sends one raw sum message and returns the member's answer: "" for done, else the reason.
std::string raw_sum(caf::actor_system& system, const caf::actor& member, uint64_t seq, std::vector<char> bytes) {
  caf::scoped_actor self{system};
  self->send(caf::actor_cast<allreduce_member>(member), allreduce_sum_atom::value, seq, int64_t{5000}, std::move(bytes));
  std::string answer = "no answer";
  self->receive([&](allreduce_done_atom, uint64_t, std::vector<char>&) { answer = ""; },
                [&](allreduce_failed_atom, uint64_t, std::string& why) { answer = why; },
                caf::after(10s) >> [] {});
  return answer;
}

TEST_F(AllreduceTest, BadSumMessagesAreRefusedAndTheMemberKeepsServing) {
  LocalGroup group(system_, 1);
  EXPECT_NE(raw_sum(system_, group.members[0], 7, std::vector<char>(8)).find("out of order"), std::string::npos);
  EXPECT_NE(raw_sum(system_, group.members[0], 1, std::vector<char>(7)).find("whole number of float32"),
            std::string::npos);
  EXPECT_EQ(raw_sum(system_, group.members[0], 1, std::vector<char>(8)), "");
  EXPECT_EQ(raw_sum(system_, group.members[0], 2, std::vector<char>(0)), "");
  // The client learns where the member stands, so it carries on from operation 3.
  std::vector<float> data{1.f, 2.f};
  group.clients[0]->sum(data.data(), data.size());
  EXPECT_EQ(data, (std::vector<float>{1.f, 2.f}));
}

TEST_F(AllreduceTest, BadWiringIsRefusedWithAnErrorNamingTheProblem) {
  auto a = caf::actor_cast<caf::actor>(spawn_allreduce_member(system_, AllreduceConfig{0, 2, "127.0.0.1"}));
  auto b = caf::actor_cast<caf::actor>(spawn_allreduce_member(system_, AllreduceConfig{1, 2, "127.0.0.1"}));
  auto c = caf::actor_cast<caf::actor>(spawn_allreduce_member(system_, AllreduceConfig{0, 3, "127.0.0.1"}));
  struct Stop {
    std::vector<caf::actor> actors;
    ~Stop() {
      for (const auto& x : actors) caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
    }
  } stop{{a, b, c}};
  auto expect_refused = [&](const std::vector<caf::actor>& members, const std::string& needle) {
    try {
      connect_allreduce_group(system_, members, 5s);
      ADD_FAILURE() << "wired a bad group; expected an error containing '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_refused({b, a}, "is another actor");          // ranks swapped
  expect_refused({c, b}, "already in a group");         // a, b, c listened above; c has size 3
  EXPECT_THROW(connect_allreduce_group(system_, {}, 1s), UsageError);
  EXPECT_THROW(spawn_allreduce_member(system_, AllreduceConfig{2, 2, "127.0.0.1"}), UsageError);
  EXPECT_THROW(allreduce_config_from({{"rank", "1"}}), UsageError);
  for (const char* bad : {"x", "12abc", " 1", "-1", "2"}) {
    try {
      allreduce_config_from({{"rank", bad}, {"size", "2"}});
      FAIL() << "accepted rank '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_CONTAINS(e.what(), "setting 'rank'");
    }
  }
  EXPECT_EQ(allreduce_config_from({{"rank", "1"}, {"size", "2"}, {"host", "10.0.0.1"}}).host, "10.0.0.1");
}

TEST_F(AllreduceTest, MessagesOfAnotherGroupAndStrayConnectionsAreIgnored) {
  LocalGroup group(system_, 2, 10s, /*wire=*/false);
  // Someone connects to a member's ring port and says something else than the hello.
  caf::scoped_actor self{system_};
  std::string host;
  uint16_t port = 0;
  self->request(caf::actor_cast<allreduce_member>(group.members[1]), 5s, allreduce_listen_atom::value, uint64_t{42})
      .receive([&](std::string& h, uint16_t p) { host = h; port = p; }, [](caf::error&) {});
  ASSERT_NE(port, 0);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::write(fd, "GET / HTTP/1.0\r\n\r\nxx", 20), 20);
  // A member listening already refuses to join another group; wire this one by hand.
  std::string host0;
  uint16_t port0 = 0;
  self->request(caf::actor_cast<allreduce_member>(group.members[0]), 5s, allreduce_listen_atom::value, uint64_t{42})
      .receive([&](std::string& h, uint16_t p) { host0 = h; port0 = p; }, [](caf::error&) {});
  auto w0 = self->request(caf::actor_cast<allreduce_member>(group.members[0]), 10s, allreduce_wire_atom::value,
                          uint64_t{42}, group.members, host, port, int64_t{5000});
  auto w1 = self->request(caf::actor_cast<allreduce_member>(group.members[1]), 10s, allreduce_wire_atom::value,
                          uint64_t{42}, group.members, host0, port0, int64_t{5000});
  std::string failed;
  w0.receive([](bool) {}, [&](caf::error& e) { failed += system_.get().render(e); });
  w1.receive([](bool) {}, [&](caf::error& e) { failed += system_.get().render(e); });
  ::close(fd);
  ASSERT_EQ(failed, "");
  // An abort for another group changes nothing.
  self->send(caf::actor_cast<allreduce_member>(group.members[0]), allreduce_abort_atom::value, uint64_t{43},
             uint64_t{1}, std::string("not yours"));
  const Buffers inputs = random_inputs(2, 5000, 9);
  expect_reference(group.sum(inputs), inputs, "after stray messages");
}

// --- Across processes ---

// `count` daemons, a client actor system connected to them, and members spawned on them.
class DaemonGroupTest : public ::testing::Test {
 protected:
  void start_daemons(int count) {
    for (int d = 0; d < count; ++d) {
      daemons_.push_back(testing::start_daemon({"--name", "node-" + std::to_string(d)}));
      ASSERT_FALSE(daemons_.back().address.empty());
      connections_.push_back(DaemonConnection::connect(client_, daemons_.back().address, 10s));
    }
  }
  // Member r on daemon placement[r].
  std::vector<caf::actor> spawn_members(const std::vector<int>& placement) {
    std::vector<caf::actor> members;
    const std::string size = std::to_string(placement.size());
    for (size_t r = 0; r < placement.size(); ++r) {
      members.push_back(connections_[placement[r]].spawn("allreduce", {{"rank", std::to_string(r)}, {"size", size}}, 30s));
    }
    connect_allreduce_group(client_, members, 10s);
    return members;
  }

  ActorSystem client_{test_options(/*networking=*/true)};
  std::vector<testing::Daemon> daemons_;
  std::vector<DaemonConnection> connections_;
};

TEST_F(DaemonGroupTest, SameBitsAsAnInProcessGroup) {
  start_daemons(3);
  for (const std::vector<int>& placement : {std::vector<int>{0, 1}, {0, 1, 2}, {0, 1, 2, 0}}) {
    const int members = static_cast<int>(placement.size());
    std::vector<caf::actor> remote = spawn_members(placement);
    auto remote_clients = clients_of(client_, remote, 20s);
    LocalGroup local(client_, members);
    for (size_t n : {size_t{0}, size_t{7}, size_t{1000003}}) {
      const Buffers inputs = random_inputs(members, n, 31 * n + members);
      const std::string what = std::to_string(members) + " members, " + std::to_string(n) + " floats";
      std::vector<Outcome> across = sum_on_all(remote_clients, inputs);
      std::vector<Outcome> within = local.sum(inputs);
      expect_reference(across, inputs, what + " on daemons");
      for (int r = 0; r < members; ++r) {
        EXPECT_TRUE(same_bits(across[r].data, within[r].data)) << what << ", rank " << r;
      }
    }
    for (const auto& m : remote) caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  }
}

TEST_F(DaemonGroupTest, AKilledDaemonFailsTheSumNamingItsMember) {
  start_daemons(3);
  // Rank 2 alone on daemon 2; rank 0 is not its ring neighbour and hears it from the others.
  std::vector<caf::actor> members = spawn_members({0, 1, 2, 0});
  auto clients = clients_of(client_, members, 60s);
  const Buffers inputs = random_inputs(4, 100000, 5);
  expect_reference(sum_on_all(clients, inputs), inputs, "before the kill");
  daemons_[2].process->kill();
  daemons_[2].process->wait(10);
  std::vector<Outcome> outcomes = sum_on_all(clients, random_inputs(4, 100000, 6));
  for (int r = 0; r < 4; ++r) {
    EXPECT_NE(outcomes[r].error.find("rank 2"), std::string::npos) << "rank " << r << ": " << outcomes[r].error;
    EXPECT_EQ(outcomes[r].error.find("timed out"), std::string::npos) << "noticed only at the deadline: "
                                                                       << outcomes[r].error;
  }
  for (const auto& m : members) caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
}

TEST_F(DaemonGroupTest, BadSettingsAreAnErrorNamingTheSetting) {
  start_daemons(1);
  try {
    connections_[0].spawn("allreduce", {{"rank", "3"}, {"size", "2"}}, 10s);
    FAIL() << "spawned rank 3 of 2";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'rank'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(connections_[0].ping(10s)) << "the daemon must keep serving";
}

}  // namespace
}  // namespace partita::runtime
