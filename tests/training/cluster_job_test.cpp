// Jobs submitted to a cluster's head, in real processes on loopback: a head
// (`partita daemon --head --runs DIR`), nodes that join it, and `partita submit JOB
// --address HEAD`, `logs`, `status --json` and `stop JOB` as a user runs them.
//
// What a user relies on: the job runs where the head put it and ends with the weights of
// the same job run in one process (the parameter hash its driver logs, and its metrics);
// submit streams the log and can be left and re-attached; status shows the job; stop
// cancels it, logged as no error anywhere, and keeps its checkpoint; two jobs at once do
// not disturb each other; a job that cannot be placed is refused saying what is missing; a
// node killed mid-epoch (three times in one job) costs restarts, not results; a lost head
// fails its jobs with a message while the nodes keep running and join it again.
//
// Waits are bounded only to end a hang; what is checked is the state reached.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "actors/protocol.h"
#include "base/subprocess.h"
#include "daemon_process.h"
#include "job_runs.h"
#include "netns/netns_cluster.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "runtime/actor_system.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "runtime/cluster/status_json.h"
#include "runtime/runtime_test_util.h"
#include "test_paths.h"
#include "test_util.h"
#include "training/cluster_job.h"
#include "training/job_config.h"
#include "training/metrics_record.h"

namespace partita {
namespace {

using testing::kPartitaBinary;

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kProcessSeconds = 180;
constexpr auto kBound = std::chrono::seconds(120);

class ClusterJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(6000, 4), options, tmp_ / "parts");
  }

  // A job on the 2 partitions; `extra` adds fields under train: (YAML flow entries).
  std::string write_job(const std::string& name, int epochs, const std::string& train_extra = "",
                        int partitions_per_node = 1) {
    testing::write_text(tmp_ / name, "data: {partitions: " + tmp_ / "parts" +
                                         "}\n"
                                         "model: {kind: graphsage, hidden: 32, layers: 2}\n"
                                         "sampling: {fanouts: [10, 10], batch_size: 10}\n"
                                         "train: {epochs: " +
                                         std::to_string(epochs) + train_extra +
                                         "}\n"
                                         "cluster: {partitions_per_node: " +
                                         std::to_string(partitions_per_node) +
                                         "}\n"
                                         "output: " +
                                         tmp_ / "unused" + "\n");
    return tmp_ / name;
  }

  // The same job run in this process: the reference a cluster run must match.
  JobReport reference(const std::string& job_file) {
    JobConfig job = load_job(job_file);
    job.output = tmp_ / ("reference-" + fs::path(job_file).stem().string());
    return testing::run_in_process(job);
  }

  testing::Daemon start(const std::vector<std::string>& args, const std::string& listen = "127.0.0.1:0") {
    try {
      return runtime::start_daemon_child(kPartitaBinary, args, {"--log-level", "info"}, std::chrono::seconds(30), listen);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      return {};
    }
  }
  testing::Daemon start_head(const std::string& listen = "127.0.0.1:0") {
    return start({"--head", "--runs", tmp_ / "runs"}, listen);
  }
  // A node with a staging cache of its own (the default, partita-cache in the working
  // folder, would be shared by the tests that run at once).
  testing::Daemon start_node(const std::string& head, const std::string& name) {
    return start({"--join", head, "--name", name, "--cache", tmp_ / ("cache-" + name)});
  }

  // The status as `partita status --json` prints it, asked from this process (a CLI child
  // per poll would take longer than the steps the recovery test waits for); null when the
  // head does not answer.
  json status(const std::string& head) {
    try {
      if (!client_) {
        runtime::ActorSystemOptions options;
        options.threads = 2;
        options.networking = true;
        client_ = std::make_unique<runtime::ActorSystem>(options);
      }
      if (head != head_address_ || !head_) {
        head_ = runtime::connect_head(client_->get(), runtime::parse_endpoint(head, "head"), std::chrono::seconds(10));
        head_address_ = head;
      }
      return json::parse(runtime::status_json(
          runtime::cluster_status(client_->get(), head_, head, std::chrono::seconds(10)), head));
    } catch (const Error&) {
      head_ = nullptr;  // connect again next time: the head may have restarted
      return json();
    }
  }
  json wait_for(const std::string& head, const std::function<bool(const json&)>& done) {
    const auto until = std::chrono::steady_clock::now() + kBound;
    json s = status(head);
    while (!(s.is_object() && done(s)) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      s = status(head);
    }
    return s;
  }
  static json job_of(const json& s, const std::string& id) {
    if (s.is_object()) {
      for (const auto& j : s["jobs"]) {
        if (j["id"] == id) return j;
      }
    }
    return json();
  }
  // The job's epoch; -1 when the status has no such job (a predicate on it then stays false
  // and the assertion after the wait shows the status).
  static int epoch_of(const json& s, const std::string& id) {
    const json j = job_of(s, id);
    return j.is_object() && j.contains("epoch") && j["epoch"].is_number() ? j["epoch"].get<int>() : -1;
  }
  // The pid of a job's driver, from the first line of its log; 0 if not there.
  pid_t driver_pid(const std::string& id) {
    std::smatch m;
    const std::string log = testing::read_text(run_dir(id) + "/driver.log");
    return std::regex_search(log, m, std::regex("driver \\(pid (\\d+)\\)")) ? static_cast<pid_t>(std::stol(m[1])) : 0;
  }
  static size_t alive(const json& s) {
    size_t n = 0;
    if (s.is_object()) {
      for (const auto& node : s["nodes"]) n += node["state"] == "alive" ? 1 : 0;
    }
    return n;
  }
  // A status in which every live node runs no actor, each by a heartbeat the head took
  // after this call (the head lists an ended job's actors on no node, from its end until a
  // node's next heartbeat says what still runs); the last status asked when none comes.
  json wait_until_no_actors(const std::string& head) {
    const auto since = std::chrono::steady_clock::now();
    const auto until = since + kBound;
    json s;
    for (;;) {
      const auto asked = std::chrono::steady_clock::now();
      s = status(head);
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(asked - since).count();
      bool heard = s.is_object();
      if (heard) {
        for (const auto& node : s["nodes"]) {
          if (node["state"] == "alive" && node["ms_since_heartbeat"].get<int64_t>() >= waited) heard = false;
        }
      }
      if ((heard && actors_on_live_nodes(s) == 0) || asked >= until) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  static size_t actors_on_live_nodes(const json& s) {
    size_t n = 0;
    for (const auto& node : s["nodes"]) {
      if (node["state"] != "alive") continue;
      for (const auto& [type, count] : node["actors"].items()) n += count.get<size_t>();
    }
    return n;
  }

  // "job ID submitted to HEAD" -> ID.
  static std::string submitted_id(const std::string& out) {
    std::smatch m;
    if (!std::regex_search(out, m, std::regex("job (\\S+) submitted to"))) return "";
    return m[1];
  }
  // The parameter hash the job's driver logged at its end; 0 if none.
  static uint64_t logged_hash(const std::string& log) {
    std::smatch m;
    if (!std::regex_search(log, m, std::regex("parameter hash (\\d+)"))) return 0;
    return std::stoull(m[1]);
  }
  std::string run_dir(const std::string& id) { return tmp_ / ("runs/" + id); }
  // The parts a node's staging cache holds in its staged folders.
  static std::set<std::string> parts_in_cache(const std::string& cache) {
    std::set<std::string> parts;
    std::error_code ec;
    for (const auto& folder : fs::directory_iterator(cache + "/folders", ec)) {
      for (const auto& entry : fs::directory_iterator(folder.path(), ec)) {
        const std::string name = entry.path().filename().string();
        if (std::regex_match(name, std::regex("part\\d+"))) parts.insert(name);
      }
    }
    return parts;
  }
  // The bytes each node's staging copied, from the driver's "staged N of M byte(s)" lines.
  static std::vector<uint64_t> staged_bytes(const std::string& log) {
    std::vector<uint64_t> bytes;
    const std::regex line("staged (\\d+) of (\\d+) byte\\(s\\)");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
      bytes.push_back(std::stoull((*it)[1]));
    }
    return bytes;
  }

  // Every epoch's metrics equal: a recovered or remote run against the reference.
  void expect_same_metrics(const std::string& id, const JobReport& expected) {
    const std::vector<EpochMetrics> got = read_metrics_file(run_dir(id) + "/metrics.jsonl");
    ASSERT_EQ(got.size(), expected.epochs.size());
    for (size_t e = 0; e < got.size(); ++e) {
      EXPECT_EQ(got[e].steps, expected.epochs[e].steps);
      EXPECT_DOUBLE_EQ(got[e].train_loss, expected.epochs[e].train_loss) << "epoch " << e + 1;
      EXPECT_DOUBLE_EQ(got[e].train_accuracy, expected.epochs[e].train_accuracy) << "epoch " << e + 1;
      EXPECT_DOUBLE_EQ(got[e].val_accuracy, expected.epochs[e].val_accuracy) << "epoch " << e + 1;
      EXPECT_DOUBLE_EQ(got[e].test_accuracy, expected.epochs[e].test_accuracy) << "epoch " << e + 1;
    }
  }

  testing::TempDir tmp_;
  std::unique_ptr<runtime::ActorSystem> client_;
  runtime::head_actor head_;
  std::string head_address_;
};

