// Running a whole job from a test: the actor system a test's runtime uses and a job run in
// this process (its data prepared first), and what two runs of one job must share. Shared by
// the training-job suites.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "base/error.h"
#include "daemon_process.h"
#include "runtime/runtime.h"
#include "training/job_driver.h"
#include "training/job_types.h"

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

// Runs `job` on two daemons started for it (`partita daemon` child processes on loopback,
// tests/daemon_process.h) joined as one runtime; the daemons stop when it returns.
inline JobReport run_on_two_daemons(const JobConfig& job) {
  std::vector<Daemon> daemons;
  for (int d = 0; d < 2; ++d) {
    daemons.push_back(start_daemon({"--name", "node-" + std::to_string(d)}));
    if (daemons.back().address.empty()) throw Error("daemon node-" + std::to_string(d) + " reported no address");
  }
  auto rt = runtime::Runtime::connect(job_system_options(), {daemons[0].address, daemons[1].address},
                                      std::chrono::seconds(10));
  return run_job(*rt, job, {});
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
