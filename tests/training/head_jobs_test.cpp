// The head's side of submitted jobs, with a head in this process and stand-in drivers (shell
// processes) whose behaviour each test picks: a cancel that a driver ignores ends in a kill
// and a cancelled job; a driver ended by the cancel's SIGTERM before it reported is cancelled,
// not failed; a cluster stop waits for its jobs' drivers before anything else and refuses
// submissions meanwhile; reports need the driver's token and a sane status; submissions wait
// for the head's address and stop at --max-jobs; a driver that cannot start leaves no folder;
// an ended job's actors are listed on no node until a heartbeat after its end lists them.
// The real driver across processes: tests/training/cluster_job_test.cpp.
//
// Waits are bounded only to end a hang; what is checked is the state reached.
#include <gtest/gtest.h>
#include <signal.h>

#include <caf/all.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/error.h"
#include "expect_error.h"
#include "runtime/actor_system.h"
#include "runtime/cluster/head.h"
#include "runtime/cluster/head_client.h"
#include "test_util.h"

namespace partita::runtime {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr milliseconds kAsk{10000};

constexpr auto kBound = std::chrono::seconds(30);

using testing::process_runs;

class HeadJobsTest : public ::testing::Test {
 protected:
  // A head whose drivers run `script` under /bin/sh; each driver first writes its pid to
  // OUTPUT/pid.
  head_actor start(const std::string& script, size_t max_jobs = 4, bool tell_address = true) {
    HeadOptions options;
    options.heartbeat_period = milliseconds(100);
    options.heartbeat_timeout = milliseconds(1000);
    options.runs_dir = tmp_ / "runs";
    options.cancel_deadline = milliseconds(500);
    options.max_running_jobs = max_jobs;
    options.driver_command = [this, script](const DriverLaunch& launch) {
      std::lock_guard<std::mutex> lock(mutex_);
      launches_.push_back(launch);
      if (script.empty()) return std::vector<std::string>{"/nonexistent/driver"};
      return std::vector<std::string>{"/bin/sh", "-c", "echo $$ > '" + launch.output + "/pid'; " + script};
    };
    head_actor head = spawn_head(system_, options);
    heads_.push_back(head);
    if (tell_address) tell_head_its_address(system_, head, "127.0.0.1:1", kAsk);
    return head;
  }
  DriverLaunch launch(size_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    return launches_.at(i);
  }
  std::string submit(const head_actor& head, const std::string& name) {
    return submit_job(system_, head, "head", name, "{}", kAsk);
  }
  // The driver's pid, once it wrote it.
  pid_t driver_pid(const std::string& id) {
    const std::string file = tmp_ / ("runs/" + id + "/pid");
    const auto until = std::chrono::steady_clock::now() + kBound;
    while (std::chrono::steady_clock::now() < until) {
      const std::string text = testing::read_text(file);
      if (!text.empty() && text.back() == '\n') return static_cast<pid_t>(std::stol(text));
      std::this_thread::sleep_for(milliseconds(10));
    }
    ADD_FAILURE() << "no pid in " << file;
    return -1;
  }
  std::optional<JobStatus> job(const head_actor& head, const std::string& id) {
    for (JobStatus& j : cluster_status(system_, head, "head", kAsk).jobs) {
      if (j.id == id) return j;
    }
    return std::nullopt;
  }
  JobStatus wait_until_finished(const head_actor& head, const std::string& id) {
    const auto until = std::chrono::steady_clock::now() + kBound;
    std::optional<JobStatus> j = job(head, id);
    while (j && !j->finished() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(20));
      j = job(head, id);
    }
    if (!j) {
      ADD_FAILURE() << "no job " << id;
      return {};
    }
    return *j;
  }

  void TearDown() override {
    for (auto& h : heads_) caf::anon_send_exit(h, caf::exit_reason::user_shutdown);
  }

  testing::TempDir tmp_;
  ActorSystem system_{[] {
    ActorSystemOptions o;
    o.threads = 2;
    o.networking = false;
    return o;
  }()};
  std::vector<head_actor> heads_;
  std::mutex mutex_;
  std::vector<DriverLaunch> launches_;
};

TEST_F(HeadJobsTest, ACancelTheDriverIgnoresEndsInAKillAndACancelledJob) {
  const head_actor head = start("trap '' TERM; exec sleep 60");
  const std::string id = submit(head, "stubborn");
  const pid_t pid = driver_pid(id);
  EXPECT_EQ(cancel_job(system_, head, "head", id, kAsk), "starting");
  const JobStatus j = wait_until_finished(head, id);
  EXPECT_EQ(j.state, "cancelled");
  EXPECT_CONTAINS(j.message, "its driver did not stop within 500 ms and was killed");
  EXPECT_FALSE(process_runs(pid));
}

