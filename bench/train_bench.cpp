#include "bench/train_bench.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "actors/protocol.h"
#include "base/error.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/input_graph.h"
#include "bench/stats.h"
#include "graph/batch_features.h"
#include "graph/epoch_plan.h"
#include "graph/neighbor_sampler.h"
#include "models/batch_tensors.h"
#include "models/keyed_dropout.h"
#include "models/optimizer.h"
#include "models/step_cost.h"
#include "models/torch_runtime.h"
#include "models/training.h"
#include "partitioner/partition_format.h"
#include "partitioner/partition_stores.h"
#include "runtime/daemon_child.h"
#include "runtime/runtime.h"
#include "runtime/tls/credentials.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"

namespace partita::bench {

namespace fs = std::filesystem;

namespace {

// PyG 2.5 on this machine class with the same settings (a quoted figure): NeighborLoader
// + GraphSAGE in one process, and torch_geometric.distributed with 2 ranks.
constexpr double kPygSecondsPerEpoch = 408;
constexpr double kPygDistributedSecondsPerEpoch = 412;
constexpr int kWarmupSteps = 2;
// The memory floor's copy: each of its two buffers, far beyond the caches.
constexpr int64_t kCopyBufferBytes = int64_t{256} << 20;


JobConfig bench_job(const TrainBenchOptions& o, int parts, int trainer_threads, const std::string& dir) {
  JobConfig job;
  if (o.input.empty()) {
    job.generate = true;
    job.generate_spec.kind = o.model == "rgcn" ? "hetero" : "rmat";
    job.generate_spec.nodes = o.num_nodes;
    job.generate_spec.avg_degree = o.avg_degree;
    job.generate_spec.features = o.feature_dim;
    job.generate_spec.classes = o.num_classes;
    job.generate_spec.train_nodes = o.train_nodes;
    job.generate_spec.seed = o.seed;
  } else {
    job.dataset = fs::absolute(o.input).string();
    job.format = "npy";
  }
  job.num_partitions = parts;
  job.model.kind = model_kind_named(o.model, "--model");
  if (o.model == "rgcn") {
    job.model.decomposition = "basis";
    job.model.bases = o.bases;
    job.model.target_type = "paper";
  }
  job.model.hidden = o.hidden;
  job.model.layers = static_cast<int>(o.fanouts.size());
  job.model.dropout = 0.5;
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
  // The median time between two steps' reports to the driver, after kWarmupSteps: the
  // steady step, without the epoch's start (the sampler's first batches, first allocations).
  double median_step = 0;
  double seconds_per_step() const { return seconds_per_epoch / static_cast<double>(steps); }
};

EpochTime measure(runtime::Runtime& rt, const JobConfig& job, const TrainBenchOptions& o) {
  RunOptions options;
  options.overwrite = true;
  options.evaluate = false;  // random labels: there is nothing to evaluate
  options.max_steps = o.max_steps;
  std::vector<double> reported;  // seconds since the epoch started, at each step's report
  options.on_progress = [&reported](const JobProgress& p) {
    if (p.event == JobProgress::Event::step) reported.push_back(p.seconds);
  };
  JobReport report = run_job(rt, job, options);
  const EpochMetrics& m = report.epochs.at(0);
  std::vector<double> steady;
  for (size_t k = kWarmupSteps; k < reported.size(); ++k) steady.push_back(reported[k] - reported[k - 1]);
  return {m.seconds / m.steps * report.steps_per_epoch, report.steps_per_epoch, m.steps, median(steady)};
}

runtime::ActorSystemOptions system_options() {
  runtime::ActorSystemOptions options;
  options.threads = 2;
  add_protocol_types(options);
  return options;
}

// One step of the profile, in seconds per phase, with its batch's size and floors.
struct ProfiledStep {
  double layout = 0, forward = 0, backward = 0, optimizer = 0;
  double compute_floor = 0;  // the step's FLOPs at the GEMM throughput measured right after it
  double memory_floor = 0;   // the step's bytes at the copy rate measured right after that
  double flops = 0, product_flops = 0;
  StepBytes bytes;
  double copy_rate = 0;  // bytes per second
  double floor() const { return compute_floor + memory_floor; }  // the roofline floor
  int64_t nodes = 0, edges = 0;
  std::vector<int64_t> layer_rows;
  double compute() const { return layout + forward + backward + optimizer; }
};

// Batches of partition 0 of `dir` (one partition: the whole graph), sampled as an epoch's
// first batches are, features and labels attached.
std::vector<MiniBatch> sample_batches(const std::string& dir, const TrainBenchOptions& o, int count) {
  const PartitionFolder folder(dir);
  const PartitionData data = folder.load_part(0);
  const PartitionStores stores = open_partition_stores(dir, 0);
  SamplerConfig config;
  config.fanouts.assign(static_cast<size_t>(std::max(1, stores.topology->num_edge_types())),
                        std::vector<int>(o.fanouts.begin(), o.fanouts.end()));
  NeighborSampler sampler(*stores.topology, config);
  const EpochPlan plan = plan_epoch(data.train_idx.as<int64_t>(), o.batch_size, o.seed, 0);
  if (plan.num_batches() < count) {
    throw UsageError("--profile-steps: the graph's " + std::to_string(data.train_idx.as<int64_t>().size()) +
                     " training nodes make only " + std::to_string(plan.num_batches()) + " batches of " +
                     std::to_string(o.batch_size) + ", not " + std::to_string(count));
  }
  std::vector<MiniBatch> batches;
  for (int b = 0; b < count; ++b) {
    batches.push_back(sampler.sample(plan.batch(b), plan.key(b)));
    attach_features(batches.back(), folder.book(), {stores.features.get()}, {}, o.threads);
  }
  return batches;
}

// The trainer's step (training/trainer.cpp, train_step) on `batches`, one process, no
// allreduce, each phase timed; after each step, torch::mm of its products, then a copy of a
// large buffer.
std::vector<ProfiledStep> profile_steps(const std::string& dir, const TrainBenchOptions& o) {
  std::vector<MiniBatch> batches = sample_batches(dir, o, kWarmupSteps + o.profile_steps);
  const PartitionMeta meta = PartitionFolder(dir).meta();
  ModelConfig config;
  config.kind = o.model;
  config.in_dim = meta.feature_dim;
  config.hidden_dim = o.hidden;
  config.out_dim = meta.num_classes;
  config.num_layers = static_cast<int>(o.fanouts.size());
  config.dropout = 0.5;
  // Relational models: as the trainer sets them up (training/trainer.cpp), from the one part.
  std::vector<int32_t> node_type;
  HeteroLayout hetero;
  if (config.is_relational()) {
    config.num_nodes = meta.num_nodes;
    config.num_node_types = static_cast<int>(meta.node_types.size());
    config.num_relations = static_cast<int>(meta.edge_types.size());
    for (const EdgeType& t : meta.edge_types) {
      const auto it = std::find(meta.node_types.begin(), meta.node_types.end(), t.dst_type);
      config.relation_dst_type.push_back(static_cast<int32_t>(it - meta.node_types.begin()));
    }
    config.decomposition = "basis";
    config.num_bases = o.bases;
    const PartitionData part = PartitionFolder(dir).load_part(0);
    const Span<const int32_t> types = part.node_type->as<int32_t>();
    node_type.assign(types.begin(), types.end());
    hetero = HeteroLayout{config.num_relations, &node_type};
  }
  const JobConfig defaults;
  std::shared_ptr<GnnModel> model = make_model(config, o.seed);
  std::unique_ptr<torch::optim::Optimizer> optimizer =
      make_optimizer(name_of(defaults.optimizer), model->parameters(), defaults.learning_rate);
  set_torch_threads(o.threads);
  tune_malloc_for_training();
  GemmClock gemm;
  MemcpyClock copy(kCopyBufferBytes);
  std::vector<float> gradients;
  std::vector<ProfiledStep> steps;
  for (size_t b = 0; b < batches.size(); ++b) {
    ProfiledStep s;
    s.nodes = static_cast<int64_t>(batches[b].node_ids.size());
    s.edges = static_cast<int64_t>(batches[b].row.size());
    Stopwatch watch;
    optimizer->zero_grad();
    const GraphBatch batch = to_graph_batch(std::move(batches[b]), {}, hetero);
    s.layout = watch.seconds();
    BatchTimes times;
    const BatchResult result = forward_backward(*model, batch, step_key(o.seed, 0, b, 0), &times);
    s.forward = times.forward;
    s.backward = times.backward;
    watch.restart();
    flatten_gradients(*model, gradients);
    const float scale = 1.0f / static_cast<float>(std::max<int64_t>(1, result.seeds));
    for (float& g : gradients) g *= scale;
    assign_gradients(*model, gradients.data(), gradients.size());
    optimizer->step();
    s.optimizer = watch.seconds();

    const StepCost cost = model->step_cost(batch);
    s.flops = cost.flops();
    s.product_flops = cost.product_flops();
    s.compute_floor = s.flops * gemm.seconds(cost.products) / s.product_flops;
    s.bytes = cost.bytes;
    s.copy_rate = copy.bytes_per_second();
    s.memory_floor = s.bytes.step() / s.copy_rate;
    for (int layer = 0; layer < config.num_layers; ++layer) {
      s.layer_rows.push_back(batch.layer_rows(layer, config.num_layers, config.trim));
    }
    if (b >= static_cast<size_t>(kWarmupSteps)) steps.push_back(s);
  }
  return steps;
}

template <typename Field>
double median_of(const std::vector<ProfiledStep>& steps, Field field) {
  std::vector<double> values;
  for (const ProfiledStep& s : steps) values.push_back(field(s));
  return median(values);
}

// Returns the median step's roofline floor in seconds.
double print_profile(const std::vector<ProfiledStep>& steps, const TrainBenchOptions& o) {
  const ProfiledStep& first = steps.front();
  std::printf("\nstep profile: %zu steps after %d warm-up, 1 process, %d cores (set_torch_threads), no allreduce; medians\n",
              steps.size(), kWarmupSteps, o.threads);
  std::printf("per batch: %.0f nodes, %.0f edges; rows computed per layer (first step):",
              median_of(steps, [](const ProfiledStep& s) { return static_cast<double>(s.nodes); }),
              median_of(steps, [](const ProfiledStep& s) { return static_cast<double>(s.edges); }));
  for (int64_t rows : first.layer_rows) std::printf(" %lld", static_cast<long long>(rows));
  const double flops = median_of(steps, [](const ProfiledStep& s) { return s.flops; });
  const double products = median_of(steps, [](const ProfiledStep& s) { return s.product_flops; });
  std::printf("\nFLOPs per step: %.2f G (dense products %.2f G, aggregation %.2f G)\n", flops / 1e9,
              products / 1e9, (flops - products) / 1e9);
  const auto mb = [&](double (*field)(const ProfiledStep&)) { return median_of(steps, field) / 1e6; };
  std::printf("bytes per step: %.1f MB (aggregation %.1f, dense products %.1f, activations and loss %.1f, Adam %.1f);"
              " features gathered before the step, not in it: %.1f MB\n\n",
              mb([](const ProfiledStep& s) { return s.bytes.step(); }),
              mb([](const ProfiledStep& s) { return s.bytes.aggregation; }),
              mb([](const ProfiledStep& s) { return s.bytes.dense; }),
              mb([](const ProfiledStep& s) { return s.bytes.activations; }),
              mb([](const ProfiledStep& s) { return s.bytes.optimizer; }),
              mb([](const ProfiledStep& s) { return s.bytes.features; }));
  const struct {
    const char* name;
    double (*field)(const ProfiledStep&);
  } phases[] = {
      {"lay out the batch (to_graph_batch)", [](const ProfiledStep& s) { return s.layout; }},
      {"forward and loss", [](const ProfiledStep& s) { return s.forward; }},
      {"backward", [](const ProfiledStep& s) { return s.backward; }},
      {"optimizer (flat gradients, Adam)", [](const ProfiledStep& s) { return s.optimizer; }},
      {"step (sum)", [](const ProfiledStep& s) { return s.compute(); }},
      {"compute floor: FLOPs at torch::mm's rate", [](const ProfiledStep& s) { return s.compute_floor; }},
      {"memory floor: bytes at the copy's rate", [](const ProfiledStep& s) { return s.memory_floor; }},
      {"roofline floor (compute + memory)", [](const ProfiledStep& s) { return s.floor(); }},
  };
  std::printf("%-46s %10s\n", "phase", "ms");
  for (const auto& phase : phases) std::printf("%-46s %10.1f\n", phase.name, 1e3 * median_of(steps, phase.field));
  const double compute_floor = median_of(steps, [](const ProfiledStep& s) { return s.compute_floor; });
  const double ratio = median_of(steps, [](const ProfiledStep& s) { return s.compute() / s.compute_floor; });
  const double roofline = median_of(steps, [](const ProfiledStep& s) { return s.compute() / s.floor(); });
  const double copy_rate = median_of(steps, [](const ProfiledStep& s) { return s.copy_rate; });
  std::printf("step / compute floor: %.2f (goal <= 1.5: %s); step / roofline: %.2f (medians of the steps' ratios)\n",
              ratio, ratio <= 1.5 ? "met" : "not met", roofline);
  std::printf("GEMM throughput %.1f GFLOP/s; copy %.2f GB/s (%d MB buffer, read + written, %d intra-op thread%s)\n",
              flops / compute_floor / 1e9, copy_rate / 1e9, static_cast<int>(kCopyBufferBytes >> 20), torch_threads(), torch_threads() == 1 ? "" : "s");
  return median_of(steps, [](const ProfiledStep& s) { return s.floor(); });
}

// Configuration (b), secure and plaintext in alternating rounds.
void compare_tls(const JobConfig& job, const TrainBenchOptions& o, int per_daemon) {
  const std::shared_ptr<const runtime::tls::Credentials> tls = runtime::tls::process_credentials();
  if (!tls) throw UsageError("--compare-tls compares TLS with plaintext: run it without --insecure");
  std::printf("\n(b) 2 partitions on 2 daemons, 1 trainer each: %d rounds per mode, alternating\n", o.compare_tls);
  std::printf("%-6s %-6s %10s %8s\n", "round", "mode", "s/epoch", "s/step");
  std::vector<double> plain, secure;
  for (int round = 1; round <= o.compare_tls; ++round) {
    for (bool use_tls : {false, true}) {
      runtime::tls::set_process_credentials(use_tls ? tls : nullptr);
      std::vector<std::string> global{"--log-level", "warn", "--threads", std::to_string(per_daemon)};
      if (!use_tls) global.push_back("--insecure");
      std::vector<runtime::DaemonChild> daemons;
      std::vector<std::string> addresses;
      for (int d = 0; d < 2; ++d) {
        daemons.push_back(runtime::start_daemon_child(self_executable(), {}, global));
        addresses.push_back(daemons.back().address);
      }
      auto rt = runtime::Runtime::connect(system_options(), addresses, std::chrono::seconds(10));
      const EpochTime t = measure(*rt, job, o);
      (use_tls ? secure : plain).push_back(t.seconds_per_epoch);
      std::printf("%-6d %-6s %10.2f %8.3f\n", round, use_tls ? "TLS" : "plain", t.seconds_per_epoch,
                  t.seconds_per_step());
      std::fflush(stdout);
    }
  }
  runtime::tls::set_process_credentials(tls);
  std::printf("\nmedian s/epoch: plaintext %.2f, TLS %.2f; TLS / plaintext %.3f (goal <= 1.15)\n", median(plain),
              median(secure), median(secure) / median(plain));
}

// Configuration (a), features in memory and on disk in alternating rounds.
void compare_storage(JobConfig job, const TrainBenchOptions& o) {
  std::printf("\n(a) 1 partition, 1 trainer, in one process: %d rounds per storage, alternating\n", o.compare_storage);
  std::printf("%-6s %-7s %10s %8s\n", "round", "storage", "s/epoch", "s/step");
  std::vector<double> memory, disk;
  for (int round = 1; round <= o.compare_storage; ++round) {
    for (const char* storage : {"memory", "disk"}) {
      job.feature_storage = storage;
      auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
      const EpochTime t = measure(*rt, job, o);
      (job.feature_storage == "disk" ? disk : memory).push_back(t.seconds_per_epoch);
      std::printf("%-6d %-7s %10.2f %8.3f\n", round, storage, t.seconds_per_epoch, t.seconds_per_step());
      std::fflush(stdout);
    }
  }
  std::printf("\nmedian s/epoch: memory %.2f, disk %.2f; disk / memory %.2f\n", median(memory), median(disk),
              median(disk) / median(memory));
}

}  // namespace

void run_train_bench(const TrainBenchOptions& o) {
  const std::string dir = o.work_dir.empty() ? "/tmp/partita-train-bench" : o.work_dir;
  const int per_daemon = std::max(1, o.threads / 2);
  JobConfig one = bench_job(o, 1, o.threads, dir);
  JobConfig two = bench_job(o, 2, per_daemon, dir);
  if (!o.input.empty()) {
    check_input_graph(o.input, {"x.npy", "y.npy", "train_idx.npy"});
    // The job reuses its partitions by the input's path; a graph rewritten in place must
    // be partitioned again.
    forget_stale_partitions(o.input, dir, {one.partition_dir(), two.partition_dir()});
  }
  prepare_data(one, 0);
  if (o.epochs && o.daemons && o.model == "graphsage") prepare_data(two, 0);

  const bool rgcn = o.model == "rgcn";
  std::printf("\n%s: %d-layer %s hidden %lld, fanouts%s", !o.input.empty() ? o.input.c_str() : rgcn ? "hetero generator" : "RMAT",
              static_cast<int>(o.fanouts.size()),
              rgcn ? ("R-GCN (basis, " + std::to_string(o.bases) + " bases)").c_str() : "GraphSAGE",
              static_cast<long long>(o.hidden), rgcn ? " (every edge type)" : "");
  for (int64_t f : o.fanouts) std::printf(" %lld", static_cast<long long>(f));
  const PartitionMeta meta = PartitionFolder(one.partition_dir()).meta();
  std::printf(", batch %lld, %d cores in all; %lld nodes, %lld directed edges, %lld features, %lld classes\n",
              static_cast<long long>(o.batch_size), o.threads, static_cast<long long>(meta.num_nodes),
              static_cast<long long>(meta.num_edges), static_cast<long long>(meta.feature_dim),
              static_cast<long long>(meta.num_classes));
  std::fflush(stdout);

  double floor = 0;
  if (o.profile_steps > 0) {
    floor = print_profile(profile_steps(one.partition_dir(), o), o);
    std::fflush(stdout);
  }
  if (!o.epochs || rgcn) return;  // PyG's quoted epochs are GraphSAGE's
  if (o.compare_tls > 0) return compare_tls(two, o, per_daemon);
  if (o.compare_storage > 0) return compare_storage(one, o);

  EpochTime a;
  {
    auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
    a = measure(*rt, one, o);
  }
  EpochTime b;
  if (o.daemons) {
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

  if (o.max_steps > 0) {
    std::printf("\n(timed %lld of %lld steps per epoch, scaled to the whole epoch)",
                static_cast<long long>(a.measured_steps), static_cast<long long>(a.steps));
  }
  std::printf("\n%-52s %10s %7s %8s %13s %8s %11s\n", "configuration", "s/epoch", "steps", "s/step", "median s/step",
              "/ roofline", "PyG / this");
  const auto row = [&](const char* name, const EpochTime& t, double pyg, bool against_floor) {
    char ratio[16] = "-";
    if (against_floor && floor > 0) std::snprintf(ratio, sizeof ratio, "%.2f", t.seconds_per_step() / floor);
    std::printf("%-52s %10.1f %7lld %8.3f %13.3f %10s %11.2f\n", name, t.seconds_per_epoch,
                static_cast<long long>(t.steps), t.seconds_per_step(), t.median_step, ratio, pyg / t.seconds_per_epoch);
  };
  row("(a) 1 partition, 1 trainer, in one process", a, kPygSecondsPerEpoch, true);
  if (o.daemons) row("(b) 2 partitions on 2 daemons, 1 trainer each", b, kPygDistributedSecondsPerEpoch, false);
  std::printf("(median s/step: between two steps' reports to the driver, after %d warm-up steps)\n", kWarmupSteps);
  std::printf("%-52s %10.0f\n%-52s %10.0f\n", "    PyG NeighborLoader, one process (quoted)", kPygSecondsPerEpoch,
              "    PyG distributed, 2 ranks (quoted)", kPygDistributedSecondsPerEpoch);
}

}  // namespace partita::bench
