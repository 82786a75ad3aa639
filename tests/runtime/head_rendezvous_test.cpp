// The head's rendezvous of allreduce groups (runtime/cluster/head.h), with a head in this
// process and stand-in members: a complete group answers every rank with the members by
// rank; what cannot form a group is refused, naming the group and the problem; a group
// incomplete at the head's deadline fails every waiting rank; a rank whose member is lost
// may arrive again. The whole path across processes: python/tests/test_distributed.py.
#include <gtest/gtest.h>

#include <caf/all.hpp>

#include <chrono>
#include <future>
#include <thread>
#include <string>
#include <vector>

#include "base/error.h"
#include "expect_error.h"
#include "runtime/actor_system.h"
#include "runtime/cluster/head.h"
#include "runtime/cluster/head_client.h"
#include "test_util.h"

namespace partita::runtime {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kAsk{10000};

class HeadRendezvousTest : public ::testing::Test {
 protected:
  head_actor start(milliseconds deadline = milliseconds(60000)) {
    HeadOptions options;
    options.heartbeat_period = milliseconds(50);
    options.heartbeat_timeout = milliseconds(1000);
    options.rendezvous_deadline = deadline;
    head_actor head = spawn_head(system_, options);
    actors_.push_back(caf::actor_cast<caf::actor>(head));
    return head;
  }
  // A stand-in for a rank's allreduce member.
  caf::actor member() {
    caf::actor a = system_.get().spawn([]() -> caf::behavior { return {[](caf::ok_atom) {}}; });
    actors_.push_back(a);
    return a;
  }
  std::future<std::vector<caf::actor>> arrive(const head_actor& head, const std::string& group, int rank, int size,
                                              const caf::actor& m, milliseconds timeout = kAsk) {
    return std::async(std::launch::async, [this, head, group, rank, size, m, timeout] {
      return rendezvous(system_, head, "head", group, rank, size, m, timeout);
    });
  }

  void TearDown() override {
    for (auto& a : actors_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  ActorSystem system_{[] {
    ActorSystemOptions o;
    o.threads = 2;
    o.networking = false;
    return o;
  }()};
  std::vector<caf::actor> actors_;
};

TEST_F(HeadRendezvousTest, ACompleteGroupGivesEveryRankTheMembersByRank) {
  const head_actor head = start();
  const std::vector<caf::actor> members = {member(), member(), member()};
  auto r2 = arrive(head, "job", 2, 3, members[2]);
  auto r0 = arrive(head, "job", 0, 3, members[0]);
  auto r1 = arrive(head, "job", 1, 3, members[1]);
  EXPECT_EQ(r0.get(), members);
  EXPECT_EQ(r1.get(), members);
  EXPECT_EQ(r2.get(), members);
  // The name is free again: a new group of another size gathers under it.
  const std::vector<caf::actor> solo = {member()};
  EXPECT_EQ(rendezvous(system_, head, "head", "job", 0, 1, solo[0], kAsk), solo);
}

TEST_F(HeadRendezvousTest, WhatCannotFormAGroupIsRefusedByName) {
  const head_actor head = start();
  const caf::actor m = member();
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "g", 2, 2, m, kAsk), "rank 2 is not below the world size 2");
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "g", -1, 2, m, kAsk), "a rank is 0 or more");
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "g", 0, 0, m, kAsk), "world size 0 (must be 1 to 1024)");
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "", 0, 2, m, kAsk), "the group has no name");
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", std::string(300, 'n'), 0, 2, m, kAsk),
                        "a name of 300 bytes; at most 256");
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "g", 0, 2, caf::actor(), kAsk), "without its allreduce member");

  // A rank that arrived already: the newcomer is refused, the group still completes.
  auto first = arrive(head, "dup", 0, 2, m);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "dup", 0, 2, member(), kAsk), "rank 0 has arrived already");
  const caf::actor other = member();
  EXPECT_EQ(rendezvous(system_, head, "head", "dup", 1, 2, other, kAsk), (std::vector<caf::actor>{m, other}));
  EXPECT_EQ(first.get().size(), 2u);
}

TEST_F(HeadRendezvousTest, ASizeThatDiffersFailsEveryWaitingRank) {
  const head_actor head = start();
  auto waiting = arrive(head, "mismatch", 0, 2, member());
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "mismatch", 1, 3, member(), kAsk),
                        "rendezvous of group 'mismatch': rank 1 has world size 3, the ranks before it 2");
  EXPECT_THROW_CONTAINS(waiting.get(), "rank 1 has world size 3, the ranks before it 2");
}

TEST_F(HeadRendezvousTest, AnIncompleteGroupFailsAtTheDeadlineNamingWhoIsMissing) {
  const head_actor head = start(milliseconds(300));
  auto waiting = arrive(head, "late", 1, 3, member());
  EXPECT_THROW_CONTAINS(waiting.get(), "rank(s) 0, 2 of 3 did not arrive within 300 ms");
}

TEST_F(HeadRendezvousTest, ARankWhoseMemberIsLostMayArriveAgain) {
  const head_actor head = start();
  const caf::actor doomed = member();
  auto waiting = arrive(head, "lost", 0, 2, doomed);
  std::this_thread::sleep_for(milliseconds(100));
  caf::anon_send_exit(doomed, caf::exit_reason::kill);
  EXPECT_THROW_CONTAINS(waiting.get(), "rank 0's member was lost");
  const std::vector<caf::actor> members = {member(), member()};
  auto again = arrive(head, "lost", 0, 2, members[0]);
  EXPECT_EQ(rendezvous(system_, head, "head", "lost", 1, 2, members[1], kAsk), members);
  EXPECT_EQ(again.get(), members);
}

TEST_F(HeadRendezvousTest, ARankThatWaitsPastItsTimeoutGetsAnError) {
  const head_actor head = start();
  EXPECT_THROW_CONTAINS(rendezvous(system_, head, "head", "alone", 0, 2, member(), milliseconds(200)),
                        "rendezvous of group 'alone' as rank 0 failed");
}

}  // namespace
}  // namespace partita::runtime