// The window before a driver installs its handler: SIGTERM ends it with status 143.
TEST_F(HeadJobsTest, ADriverEndedByTheCancelBeforeItReportedIsCancelledNotFailed) {
  const head_actor head = start("exec sleep 60");
  const std::string id = submit(head, "early");
  driver_pid(id);
  cancel_job(system_, head, "head", id, kAsk);
  const JobStatus j = wait_until_finished(head, id);
  EXPECT_EQ(j.state, "cancelled") << j.message;
  // A driver that exits by itself without reporting an end failed.
  const head_actor other = start("exit 3");
  const JobStatus failed = wait_until_finished(other, submit(other, "crash"));
  EXPECT_EQ(failed.state, "failed");
  EXPECT_CONTAINS(failed.message, "its driver exited with status 3");
}

// A cancelled or failed job resumes in its own folder with a driver told to resume; a running
// or done job does not, nor one neither the head nor its runs folder knows. A new head on the
// same runs folder resumes a job of the old one's.
TEST_F(HeadJobsTest, ACancelledOrFailedJobResumesInItsFolderARunningOrDoneOneDoesNot) {
  const head_actor head = start("exec sleep 60");
  const std::string id = submit(head, "again");
  driver_pid(id);
  EXPECT_THROW_CONTAINS(resume_job(system_, head, "head", id, kAsk), "job " + id + " is starting; only a cancelled or failed job resumes");
  cancel_job(system_, head, "head", id, kAsk);
  ASSERT_EQ(wait_until_finished(head, id).state, "cancelled");
  fs::remove(tmp_ / ("runs/" + id + "/pid"));
  EXPECT_EQ(resume_job(system_, head, "head", id, kAsk), id);
  driver_pid(id);  // the new driver runs
  const DriverLaunch first = launch(0), second = launch(1);
  EXPECT_FALSE(first.resume);
  EXPECT_TRUE(second.resume);
  EXPECT_EQ(second.output, first.output);
  EXPECT_EQ(second.job_file, first.job_file);
  EXPECT_NE(second.token, first.token) << "the old driver's token is not the new one's";
  const std::optional<JobStatus> j = job(head, id);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->state, "starting");
  EXPECT_THROW_CONTAINS(resume_job(system_, head, "head", "nope-1", kAsk), "no job 'nope-1' on this head");
  EXPECT_THROW_CONTAINS(resume_job(system_, head, "head", "../etc", kAsk), "no job '../etc' on this head");
  cancel_job(system_, head, "head", id, kAsk);
  ASSERT_EQ(wait_until_finished(head, id).state, "cancelled");

  // A done job has nothing left to resume.
  const head_actor done = start("exit 0");
  const std::string finished = submit(done, "finished");
  ASSERT_EQ(wait_until_finished(done, finished).state, "done");
  EXPECT_THROW_CONTAINS(resume_job(system_, done, "head", finished, kAsk), "job " + finished + " is done: nothing to resume");

  // A head started later on the same runs folder resumes the cancelled job from it.
  const head_actor later = start("exec sleep 60");
  EXPECT_EQ(resume_job(system_, later, "head", id, kAsk), id);
  const std::optional<JobStatus> again = job(later, id);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->output, first.output);
  cancel_job(system_, later, "head", id, kAsk);
  wait_until_finished(later, id);
}

// A cluster stop cancels the jobs and waits for their drivers before the nodes are told
// (stopping a node under a running job would cost it a restart); it refuses new jobs.
TEST_F(HeadJobsTest, AClusterStopEndsTheJobsDriversFirstAndRefusesNewJobs) {
  const head_actor head = start("trap '' TERM; exec sleep 60");  // ends only when killed
  const pid_t pid = driver_pid(submit(head, "stubborn"));
  caf::scoped_actor self{system_};
  self->monitor(head);
  auto stopping = self->request(head, kBound, stop_cluster_atom::value);
  // Refused while it stops (the reply to the stop comes once the drivers are gone).
  EXPECT_THROW_CONTAINS(submit(head, "late"), "the cluster is stopping");
  std::optional<int32_t> told;
  stopping.receive([&](int32_t n) { told = n; }, [&](caf::error& e) { ADD_FAILURE() << system_.get().render(e); });
  self->send(head, stop_ack_atom::value);  // as stop_cluster does: the head goes on it
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(kBound) >> [] {});
  EXPECT_TRUE(down) << "the head stops after its cluster";
  EXPECT_EQ(told, 0) << "no node to tell";
  EXPECT_FALSE(process_runs(pid)) << "its driver ended before the head did";
}