TEST_F(ClusterJobTest, TheHeadRunsASubmittedJobAndStatusAndLogsShowIt) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  testing::Daemon b = start_node(head.address, "node-b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  const std::string job = write_job("small.yaml", 2);

  ProcessResult r = run_process({kPartitaBinary, "submit", job, "--address", head.address}, kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = submitted_id(r.out);
  ASSERT_EQ(id, "small-1") << r.out;
  EXPECT_CONTAINS(r.out, "epoch 2/2") << "submit streams the job's log";
  EXPECT_CONTAINS(r.out, "job small-1 done; results in " + run_dir(id));

  // Its output is on the head's side, and its weights are those of the job in one process.
  const JobReport expected = reference(job);
  EXPECT_EQ(logged_hash(r.out), expected.parameter_hash);
  expect_same_metrics(id, expected);
  EXPECT_TRUE(fs::exists(run_dir(id) + "/checkpoint.json"));

  const json s = status(head.address);
  const json j = job_of(s, id);
  ASSERT_TRUE(j.is_object()) << s.dump(2);
  EXPECT_EQ(j["state"], "done");
  EXPECT_EQ(j["epoch"], 2);
  EXPECT_EQ(j["epochs"], 2);
  EXPECT_EQ(j["restarts"], 0);
  EXPECT_GT(j["steps"].get<int64_t>(), 0);
  ASSERT_EQ(j["partitions"].size(), 2u);
  EXPECT_NE(j["partitions"][0], j["partitions"][1]) << "one partition per node (cluster.partitions_per_node: 1)";
  // The nodes report what they run at their next heartbeat.
  const json later = wait_until_no_actors(head.address);
  EXPECT_EQ(actors_on_live_nodes(later), 0u) << "a finished job leaves no actor: " << later.dump(2);
  for (testing::Daemon* d : {&a, &b}) {
    // Its actors stopped as it ended: no warning about a partition that shut down.
    const std::string log = d->process->output_so_far() + d->process->errors_so_far();
    EXPECT_EQ(log.find("[warning] sampler"), std::string::npos) << log;
  }

  ProcessResult logs = run_process({kPartitaBinary, "logs", id, "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_CONTAINS(logs.out, "epoch 2/2");
  ProcessResult table = run_process({kPartitaBinary, "status", "--address", head.address}, kProcessSeconds);
  EXPECT_CONTAINS(table.out, "small-1  done  epoch 2/2");
  ProcessResult unknown = run_process({kPartitaBinary, "logs", "nope-1", "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_CONTAINS(unknown.err, "no job 'nope-1' on this head");
}

// Ctrl-C leaves the job running; logs --follow attaches again; stop cancels it everywhere.
TEST_F(ClusterJobTest, SubmitDetachesOnCtrlCLogsReattachesStopCancels) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  testing::Daemon b = start_node(head.address, "node-b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  const std::string job = write_job("long.yaml", 200, ", checkpoint_every_steps: 10");

  ChildProcess submit({kPartitaBinary, "submit", job, "--address", head.address});
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (submit.output_so_far().find("epoch 1/200") == std::string::npos && submit.running() &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string id = submitted_id(submit.output_so_far());
  ASSERT_EQ(id, "long-1") << submit.output_so_far() << submit.errors_so_far();
  submit.signal(SIGINT);
  ProcessResult left = submit.wait(kProcessSeconds);
  EXPECT_EQ(left.exit_code, 0) << left.err;
  EXPECT_CONTAINS(left.out, "detached from job long-1 (it goes on)");
  // A node's list is as old as its last heartbeat (1 s): one sent while the job's data
  // was staged still shows the stager, so wait for a report that has only the job.
  auto lists_only_the_job = [&](const json& s) {
    for (const auto& node : s["nodes"]) {
      if (node["state"] == "alive" && node["jobs"] != json::array({id})) return false;
    }
    return true;
  };
  // Heartbeats carry the actor counts and the head's records the epoch: both must be of
  // the running job (a job restarting from a checkpoint has a moment with no actors).
  json s = wait_for(head.address, [&](const json& s) {
    return epoch_of(s, id) >= 2 && lists_only_the_job(s) && actors_on_live_nodes(s) > 0;
  });
  EXPECT_EQ(job_of(s, id)["state"], "running") << s.dump(2);
  EXPECT_GT(actors_on_live_nodes(s), 0u) << "the job goes on after the detach";
  for (const auto& node : s["nodes"]) {
    if (node["state"] == "alive") {
      EXPECT_EQ(node["jobs"], json::array({id})) << "each node lists the job: " << s.dump(2);
    }
  }
  ProcessResult table = run_process({kPartitaBinary, "status", "--address", head.address}, kProcessSeconds);
  EXPECT_CONTAINS(table.out, "(jobs long-1)");
  EXPECT_CONTAINS(table.out, "long-1  running  epoch ");

  // Re-attached: the log from its start, still growing.
  ChildProcess follow({kPartitaBinary, "logs", id, "--follow", "--address", head.address});
  ProcessResult stop = run_process({kPartitaBinary, "stop", id, "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_CONTAINS(stop.out, "job long-1 cancelled");
  ProcessResult followed = follow.wait(kProcessSeconds);
  EXPECT_EQ(followed.exit_code, 1) << "a followed job that was cancelled is not a success";
  EXPECT_CONTAINS(followed.out, "epoch 1/200");
  EXPECT_CONTAINS(followed.err, "job long-1 cancelled");
  // Each finished epoch's summary line once (the poll asks from where the last chunk ended).
  int last = 0;
  for (int e = 1; e <= 200; ++e) {
    const std::regex line("epoch " + std::to_string(e) + "/200: [0-9.]+s, ");
    const auto n = std::distance(std::sregex_iterator(followed.out.begin(), followed.out.end(), line),
                                 std::sregex_iterator());
    if (n == 0) break;
    EXPECT_EQ(n, 1) << "epoch " << e << " followed " << n << " times:\n" << followed.out;
    last = e;
  }
  EXPECT_GE(last, 1) << followed.out;
  // The cancel is no error, neither in the followed log nor in the daemons' own.
  EXPECT_EQ(followed.out.find("[error]"), std::string::npos) << followed.out;
  for (testing::Daemon* d : {&head, &a, &b}) {
    const std::string log = d->process->output_so_far() + d->process->errors_so_far();
    EXPECT_EQ(log.find("[error]"), std::string::npos) << log;
  }
  s = wait_until_no_actors(head.address);
  EXPECT_EQ(actors_on_live_nodes(s), 0u) << "its actors stop everywhere: " << s.dump(2);
  EXPECT_TRUE(fs::exists(run_dir(id) + "/checkpoint.json")) << "its output keeps the last checkpoint";
}

// The driver runs in a child process of the head: when it dies (a crash, an OOM kill) the
// head stays, marks the job failed with its exit status, and the nodes stop its actors.
TEST_F(ClusterJobTest, ADriverThatDiesFailsItsJobNotTheHead) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  testing::Daemon b = start_node(head.address, "node-b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  ProcessResult r0 = run_process(
      {kPartitaBinary, "submit", write_job("crash.yaml", 200), "--address", head.address, "--detach"}, kProcessSeconds);
  const std::string id = submitted_id(r0.out);
  ASSERT_EQ(id, "crash-1") << r0.out << r0.err;
  json s = wait_for(head.address, [&](const json& s) {
    return epoch_of(s, id) >= 1 && actors_on_live_nodes(s) > 0;
  });
  ASSERT_EQ(job_of(s, id)["state"], "running") << s.dump(2);
  std::smatch m;
  const std::string log = testing::read_text(run_dir(id) + "/driver.log");
  ASSERT_TRUE(std::regex_search(log, m, std::regex("driver \\(pid (\\d+)\\)"))) << log;
  ASSERT_EQ(::kill(static_cast<pid_t>(std::stol(m[1])), SIGKILL), 0);

  s = wait_for(head.address, [&](const json& s) { return job_of(s, id)["state"] == "failed"; });
  EXPECT_EQ(job_of(s, id)["state"], "failed") << s.dump(2);
  EXPECT_CONTAINS(job_of(s, id)["message"].get<std::string>(), "its driver exited with status 137");
  s = wait_until_no_actors(head.address);
  EXPECT_EQ(actors_on_live_nodes(s), 0u) << "the nodes stop the actors of a driver that is gone: " << s.dump(2);
  EXPECT_TRUE(head.process->running());
  EXPECT_EQ(alive(s), 2u);
}

// Two jobs at once share the nodes (a partition of each on each node) and end as each would
// alone: separate actors, ports and output folders.
TEST_F(ClusterJobTest, TwoJobsAtOnceDoNotInterfere) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  testing::Daemon b = start_node(head.address, "node-b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  const std::string first = write_job("first.yaml", 3);
  const std::string second = write_job("second.yaml", 2, ", learning_rate: 0.02, seed: 7");
  ChildProcess one({kPartitaBinary, "submit", first, "--address", head.address});
  ChildProcess two({kPartitaBinary, "submit", second, "--address", head.address});
  ProcessResult r1 = one.wait(kProcessSeconds);
  ProcessResult r2 = two.wait(kProcessSeconds);
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  ASSERT_EQ(r2.exit_code, 0) << r2.out << r2.err;
  EXPECT_EQ(submitted_id(r1.out), "first-1");
  EXPECT_EQ(submitted_id(r2.out), "second-1");
  const JobReport e1 = reference(first);
  const JobReport e2 = reference(second);
  EXPECT_NE(e1.parameter_hash, e2.parameter_hash);
  EXPECT_EQ(logged_hash(r1.out), e1.parameter_hash);
  EXPECT_EQ(logged_hash(r2.out), e2.parameter_hash);
  expect_same_metrics("first-1", e1);
  expect_same_metrics("second-1", e2);
}

TEST_F(ClusterJobTest, AJobThatCannotBePlacedIsRefusedNamingWhatIsMissingAndFitsWhenAllowedTwoPerNode) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 1; })), 1u);
  ProcessResult r = run_process({kPartitaBinary, "submit", write_job("big.yaml", 1), "--address", head.address},
                                kProcessSeconds);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "job big-1 failed: the job has 2 partition(s), at most 1 per node "
                         "(cluster.partitions_per_node), and the cluster has 1 live node(s): it needs 1 more node(s)");
  // The same job asking for two partitions per node runs on the one node.
  r = run_process({kPartitaBinary, "submit", write_job("both.yaml", 1, "", 2), "--address", head.address},
                  kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json both = job_of(status(head.address), "both-1");
  ASSERT_EQ(both["partitions"].size(), 2u) << both.dump(2);
  EXPECT_EQ(both["partitions"][0], a.address);
  EXPECT_EQ(both["partitions"][1], a.address);
  // Bad submissions are named before anything is sent.
  r = run_process({kPartitaBinary, "submit", write_job("x.yaml", 1), "--address", head.address, "--daemons",
                   a.address},
                  kProcessSeconds);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "not both");
  r = run_process({kPartitaBinary, "submit", write_job("x.yaml", 1)}, kProcessSeconds);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "submit needs either --address HEAD");
  r = run_process({kPartitaBinary, "stop", "nope-1", "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_CONTAINS(r.err, "no job 'nope-1' on this head");
  EXPECT_TRUE(a.process->running()) << "stopping an unknown job stops nothing";
}

// kill -9 of a node during the job, five times in a row: each time the driver re-places the
// lost node's partition (on the other nodes, or the node started in its place) and resumes
// from the last checkpoint (every 5 steps); the job ends as the uninterrupted one.
TEST_F(ClusterJobTest, ANodeKilledFiveTimesDuringAJobCostsRestartsNotResults) {
  constexpr int kKills = 5;
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  std::vector<testing::Daemon> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(start_node(head.address, "node-" + std::to_string(i)));
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 3; })), 3u);
  // Epochs enough for the kills and recoveries (some 4 epochs each) with room to spare: the
  // job must still run at the fifth kill.
  const std::string job = write_job("recover.yaml", 50, ", checkpoint_every_steps: 5, max_restarts: " + std::to_string(kKills), 2);
  ProcessResult r0 = run_process({kPartitaBinary, "submit", job, "--address", head.address, "--detach"}, kProcessSeconds);
  const std::string id = submitted_id(r0.out);
  ASSERT_EQ(id, "recover-1") << r0.out << r0.err;

  int next = 3;
  int resumed = 0;  // the epoch the last attempt started in
  for (int kill = 1; kill <= kKills; ++kill) {
    // Some epochs after this attempt started (that the resumed weights are exact is checked
    // by SmallJobTest.AJobCancelledMidEpochResumesFromItsStepCheckpoint).
    json s = wait_for(head.address, [&](const json& s) {
      const json j = job_of(s, id);
      if (!j.is_object()) return false;
      if (j["state"] == "done" || j["state"] == "failed" || j["state"] == "cancelled") return true;
      return j["state"] == "running" && j["restarts"] == kill - 1 && j["epoch"].get<int>() >= resumed + 2 &&
             j["partitions"].size() == 2;
    });
    json j = job_of(s, id);
    ASSERT_EQ(j["state"], "running") << s.dump(2);
    resumed = j["epoch"].get<int>();
    // Half an epoch's training on (by its rate so far): past the epoch's first checkpoints
    // (every 5 steps), so the attempt after the kill resumes inside that epoch. (Step
    // reports are too sparse in the status to wait for a step: epochs here are short.)
    const double rate = j["steps_per_second"].get<double>();
    if (rate > 0) std::this_thread::sleep_for(std::chrono::duration<double>(0.5 * j["steps"].get<double>() / rate));
    const std::string victim = j["partitions"][0];
    bool killed = false;
    for (auto& n : nodes) {
      if (n.address == victim && n.process && n.process->running()) {
        n.process->kill();
        killed = true;
      }
    }
    ASSERT_TRUE(killed) << "no running node at " << victim;
    nodes.push_back(start_node(head.address, "node-" + std::to_string(next++)));  // a node joins meanwhile
    s = wait_for(head.address, [&](const json& s) { return job_of(s, id)["restarts"] == kill; });
    ASSERT_EQ(job_of(s, id)["restarts"], kill) << s.dump(2);
  }
  const json s = wait_for(head.address, [&](const json& s) { return job_of(s, id)["state"] != "running" &&
                                                                    job_of(s, id)["state"] != "recovering"; });
  ASSERT_EQ(job_of(s, id)["state"], "done") << s.dump(2);
  EXPECT_EQ(job_of(s, id)["restarts"], kKills);
  const std::string log = testing::read_text(run_dir(id) + "/driver.log");
  EXPECT_CONTAINS(log, "restart 5 of at most 5");
  EXPECT_TRUE(std::regex_search(log, std::regex("resuming epoch \\d+ after step \\d+ from"))) << "resumed inside an epoch: " << log;
  const JobReport expected = reference(job);
  EXPECT_EQ(logged_hash(log), expected.parameter_hash) << log;
  expect_same_metrics(id, expected);
}

