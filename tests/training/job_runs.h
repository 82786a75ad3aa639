// Running a whole job from a test: the actor system a test's runtime uses and a job run in
// this process (its data prepared first), and what two runs of one job must share. Shared by
// the training-job suites.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/protocol.h"
#include "base/error.h"
#include "daemon_process.h"
#include "test_util.h"
#include "runtime/runtime.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"

namespace partita::testing {

inline runtime::ActorSystemOptions job_system_options() {
  runtime::ActorSystemOptions options;
  options.threads = 2;
  add_protocol_types(options);
  return options;
}

inline JobReport run_in_process(const JobConfig& job, const RunOptions& options = {}) {
  auto rt = runtime::Runtime::in_process(job_system_options(), job_actor_types());
  prepare_data(job, 2);
  return run_job(*rt, job, options);
}

// Runs `job` in this process and cancels it at the first step of its second epoch, while its
// trainers are in a step: the run ends cancelled, and no line it logs is an error or says
// "failed" (a trainer whose group or shard the driver stopped ends its epoch at info).
inline void expect_cancel_mid_epoch_logs_no_error(const JobConfig& job) {
  RunOptions options;
  options.cancel = std::make_shared<CancelToken>();
  options.on_progress = [&](const JobProgress& p) {
    if (p.event == JobProgress::Event::step && p.epoch == 2 && p.step == 1) options.cancel->cancel();
  };
  LogCapture log(spdlog::level::info);
  EXPECT_THROW(run_in_process(job, options), JobCancelled);
  for (const std::string& line : log.lines()) {
    EXPECT_NE(line.rfind("error", 0), 0u) << line;
    EXPECT_EQ(line.find("failed"), std::string::npos) << line;
  }
}

// Two daemons started for a test (`partita daemon` child processes on loopback named node-0
// and node-1, tests/daemon_process.h) and a runtime joined to both. The runtime goes first,
// then the daemons stop.
struct TwoDaemons {
  std::vector<Daemon> daemons;
  std::unique_ptr<runtime::Runtime> runtime;
};

inline TwoDaemons start_two_daemons() {
  TwoDaemons two;
  for (int d = 0; d < 2; ++d) {
    two.daemons.push_back(start_daemon({"--name", "node-" + std::to_string(d)}));
    if (two.daemons.back().address.empty()) throw Error("daemon node-" + std::to_string(d) + " reported no address");
  }
  two.runtime = runtime::Runtime::connect(job_system_options(), {two.daemons[0].address, two.daemons[1].address},
                                          std::chrono::seconds(10));
  return two;
}

// Runs `job` on two daemons started for it; they stop when it returns.
inline JobReport run_on_two_daemons(const JobConfig& job) { return run_job(*start_two_daemons().runtime, job, {}); }

// Runs `job` (one that trains for longer than two seconds) on two daemons, kills node-1 two
// seconds in, and expects the job to fail naming node-1's address, noticed from the lost
// member rather than by the driver's progress deadline ("no progress").
inline void expect_a_killed_daemon_fails_the_job_naming_it(const JobConfig& job) {
  TwoDaemons two = start_two_daemons();
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    two.daemons[1].process->kill();
  });
  try {
    run_job(*two.runtime, job, {});
    ADD_FAILURE() << "the job survived a killed daemon";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(two.daemons[1].address), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("no progress"), std::string::npos) << e.what();
  }
  killer.join();
}

// Expects `b` to have trained exactly as `a`: per epoch the same step losses, step hashes
// and test MRR (a knowledge-graph job's), and the same final parameters.
inline void expect_identical_training(const JobReport& a, const JobReport& b) {
  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    EXPECT_EQ(a.epochs[e].step_losses, b.epochs[e].step_losses) << "epoch " << e + 1;
    EXPECT_EQ(a.epochs[e].step_hashes, b.epochs[e].step_hashes) << "epoch " << e + 1;
    EXPECT_EQ(a.epochs[e].ranking_metric("test.mrr"), b.epochs[e].ranking_metric("test.mrr")) << "epoch " << e + 1;
  }
  EXPECT_EQ(a.parameter_hash, b.parameter_hash);
}

}  // namespace partita::testing
