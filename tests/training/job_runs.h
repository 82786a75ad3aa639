// Running a whole job from a test: the actor system a test's runtime uses and a job run in
// this process (its data prepared first). Shared by the training-job suites.
#pragma once

#include "actors/protocol.h"
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

}  // namespace partita::testing