// kill -STOP: the node's process is frozen, its socket open. Its connections fall silent and
// are dropped at the heartbeat timeout; the job recovers on the two other nodes.
TEST_F(ClusterJobTest, AFrozenNodeIsDetectedAndTheJobRecoversWithoutIt) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  std::vector<testing::Daemon> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(start_node(head.address, "node-" + std::to_string(i)));
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 3; })), 3u);
  // The node is frozen in epoch 2 or 3: the job, stalled until the heartbeat timeout, still runs.
  const std::string job = write_job("frozen.yaml", 30, ", checkpoint_every_steps: 5, max_restarts: 1");
  ProcessResult r0 = run_process({kPartitaBinary, "submit", job, "--address", head.address, "--detach"}, kProcessSeconds);
  const std::string id = submitted_id(r0.out);
  ASSERT_EQ(id, "frozen-1") << r0.out << r0.err;
  json s = wait_for(head.address, [&](const json& s) {
    const json j = job_of(s, id);
    return j.is_object() && j["state"] == "running" && j["epoch"].get<int>() >= 2 && j["partitions"].size() == 2;
  });
  ASSERT_EQ(job_of(s, id)["state"], "running") << s.dump(2);
  const std::string victim = job_of(s, id)["partitions"][1];
  testing::Daemon* frozen = nullptr;
  for (auto& n : nodes) {
    if (n.address == victim) frozen = &n;
  }
  ASSERT_NE(frozen, nullptr);
  frozen->process->signal(SIGSTOP);
  s = wait_for(head.address, [&](const json& s) { return job_of(s, id)["restarts"] == 1; });
  EXPECT_EQ(job_of(s, id)["restarts"], 1) << s.dump(2);
  s = wait_for(head.address, [&](const json& s) {
    return job_of(s, id)["state"] != "running" && job_of(s, id)["state"] != "recovering";
  });
  frozen->process->signal(SIGCONT);
  ASSERT_EQ(job_of(s, id)["state"], "done") << s.dump(2);
  // A named copy: a range-for over a part of job_of's temporary reads it after it is gone.
  const json done = job_of(s, id);
  for (const auto& where : done["partitions"]) EXPECT_NE(where, victim) << "placed again without it";
  const JobReport expected = reference(job);
  EXPECT_EQ(logged_hash(testing::read_text(run_dir(id) + "/driver.log")), expected.parameter_hash);
  expect_same_metrics(id, expected);
}