// A client that got the answer but died before acknowledging it does not keep the head:
// it goes at its own deadline (5 s). A second stop meanwhile is refused.
TEST_F(HeadJobsTest, AnAnsweredStopThatIsNeverAcknowledgedEndsTheHeadAnyway) {
  const head_actor head = start("exec sleep 60");
  caf::scoped_actor self{system_};
  self->monitor(head);
  std::optional<int32_t> told;
  self->request(head, kBound, stop_cluster_atom::value)
      .receive([&](int32_t n) { told = n; }, [&](caf::error& e) { ADD_FAILURE() << system_.get().render(e); });
  EXPECT_EQ(told, 0) << "no node to tell";
  std::string again = "answered";
  self->request(head, kBound, stop_cluster_atom::value)
      .receive([](int32_t) {}, [&](caf::error& e) { again = system_.get().render(e); });
  // Refused, or (on a very slow machine) the head is gone already.
  EXPECT_TRUE(again.find("already stopping") != std::string::npos ||
              again.find("request_receiver_down") != std::string::npos)
      << again;
  bool down = false;
  self->receive([&](caf::down_msg&) { down = true; }, caf::after(kBound) >> [] {});
  EXPECT_TRUE(down) << "the head stops without the acknowledgement too";
}

TEST_F(HeadJobsTest, ReportsNeedTheDriversTokenAndASaneStatus) {
  const head_actor head = start("exec sleep 60");
  const std::string id = submit(head, "guarded");
  driver_pid(id);
  const DriverLaunch d = launch(0);
  EXPECT_EQ(d.id, id);
  EXPECT_EQ(d.token.size(), 32u);
  JobStatus forged;
  forged.state = "done";
  EXPECT_THROW_CONTAINS(report_job(system_, head, "head", id, "0123", forged, kAsk),
                        "a report on job " + id + " without its driver's token");
  EXPECT_EQ(job(head, id)->state, "starting") << "a forged report changes nothing";
  forged.state = "exploded";
  EXPECT_THROW_CONTAINS(report_job(system_, head, "head", id, d.token, forged, kAsk), "unknown state 'exploded'");
  forged.state = "running";
  forged.message.assign(kMaxReportBytes + 1, 'x');
  EXPECT_THROW_CONTAINS(report_job(system_, head, "head", id, d.token, forged, kAsk), "bytes of text; at most");
  forged.message = "fine";
  EXPECT_TRUE(report_job(system_, head, "head", id, d.token, forged, kAsk));
  EXPECT_EQ(job(head, id)->state, "running");
  EXPECT_FALSE(report_job(system_, head, "head", "nope-1", d.token, forged, kAsk));
}

TEST_F(HeadJobsTest, SubmissionsWaitForTheAddressStopAtMaxJobsAndAFailedStartLeavesNoFolder) {
  const head_actor early = start("exec sleep 60", 1, false);
  EXPECT_THROW_CONTAINS(submit(early, "x"), "the head is still starting");
  tell_head_its_address(system_, early, "127.0.0.1:1", kAsk);
  EXPECT_THROW_CONTAINS(tell_head_its_address(system_, early, "127.0.0.1:2", kAsk), "already has an address");
  const std::string id = submit(early, "one");
  EXPECT_EQ(launch(0).head, "127.0.0.1:1");
  EXPECT_THROW_CONTAINS(submit(early, "two"), "the head already runs 1 jobs, its most");
  cancel_job(system_, early, "head", id, kAsk);
  EXPECT_EQ(wait_until_finished(early, id).state, "cancelled");

  const head_actor broken = start("");  // its driver command names no program
  EXPECT_THROW_CONTAINS(submit(broken, "never"), "cannot start job never-1");
  EXPECT_FALSE(fs::exists(tmp_ / "runs/never-1")) << "no folder of a job that never ran";
}

