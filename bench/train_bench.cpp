#include "bench/train_bench.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "actors/protocol.h"
#include "base/subprocess.h"
#include "runtime/daemon_child.h"
#include "runtime/runtime.h"
#include "training/job_driver.h"
#include "training/job_types.h"

namespace partita::bench {

namespace fs = std::filesystem;

namespace {

// PyG 2.5 on this machine class with the same settings (quoted in the issue): NeighborLoader
// + GraphSAGE in one process, and torch_geometric.distributed with 2 ranks.
constexpr double kPygSecondsPerEpoch = 408;
constexpr double kPygDistributedSecondsPerEpoch = 412;

JobConfig bench_job(const TrainBenchOptions& o, int parts, int trainer_threads, const std::string& dir) {
  JobConfig job;
  job.generate = true;
  job.generate_spec.kind = "rmat";
  job.generate_spec.nodes = o.num_nodes;
  job.generate_spec.avg_degree = o.avg_degree;
  job.generate_spec.features = o.feature_dim;
  job.generate_spec.classes = o.num_classes;
  job.generate_spec.train_nodes = o.train_nodes;
  job.generate_spec.seed = o.seed;
  job.num_partitions = parts;
  job.model = "graphsage";
  job.hidden = o.hidden;
  job.layers = static_cast<int>(o.fanouts.size());
  job.dropout = 0.5;
  job.fanouts = o.fanouts;
  job.batch_size = o.batch_size;
  job.epochs = 1;
  job.threads = trainer_threads;
  job.seed = o.seed;
  job.output = (fs::path(dir) / ("parts-" + std::to_string(parts))).string();
  return job;
}

struct EpochTime {
  double seconds_per_epoch = 0;
  int64_t steps = 0;          // of a whole epoch
  int64_t measured_steps = 0;
};

EpochTime measure(runtime::Runtime& rt, const JobConfig& job, const TrainBenchOptions& o) {
  RunOptions options;
  options.overwrite = true;
  options.evaluate = false;  // random labels: there is nothing to evaluate
  options.max_steps = o.max_steps;
  JobReport report = run_job(rt, job, options);
  const EpochMetrics& m = report.epochs.at(0);
  return {m.seconds / m.steps * report.steps_per_epoch, report.steps_per_epoch, m.steps};
}

runtime::ActorSystemOptions system_options() {
  runtime::ActorSystemOptions options;
  options.threads = 2;
  add_protocol_types(options);
  return options;
}

}  // namespace

void run_train_bench(const TrainBenchOptions& o) {
  const std::string dir = o.work_dir.empty() ? "/tmp/partita-train-bench" : o.work_dir;
  const int per_daemon = std::max(1, o.threads / 2);
  JobConfig one = bench_job(o, 1, o.threads, dir);
  JobConfig two = bench_job(o, 2, per_daemon, dir);
  prepare_data(one, 0);
  prepare_data(two, 0);

  EpochTime a;
  {
    auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
    a = measure(*rt, one, o);
  }
  EpochTime b;
  {
    std::vector<runtime::DaemonChild> daemons;
    std::vector<std::string> addresses;
    for (int d = 0; d < 2; ++d) {
      daemons.push_back(runtime::start_daemon_child(
          self_executable(), {}, {"--log-level", "warn", "--threads", std::to_string(per_daemon)}));
      addresses.push_back(daemons.back().address);
    }
    auto rt = runtime::Runtime::connect(system_options(), addresses, std::chrono::seconds(10));
    b = measure(*rt, two, o);
  }

  std::printf("\nRMAT %lld nodes, %.0f edges/node, %lld features, %lld classes, %lld training nodes; %zu-layer "
              "GraphSAGE hidden %lld, fanouts", static_cast<long long>(o.num_nodes), o.avg_degree,
              static_cast<long long>(o.feature_dim), static_cast<long long>(o.num_classes),
              static_cast<long long>(o.train_nodes), o.fanouts.size(), static_cast<long long>(o.hidden));
  for (int64_t f : o.fanouts) std::printf(" %lld", static_cast<long long>(f));
  std::printf(", batch %lld, %d cores in all\n", static_cast<long long>(o.batch_size), o.threads);
  if (o.max_steps > 0) {
    std::printf("(timed %lld of %lld steps per epoch, scaled to the whole epoch)\n",
                static_cast<long long>(a.measured_steps), static_cast<long long>(a.steps));
  }
  std::printf("\n%-52s %12s %10s %14s\n", "configuration", "s/epoch", "steps", "PyG / this");
  std::printf("%-52s %12.1f %10lld %14.2f\n", "(a) 1 partition, 1 trainer, in one process", a.seconds_per_epoch,
              static_cast<long long>(a.steps), kPygSecondsPerEpoch / a.seconds_per_epoch);
  std::printf("%-52s %12.1f %10lld %14.2f\n", "(b) 2 partitions on 2 daemons, 1 trainer each", b.seconds_per_epoch,
              static_cast<long long>(b.steps), kPygDistributedSecondsPerEpoch / b.seconds_per_epoch);
  std::printf("%-52s %12.0f\n%-52s %12.0f\n", "    PyG NeighborLoader, one process (quoted)", kPygSecondsPerEpoch,
              "    PyG distributed, 2 ranks (quoted)", kPygDistributedSecondsPerEpoch);
}

}  // namespace partita::bench