// A node the head still lists but that is gone (its port refuses): the attempt that placed a
// partition there cannot connect, and the next placement leaves it out, so the job runs on
// the nodes that are there instead of retrying the dead one until the placement wait ends.
TEST_F(ClusterJobTest, ANodeThatCannotBeReachedIsLeftOutOfTheNextPlacement) {
  testing::RefusingPort dead;
  testing::Daemon a = testing::start_daemon({"--name", "node-a"});
  testing::Daemon b = testing::start_daemon({"--name", "node-b"});
  ASSERT_FALSE(a.address.empty());
  ASSERT_FALSE(b.address.empty());
  const std::string dead_address = "127.0.0.1:" + std::to_string(dead.port());
  JobConfig job = load_job(write_job("unreachable.yaml", 1));
  job.output = tmp_ / "unreachable-out";
  ClusterJobOptions options;
  options.system.threads = 2;
  add_protocol_types(options.system);
  options.run.overwrite = true;
  // The dead node offers the most memory: the first placement puts a partition there.
  options.live_nodes = [&] {
    return std::vector<NodeOffer>{{"dead", dead_address, 1, int64_t{1} << 40, 2, {}},
                                  {"node-a", a.address, 2, int64_t{1} << 30, 2, {}},
                                  {"node-b", b.address, 3, int64_t{1} << 30, 2, {}}};
  };
  options.placement_wait = std::chrono::seconds(5);
  options.poll = std::chrono::milliseconds(50);
  std::vector<std::vector<std::string>> placements;
  options.on_placed = [&](const std::vector<std::string>& where, const std::vector<int64_t>&) { placements.push_back(where); };
  const JobReport report = run_cluster_job(job, options);
  EXPECT_EQ(report.epochs.size(), 1u);
  ASSERT_EQ(placements.size(), 2u);
  EXPECT_EQ(placements[0][0], dead_address);
  for (const auto& where : placements[1]) EXPECT_NE(where, dead_address) << "placed again on the dead node";
}