// Placement reads each node's available memory from its last heartbeat: the head takes off
// what jobs placed since then reserve there, until the node lists their actors, so a second
// job placed before the next heartbeat does not count on the same bytes.
TEST_F(HeadJobsTest, PlacedJobsReserveTheirMemoryUntilTheNodesHeartbeatListsThem) {
  const head_actor head = start("exec sleep 60");
  caf::scoped_actor self{system_};
  auto agent = system_.get().spawn([]() -> caf::behavior { return {[](stop_node_atom) {}}; });
  uint64_t member = 0;
  NodeInfo info{"node-a", "127.0.0.1:5001", "test", 2, int64_t{1} << 30};
  self->request(head, kAsk, join_atom::value, info, caf::actor_cast<caf::actor>(agent))
      .receive([&](uint64_t id, int64_t, int64_t) { member = id; }, [&](caf::error& e) { FAIL() << system_.get().render(e); });
  auto beat = [&](int64_t available, std::vector<std::string> jobs) {
    NodeLoad load;
    load.memory_available_bytes = available;
    load.actor_types.assign(jobs.size(), "partition");
    load.actor_jobs = std::move(jobs);
    self->request(head, kAsk, heartbeat_atom::value, member, load).receive([](bool) {}, [](caf::error&) {});
  };
  auto available = [&] { return cluster_status(system_, head, "head", kAsk).nodes.at(0).load.memory_available_bytes; };
  beat(1000, {});
  EXPECT_EQ(available(), 1000);
  auto place = [&](size_t launch_index, const std::string& owner, int64_t bytes) {
    const DriverLaunch d = launch(launch_index);
    JobStatus r;
    r.state = "running";
    r.owner = owner;
    r.partitions = {info.address};
    r.partition_bytes = {bytes};
    EXPECT_TRUE(report_job(system_, head, "head", d.id, d.token, r, kAsk));
  };
  const std::string first = submit(head, "first");
  place(0, "owner-1", 400);
  EXPECT_EQ(available(), 600) << "the first job's partition is reserved";
  const std::string second = submit(head, "second");
  place(1, "owner-2", 300);
  EXPECT_EQ(available(), 300) << "both jobs' partitions are reserved";
  beat(600, {"owner-1"});  // the node runs the first job's actors now; its figure has them
  EXPECT_EQ(available(), 300) << "only the second job's is still reserved";
  cancel_job(system_, head, "head", second, kAsk);
  wait_until_finished(head, second);
  EXPECT_EQ(available(), 600) << "an ended job reserves nothing";
  cancel_job(system_, head, "head", first, kAsk);
  wait_until_finished(head, first);
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
}

// A node's heartbeat from before a job ended still lists the actors that stop with the job:
// the status lists them on no node from the job's end on (a cancelled job runs nowhere),
// and a heartbeat after the end lists what the node still runs.
TEST_F(HeadJobsTest, AnEndedJobsActorsAreListedOnlyByAHeartbeatAfterItsEnd) {
  const head_actor head = start("exec sleep 60");
  caf::scoped_actor self{system_};
  auto agent = system_.get().spawn([]() -> caf::behavior { return {[](stop_node_atom) {}}; });
  uint64_t member = 0;
  NodeInfo info{"node-a", "127.0.0.1:5001", "test", 2, int64_t{1} << 30};
  self->request(head, kAsk, join_atom::value, info, caf::actor_cast<caf::actor>(agent))
      .receive([&](uint64_t id, int64_t, int64_t) { member = id; }, [&](caf::error& e) { FAIL() << system_.get().render(e); });
  auto beat = [&](std::vector<std::string> jobs) {
    NodeLoad load;
    load.actor_types.assign(jobs.size(), "trainer");
    load.actor_jobs = std::move(jobs);
    self->request(head, kAsk, heartbeat_atom::value, member, load).receive([](bool) {}, [](caf::error&) {});
  };
  auto listed = [&] { return cluster_status(system_, head, "head", kAsk).nodes.at(0).load.actor_jobs; };
  const std::string id = submit(head, "cancelled");
  driver_pid(id);
  const DriverLaunch d = launch(0);
  JobStatus r;
  r.state = "running";
  r.owner = "owner-1";
  r.partitions = {info.address};
  EXPECT_TRUE(report_job(system_, head, "head", d.id, d.token, r, kAsk));
  beat({"owner-1", "owner-1", "other"});
  EXPECT_EQ(job(head, id)->actors, 2);
  EXPECT_EQ(job(head, id)->nodes, std::vector<std::string>{"node-a"});

  cancel_job(system_, head, "head", id, kAsk);
  EXPECT_EQ(wait_until_finished(head, id).state, "cancelled");
  EXPECT_EQ(listed(), std::vector<std::string>{"other"}) << "the job's actors are no node's from its end on";
  EXPECT_EQ(job(head, id)->actors, 0);
  EXPECT_TRUE(job(head, id)->nodes.empty());
  beat({"owner-1", "other"});
  EXPECT_EQ(listed(), (std::vector<std::string>{"owner-1", "other"})) << "a heartbeat after the end is what runs";
  EXPECT_EQ(job(head, id)->actors, 1);
  beat({"other"});
  EXPECT_EQ(listed(), std::vector<std::string>{"other"});
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace partita::runtime
