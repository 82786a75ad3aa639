// A long job must not grow: what an epoch creates (actors, threads, open files) is gone by
// the next one. Counted, not measured in bytes: bench/soak.sh measures the bytes over
// minutes (BENCHMARKS.md, "Memory over a long job").
#include <gtest/gtest.h>

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
  RunOptions run;
  run.on_progress = [&](const JobProgress& p) {
    if (p.event != JobProgress::Event::epoch) return;
    counts.push_back({rt->system().registry().running(), entries("/proc/self/task"), entries("/proc/self/fd")});
  };
  run_job(*rt, job, run);
  ASSERT_EQ(counts.size(), 30u);
  // From the third epoch on (the first ones start pools and caches), every epoch ends with
  // what the third ended with.
  for (size_t e = 3; e < counts.size(); ++e) EXPECT_EQ(counts[e], counts[2]) << "after epoch " << e + 1;
}

}  // namespace
}  // namespace partita