// `partita stop` of a cluster with a running job: the head cancels the job and waits for
// its driver before it stops the nodes, so the job ends cancelled, not as a lost node
// costing a restart.
TEST_F(ClusterJobTest, StoppingAClusterCancelsItsRunningJobFirst) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  testing::Daemon b = start_node(head.address, "node-b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  ProcessResult r0 = run_process({kPartitaBinary, "submit", write_job("busy.yaml", 200, ", max_restarts: 2"),
                                  "--address", head.address, "--detach"},
                                 kProcessSeconds);
  const std::string id = submitted_id(r0.out);
  ASSERT_EQ(id, "busy-1") << r0.out << r0.err;
  json s = wait_for(head.address, [&](const json& s) { return epoch_of(s, id) >= 1; });
  ASSERT_EQ(job_of(s, id)["state"], "running") << s.dump(2);
  const pid_t pid = driver_pid(id);
  ASSERT_GT(pid, 0);

  ProcessResult stop = run_process({kPartitaBinary, "down", "--yes", "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_CONTAINS(stop.out, "2 node(s) and the head");
  EXPECT_FALSE(testing::process_runs(pid)) << "the driver ended before the head";
  const ProcessResult ended = head.process->wait(kProcessSeconds);
  EXPECT_CONTAINS(ended.err, "head: job busy-1 ended: cancelled");
  const std::string log = testing::read_text(run_dir(id) + "/driver.log");
  EXPECT_EQ(log.find("restart 1"), std::string::npos) << "a stop is not a lost node: " << log;
  EXPECT_CONTAINS(log, "job cancelled in epoch");
  EXPECT_EQ(a.process->wait(kProcessSeconds).exit_code, 0);
  EXPECT_EQ(b.process->wait(kProcessSeconds).exit_code, 0);
}

// The head killed: the job it drove fails with a message and stops everywhere; the nodes
// keep running and join the head started again at its address.
TEST_F(ClusterJobTest, ALostHeadFailsItsJobsCleanlyAndNodesRejoinItsSuccessor) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "node-a");
  testing::Daemon b = start_node(head.address, "node-b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  ProcessResult r0 = run_process(
      {kPartitaBinary, "submit", write_job("orphan.yaml", 200), "--address", head.address, "--detach"}, kProcessSeconds);
  const std::string id = submitted_id(r0.out);
  ASSERT_EQ(id, "orphan-1") << r0.out << r0.err;
  json s = wait_for(head.address, [&](const json& s) { return epoch_of(s, id) >= 1; });
  ASSERT_EQ(job_of(s, id)["state"], "running") << s.dump(2);
  const pid_t pid = driver_pid(id);
  ASSERT_GT(pid, 0);
  const auto until_follows = std::chrono::steady_clock::now() + kBound;
  struct KillOnExit {  // whatever the test's outcome, no driver outlives it
    pid_t pid;
    ~KillOnExit() {
      if (testing::process_runs(pid)) ::kill(pid, SIGKILL);
    }
  } kill_on_exit{pid};
  // A user following the job's log from another process.
  ChildProcess follow({kPartitaBinary, "logs", id, "--follow", "--address", head.address});
  while (follow.output_so_far().find("epoch") == std::string::npos && std::chrono::steady_clock::now() < until_follows) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  head.process->kill();
  head.process->wait(kProcessSeconds);
  // The follower is told the head was lost (it said "request_timeout" after 10 s).
  const ProcessResult followed = follow.wait(kProcessSeconds);
  EXPECT_NE(followed.exit_code, 0);
  EXPECT_CONTAINS(followed.err, "the head at " + head.address + " was lost");
  // The driver (the head's child, orphaned now) fails the job with a message and exits.
  const std::string log_file = run_dir(id) + "/driver.log";
  const auto until = std::chrono::steady_clock::now() + kBound;
  while (testing::read_text(log_file).find("partita: error:") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_CONTAINS(testing::read_text(log_file), "partita: error: the head at " + head.address + " was lost; the job stops");
  // The driver, orphaned, has exited (it dies with its head's process).
  while (testing::process_runs(pid) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(testing::process_runs(pid)) << "the driver of a killed head still runs";
  EXPECT_TRUE(a.process->running() && b.process->running()) << "nodes outlive their head";

  // The head again at its old port: free since the kill, unless another process took it
  // meanwhile (SO_REUSEADDR lets it past the old connections' TIME_WAIT); a few tries.
  testing::Daemon again;
  for (int attempt = 0; attempt < 5 && again.address.empty(); ++attempt) {
    try {
      again = runtime::start_daemon_child(kPartitaBinary, {"--head", "--runs", tmp_ / "runs"}, {"--log-level", "info"},
                                          std::chrono::seconds(30), head.address);
    } catch (const Error& e) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (attempt == 4) ADD_FAILURE() << "the head cannot listen at its old address again: " << e.what();
    }
  }
  ASSERT_EQ(again.address, head.address);
  s = wait_for(head.address, [](const json& s) { return alive(s) == 2 && actors_on_live_nodes(s) == 0; });
  EXPECT_EQ(alive(s), 2u) << "the nodes join the restarted head: " << s.dump(2);
  EXPECT_EQ(actors_on_live_nodes(s), 0u) << "nothing of the failed job runs on them: " << s.dump(2);
}

