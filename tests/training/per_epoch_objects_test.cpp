// A long job must not grow: what an epoch creates (actors, threads, open files, timeouts in
// the actor clock) is gone by the next one. Counted, not measured in bytes: bench/soak.sh measures the bytes over
// minutes (BENCHMARKS.md, "Memory over a long job").
#include <gtest/gtest.h>

#include <caf/detail/simple_actor_clock.hpp>

#include <filesystem>
#include <vector>

#include "job_runs.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "runtime/runtime.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"
#include "training/job_types.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

size_t entries(const char* folder) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder)) ++n;
  return n;
}

struct Counts {
  size_t actors, threads, fds;
  bool operator==(const Counts& o) const { return actors == o.actors && threads == o.threads && fds == o.fds; }
};

void PrintTo(const Counts& c, std::ostream* out) {
  *out << c.actors << " actors, " << c.threads << " threads, " << c.fds << " open files";
}

// The actor system's clock, whose schedule holds every timeout and delayed message. Its own
// thread changes the count while we read it, so counts are compared with a margin: requests
// of the batches in flight come and go, answered requests must not stay.
const caf::detail::simple_actor_clock* schedule_of(caf::actor_system& system) {
  return dynamic_cast<const caf::detail::simple_actor_clock*>(&system.clock());
}

TEST(PerEpochObjectsTest, NothingGrowsPerEpochInOneProcess) {
  testing::TempDir tmp;
  PartitionOptions options;
  options.num_parts = 2;
  partition_dataset(testing::sbm_graph(2000, 7), options, tmp / "parts");
  const JobConfig job = parse_job(
      "data: {partitions: parts}\n"
      "model: {kind: graphsage, hidden: 16, layers: 2, dropout: 0.3}\n"
      "sampling: {fanouts: [5, 5], batch_size: 128}\n"
      "train: {epochs: 30, seed: 3}\n"
      "output: run\n",
      tmp.path(), "per-epoch job");
  auto rt = runtime::Runtime::in_process(testing::job_system_options(), job_actor_types());
  prepare_data(job, 2);
  std::vector<Counts> counts;
  std::vector<size_t> timeouts;
  const caf::detail::simple_actor_clock* clock = schedule_of(rt->system());
  ASSERT_NE(clock, nullptr) << "the actor clock's schedule cannot be read";
  RunOptions run;
  run.on_progress = [&](const JobProgress& p) {
    if (p.event != JobProgress::Event::epoch) return;
    counts.push_back({rt->system().registry().running(), entries("/proc/self/task"), entries("/proc/self/fd")});
    timeouts.push_back(clock->schedule().size());
  };
  run_job(*rt, job, run);
  ASSERT_EQ(counts.size(), 30u);
  // From the third epoch on (the first ones start pools and caches), every epoch ends with
  // what the third ended with.
  for (size_t e = 3; e < counts.size(); ++e) EXPECT_EQ(counts[e], counts[2]) << "after epoch " << e + 1;
  // An answered request that left its timeout behind adds one entry per remote hop and
  // feature request: dozens an epoch here, hundreds by the last one.
  EXPECT_LE(timeouts.back(), timeouts[2] + 16) << "clock entries after epoch 3: " << timeouts[2];
}

TEST(PerEpochObjectsTest, ReportKeepsStepRecordsOfLatestEpochsOnly) {
  JobReport report;
  const size_t epochs = JobReport::kStepRecordsKept + 10;
  for (size_t e = 1; e <= epochs; ++e) {
    EpochMetrics m;
    m.epoch = static_cast<int>(e);
    m.train_loss = 1.0 / static_cast<double>(e);
    m.step_losses.assign(5, 0.5);
    m.step_hashes.assign(5, e);
    report.add_epoch(std::move(m));
  }
  ASSERT_EQ(report.epochs.size(), epochs);
  for (size_t e = 0; e < epochs; ++e) {
    const bool kept = e >= epochs - JobReport::kStepRecordsKept;
    EXPECT_EQ(report.epochs[e].step_losses.size(), kept ? 5u : 0u) << "epoch " << e + 1;
    EXPECT_EQ(report.epochs[e].step_hashes.size(), kept ? 5u : 0u) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(report.epochs[e].train_loss, 1.0 / static_cast<double>(e + 1));
  }
}

}  // namespace
}  // namespace partita