// A job that generates its graph: its driver generates and partitions it where the driver
// runs (the head's machine), then places and stages it; the job ends as it does in one process.
TEST_F(ClusterJobTest, AJobThatGeneratesItsDataIsPreparedByItsDriver) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "a");
  testing::Daemon b = start_node(head.address, "b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  testing::write_text(tmp_ / "generated.yaml",
                      "data:\n"
                      "  generate: {kind: sbm, nodes: 3000, classes: 4, features: 16, avg_degree: 8, seed: 3}\n"
                      "  num_partitions: 2\n"
                      "model: {kind: graphsage, hidden: 16, layers: 2}\n"
                      "sampling: {fanouts: [5, 5], batch_size: 32}\n"
                      "train: {epochs: 2}\n"
                      "output: submitted-output\n");
  const std::string job = tmp_ / "generated.yaml";
  ProcessResult r = run_process({kPartitaBinary, "submit", job, "--address", head.address}, kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = submitted_id(r.out);
  ASSERT_EQ(id, "generated-1") << r.out;
  EXPECT_TRUE(fs::exists(run_dir(id) + "/partitions/META.json")) << "prepared in the job's output, on the driver's side";
  EXPECT_FALSE(fs::exists(tmp_ / "submitted-output")) << "nothing on the submitting side";
  const JobReport expected = reference(job);
  EXPECT_EQ(logged_hash(r.out), expected.parameter_hash) << r.out;
  expect_same_metrics(id, expected);
}

// Data staging: each node gets, in its own cache, only the parts it hosts, checked; the job
// trains on the copies and ends as in one process; a second job on the same data copies
// nothing; a damaged cached file is noticed, named and fetched again.
TEST_F(ClusterJobTest, NodesTrainOnStagedCopiesOfOnlyTheirPartsCachedAcrossJobs) {
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  testing::Daemon a = start_node(head.address, "a");
  testing::Daemon b = start_node(head.address, "b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  const std::string job = write_job("staged.yaml", 2);
  const JobReport expected = reference(job);
  const std::map<std::string, std::string> cache_of{{a.address, tmp_ / "cache-a"}, {b.address, tmp_ / "cache-b"}};


  ProcessResult r = run_process({kPartitaBinary, "submit", job, "--address", head.address}, kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = submitted_id(r.out);
  EXPECT_EQ(logged_hash(r.out), expected.parameter_hash) << r.out;
  expect_same_metrics(id, expected);
  json s = status(head.address);
  const json placed = job_of(s, id)["partitions"];
  ASSERT_EQ(placed.size(), 2u) << s.dump(2);
  for (int p = 0; p < 2; ++p) {
    const std::string cache = cache_of.at(placed[p].get<std::string>());
    EXPECT_EQ(parts_in_cache(cache), std::set<std::string>{"part" + std::to_string(p)})
        << "partition " << p << " on " << placed[p] << ": its part and no other";
    for (const std::string file : {"META.json", "partition_book.bin"}) {
      bool found = false;
      for (const auto& folder : fs::directory_iterator(cache + "/folders")) found |= fs::exists(folder.path() / file);
      EXPECT_TRUE(found) << file << " staged to " << cache;
    }
  }
  std::vector<uint64_t> bytes = staged_bytes(r.out);
  ASSERT_EQ(bytes.size(), 2u) << r.out;
  EXPECT_GT(bytes[0], 0u);
  EXPECT_GT(bytes[1], 0u);

  // The same data again, once the nodes report what they cached (placement prefers them):
  // nothing copied; the nodes' actors open the cached copies.
  s = wait_for(head.address, [](const json& s) {
    size_t reporting = 0;
    for (const auto& node : s["nodes"]) reporting += node["state"] == "alive" && node["cached_units"].size() >= 2;
    return reporting == 2;
  });
  ChildProcess second({kPartitaBinary, "submit", write_job("again.yaml", 200, ", checkpoint_every_steps: 50"),
                       "--address", head.address});
  s = wait_for(head.address, [&](const json& s) { return epoch_of(s, "again-1") >= 1 && actors_on_live_nodes(s) > 0; });
  ASSERT_EQ(job_of(s, "again-1")["state"], "running") << s.dump(2) << second.output_so_far() << second.errors_so_far();
  // The driver's log reaches `submit` as it follows it, after the head's status may already
  // show the epoch: wait for both nodes' lines (a state, not a time).
  const auto logged_until = std::chrono::steady_clock::now() + kBound;
  while (staged_bytes(second.output_so_far()).size() < 2 && second.running() &&
         std::chrono::steady_clock::now() < logged_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  bytes = staged_bytes(second.output_so_far());
  EXPECT_EQ(bytes, (std::vector<uint64_t>{0, 0})) << second.output_so_far();
  s = wait_for(head.address, [](const json& s) {
    for (const auto& node : s["nodes"]) {
      if (node["actors"].contains("stager")) return false;
    }
    return true;
  });
  for (const auto& node : s["nodes"]) {
    EXPECT_FALSE(node["actors"].contains("stager")) << "a stager stops once it answered: " << s.dump(2);
  }
  for (const testing::Daemon* node : {&a, &b}) {
    const std::string maps = testing::read_text("/proc/" + std::to_string(node->process->pid()) + "/maps");
    EXPECT_NE(maps.find(cache_of.at(node->address) + "/units/"), std::string::npos) << "maps its cached copies";
    EXPECT_EQ(maps.find(tmp_ / "parts"), std::string::npos) << "maps nothing of the driver's folder";
  }
  ProcessResult stop = run_process({kPartitaBinary, "stop", "again-1", "--address", head.address}, kProcessSeconds);
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  second.wait(kProcessSeconds);
  s = wait_until_no_actors(head.address);

  // A flipped byte in a cached file: named, fetched again, and the job's result unchanged.
  const std::string cache = cache_of.at(placed[0].get<std::string>());
  fs::path damaged;
  for (const auto& unit : fs::directory_iterator(cache + "/units")) {
    if (fs::exists(unit.path() / "x.bin")) damaged = unit.path() / "x.bin";
  }
  ASSERT_FALSE(damaged.empty());
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  r = run_process({kPartitaBinary, "submit", write_job("damaged.yaml", 2), "--address", head.address}, kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "1 damaged, fetched again");
  for (testing::Daemon* node : {&a, &b}) {
    if (node->address == placed[0].get<std::string>()) {
      EXPECT_CONTAINS(node->process->errors_so_far(), damaged.string() + ": data checksum mismatch");
    }
  }
  EXPECT_EQ(logged_hash(r.out), expected.parameter_hash) << r.out;
  bytes = staged_bytes(r.out);
  ASSERT_EQ(bytes.size(), 2u) << r.out;
  EXPECT_GT(bytes[0] + bytes[1], 0u) << "the damaged part is copied again";
}

// A knowledge-graph job (encoder: none, a triples dataset its driver partitions) is staged
// as a GNN job is, except that each node gets every part: its trainer reads every part's
// triples (embeddings/kg_triples.h), and the map of original ids. Its actors open the cached
// copies (as root: nodes that cannot see the driver's folder), and the job ends with the
// weights and the ranking of the same job run in one process.
TEST_F(ClusterJobTest, AKnowledgeGraphJobTrainsOnStagedCopiesOfEveryPart) {
  // 40 entities, 2 relations, 160 distinct triples; held out: 30 of them again.
  fs::create_directories(tmp_ / "kg");
  {
    std::ofstream train(tmp_ / "kg/train.txt"), valid(tmp_ / "kg/valid.txt"), test(tmp_ / "kg/test.txt");
    int i = 0;
    for (int h = 0; h < 40; ++h) {
      for (int k = 1; k <= 4; ++k, ++i) {
        const std::string line = "e" + std::to_string(h) + "\tr" + std::to_string(k % 2) + "\te" + std::to_string((h + 3 * k) % 40) + "\n";
        train << line;
        (i < 10 ? valid : test) << (i < 30 ? line : "");
      }
    }
  }
  const auto kg_job = [&](const std::string& name, int epochs) {
    testing::write_text(tmp_ / name, "task: link_prediction\n"
                                     "data: {dataset: " + tmp_ / "kg" + ", format: triples, num_partitions: 2}\n"
                                     "model: {encoder: none, decoder: distmult, dim: 16, init_std: 0.1}\n"
                                     "negatives: {k: 12, chunk_size: 8, degree_fraction: 0.5}\n"
                                     "sampling: {batch_size: 32}\n"
                                     "train: {epochs: " + std::to_string(epochs) + ", learning_rate: 0.2, seed: 3}\n"
                                     "cluster: {partitions_per_node: 1}\n"
                                     "output: " + tmp_ / "unused" + "\n");
    return tmp_ / name;
  };
  testing::Daemon head = start_head();
  ASSERT_FALSE(head.address.empty());
  // As root, each node runs where the head's runs folder (which holds the driver's copy of
  // the data, runs/ID/partitions) is an empty folder: a mount namespace of its own. It can
  // train only on what was staged to it.
  const bool hidden = ::geteuid() == 0 && fs::exists("/usr/bin/unshare");
  const auto start_kg_node = [&](const std::string& name) -> testing::Daemon {
    if (!hidden) return start_node(head.address, name);
    fs::create_directories(tmp_ / "runs");
    try {
      return runtime::start_daemon_child(
          "/usr/bin/unshare", {"--join", head.address, "--name", name, "--cache", tmp_ / ("cache-" + name)},
          {"--mount", "--propagation", "private", "/bin/sh", "-c", "mount -t tmpfs tmpfs \"$0\" && exec \"$@\"",
           tmp_ / "runs", kPartitaBinary, "--log-level", "info"},
          std::chrono::seconds(30));
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      return {};
    }
  };
  testing::Daemon a = start_kg_node("a");
  testing::Daemon b = start_kg_node("b");
  ASSERT_EQ(alive(wait_for(head.address, [](const json& s) { return alive(s) == 2; })), 2u);
  const std::string job = kg_job("kg.yaml", 2);
  const JobReport expected = reference(job);

  ProcessResult r = run_process({kPartitaBinary, "submit", job, "--address", head.address}, kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string id = submitted_id(r.out);
  EXPECT_EQ(logged_hash(r.out), expected.parameter_hash) << r.out;
  const std::vector<EpochMetrics> got = read_metrics_file(run_dir(id) + "/metrics.jsonl");
  ASSERT_EQ(got.size(), expected.epochs.size());
  for (size_t e = 0; e < got.size(); ++e) {
    EXPECT_DOUBLE_EQ(got[e].train_loss, expected.epochs[e].train_loss) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(got[e].ranking_metric("test.mrr"), expected.epochs[e].ranking_metric("test.mrr")) << "epoch " << e + 1;
  }
  const std::vector<uint64_t> bytes = staged_bytes(r.out);
  ASSERT_EQ(bytes.size(), 2u) << r.out;
  EXPECT_GT(bytes[0], 0u);
  EXPECT_GT(bytes[1], 0u);
  for (const std::string& cache : {tmp_ / "cache-a", tmp_ / "cache-b"}) {
    EXPECT_EQ(parts_in_cache(cache), (std::set<std::string>{"part0", "part1"})) << cache << ": every part";
  }

  // The same job again: its data is in the nodes' caches, nothing is copied.
  r = run_process({kPartitaBinary, "submit", kg_job("again.yaml", 2), "--address", head.address}, kProcessSeconds);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(staged_bytes(r.out), (std::vector<uint64_t>{0, 0})) << r.out;
  EXPECT_EQ(logged_hash(r.out), expected.parameter_hash) << r.out;
}

// The same on separate hosts (netns/netns_cluster.h): the head in one network namespace,
// three nodes in theirs, addresses that exist only there; a node killed mid-job.
TEST_F(ClusterJobTest, OnSeparateHostsAKilledNodeCostsARestartNotResults) {
  NetnsCluster hosts(4);
  if (!hosts.unavailable().empty()) GTEST_SKIP() << "no separate hosts: " << hosts.unavailable();
  const std::string head_address = hosts.address(0) + ":7070";
  auto start_in = [&](int host, const std::vector<std::string>& args, const std::string& listen) -> testing::Daemon {
    std::vector<std::string> wrapper = hosts.command(host, {kPartitaBinary, "--log-level", "info"});
    const std::string binary = wrapper.front();
    wrapper.erase(wrapper.begin());
    try {
      return runtime::start_daemon_child(binary, args, wrapper, std::chrono::seconds(30), listen);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
      return {};
    }
  };
  testing::Daemon head = start_in(0, {"--head", "--runs", tmp_ / "runs"}, head_address);
  ASSERT_EQ(head.address, head_address);
  std::vector<testing::Daemon> nodes;
  for (int i = 1; i <= 3; ++i) {
    nodes.push_back(start_in(i, {"--join", head_address, "--name", "host-" + std::to_string(i), "--cache", tmp_ / ("cache-" + std::to_string(i))},
                             hosts.address(i) + ":0"));
  }
  // Asked from the head's host: this namespace cannot reach those addresses.
  auto status_there = [&]() -> json {
    ProcessResult r = run_process(hosts.command(0, {kPartitaBinary, "status", "--address", head_address, "--json"}),
                                  kProcessSeconds);
    return r.exit_code == 0 ? json::parse(r.out, nullptr, false) : json();
  };
  auto wait_there = [&](const std::function<bool(const json&)>& done) {
    const auto until = std::chrono::steady_clock::now() + kBound;
    json s = status_there();
    while (!(s.is_object() && done(s)) && std::chrono::steady_clock::now() < until) s = status_there();
    return s;
  };
  ASSERT_EQ(alive(wait_there([](const json& s) { return alive(s) == 3; })), 3u);
  const std::string job = write_job("hosts.yaml", 30, ", checkpoint_every_steps: 5, max_restarts: 1");
  ProcessResult r0 = run_process(hosts.command(0, {kPartitaBinary, "submit", job, "--address", head_address, "--detach"}),
                                 kProcessSeconds);
  const std::string id = submitted_id(r0.out);
  ASSERT_EQ(id, "hosts-1") << r0.out << r0.err;
  json s = wait_there([&](const json& s) {
    const json j = job_of(s, id);
    return j.is_object() && j["state"] == "running" && j["epoch"].get<int>() >= 2 && j["partitions"].size() == 2;
  });
  ASSERT_EQ(job_of(s, id)["state"], "running") << s.dump(2);
  const std::string victim = job_of(s, id)["partitions"][0];
  EXPECT_EQ(victim.rfind("10.77.", 0), 0u) << "placed on a host's own address: " << victim;
  for (auto& n : nodes) {
    if (n.address == victim) n.process->kill();
  }
  s = wait_there([&](const json& s) { return job_of(s, id)["state"] == "done" || job_of(s, id)["state"] == "failed"; });
  ASSERT_EQ(job_of(s, id)["state"], "done") << s.dump(2);
  EXPECT_EQ(job_of(s, id)["restarts"], 1);
  const JobReport expected = reference(job);
  EXPECT_EQ(logged_hash(testing::read_text(run_dir(id) + "/driver.log")), expected.parameter_hash);
  expect_same_metrics(id, expected);
}

}  // namespace
}  // namespace partita
