#include "bench/loader_bench.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "actors/distributed_sampler.h"
#include "actors/loader.h"
#include "actors/partition_actor.h"
#include "actors/sampler_actor.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/random.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "graph/epoch_plan.h"
#include "messages/codec.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "runtime/client.h"

namespace partita::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// PyG's distributed loader, 2 ranks, on this machine class (quoted in the issue).
constexpr double kPygDistributedBatchesPerSecond = 4.4;
constexpr int kWarmupBatches = 2;
constexpr auto kDeadline = 120s;

// CPU time (user + system, all threads) a process has used so far.
double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) throw Error("cannot read the CPU time of process " + std::to_string(pid));
  std::istringstream fields(stat.substr(name_end + 2));
  std::string skip;
  for (int field = 3; field <= 13; ++field) fields >> skip;  // state ... cmajflt
  long user = 0, system = 0;
  fields >> user >> system;
  return static_cast<double>(user + system) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double cpu_seconds(const std::vector<pid_t>& pids) {
  double total = 0;
  for (pid_t pid : pids) total += cpu_seconds(pid);
  return total;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

std::string fanouts_text(const std::vector<int>& fanouts) {
  std::string text;
  for (int f : fanouts) text += (text.empty() ? "" : ",") + std::to_string(f);
  return text;
}

std::vector<int64_t> train_seeds(const std::string& dir, int part) {
  PartitionFolder folder(dir);
  const PartitionData data = folder.load_part(part);
  Span<const int64_t> train = data.train_idx.as<int64_t>();
  return std::vector<int64_t>(train.begin(), train.end());
}

// Generates and partitions the graph into workdir/parts1 and parts2, unless a folder from
// the same options is there already.
void prepare_graph(const LoaderBenchOptions& o, const std::string& workdir) {
  std::ostringstream params;
  params << "nodes " << o.num_nodes << " degree " << o.avg_degree << " features " << o.feature_dim << " seed " << o.seed
         << "\n";
  const std::string stamp = workdir + "/loader-bench-params.txt";
  if (fs::exists(stamp) && fs::exists(workdir + "/parts1/META.json") && fs::exists(workdir + "/parts2/META.json")) {
    std::ifstream in(stamp);
    std::stringstream had;
    had << in.rdbuf();
    if (had.str() == params.str()) return;
  }
  RmatOptions rmat;
  rmat.num_nodes = o.num_nodes;
  rmat.avg_degree = o.avg_degree;
  rmat.feature_dim = o.feature_dim;
  rmat.num_classes = 16;
  rmat.seed = o.seed;
  Dataset d = generate_rmat(rmat);
  for (int k : {1, 2}) {
    PartitionOptions options;
    options.num_parts = k;
    options.seed = o.seed;
    WriteOptions write;
    write.overwrite = true;
    partition_dataset(d, options, workdir + "/parts" + std::to_string(k), write);
  }
  std::ofstream(stamp) << params.str();
}

// Sends one message to every sampler at once and waits for every reply.
template <typename... Args>
std::vector<Encoded> ask_all(caf::actor_system& system, const std::vector<sampler_actor>& samplers, Args... args) {
  caf::scoped_actor self{system};
  using Handle = decltype(self->request(samplers[0], kDeadline, args...));
  std::vector<Handle> handles;
  for (const auto& s : samplers) handles.push_back(self->request(s, kDeadline, args...));
  std::vector<Encoded> replies(samplers.size());
  for (size_t i = 0; i < handles.size(); ++i) {
    std::string failure;
    handles[i].receive([&](Encoded& r) { replies[i] = std::move(r); },
                       [&](caf::error& e) { failure = system.render(e); });
    if (!failure.empty()) throw Error("sampler " + std::to_string(i) + " did not answer: " + failure);
  }
  return replies;
}

struct Round {
  std::vector<RunReport> reports;  // per sampler
  double seconds = 0;              // wall time of the measured runs, all samplers at once
  double cpu_seconds = 0;          // of the processes involved, over the measured runs
  double driver_cpu_seconds = 0;   // of this process, which only drives in (c)
  int64_t batches() const {
    int64_t n = 0;
    for (const auto& r : reports) n += r.batches;
    return n;
  }
  double cpu_ms_per_batch() const { return 1000 * cpu_seconds / static_cast<double>(batches()); }
  double batches_per_second() const {
    int64_t batches = 0;
    for (const auto& r : reports) batches += r.batches;
    return static_cast<double>(batches) / seconds;
  }
  double edges_per_second() const {
    int64_t edges = 0;
    for (const auto& r : reports) edges += r.edges;
    return static_cast<double>(edges) / seconds;
  }
};

// One epoch on every sampler at once: warm-up batches, then `batches` measured. `pids`: the
// processes whose CPU time the batches cost.
Round run_samplers(caf::actor_system& system, const std::vector<sampler_actor>& samplers, const LoaderBenchOptions& o,
                   uint64_t epoch, const std::vector<pid_t>& pids) {
  int64_t batches = o.num_batches;
  for (Encoded& ack : ask_all(system, samplers, epoch_atom::value, o.seed, epoch, o.batch_size)) {
    const int64_t available = decode_sampler_ack(Span<const char>(ack.bytes));
    if (available <= kWarmupBatches) {
      throw UsageError("--batch-size: an epoch of a partition has only " + std::to_string(available) + " batches");
    }
    batches = std::min(batches, available - kWarmupBatches);
  }
  ask_all(system, samplers, run_atom::value, int64_t{kWarmupBatches}, int64_t{0});
  const double cpu_before = cpu_seconds(pids), driver_before = cpu_seconds(::getpid());
  Stopwatch watch;
  // All samplers over the same time: one that finishes its batches early would otherwise
  // leave the machine to the others and skew the total.
  const auto window = static_cast<int64_t>(o.seconds * 1000);
  std::vector<Encoded> replies = ask_all(system, samplers, run_atom::value, batches, window);
  Round round;
  round.seconds = watch.seconds();
  round.cpu_seconds = cpu_seconds(pids) - cpu_before;
  round.driver_cpu_seconds = cpu_seconds(::getpid()) - driver_before;
  for (Encoded& r : replies) round.reports.push_back(decode_run_report(Span<const char>(r.bytes)));
  return round;
}

// `addresses`: of the daemons hosting the partitions (empty in one process), so that the
// samplers' daemons connect to each other instead of talking through this process.
void wire(caf::actor_system& system, const std::vector<sampler_actor>& samplers,
          const std::vector<caf::actor>& partitions, const std::vector<std::string>& addresses = {}) {
  for (Encoded& ack : ask_all(system, samplers, partitions_atom::value, partitions, addresses)) {
    decode_sampler_ack(Span<const char>(ack.bytes));
  }
}

// The trainer's Loader (DistributedSampler workers) over partition 0 here and partition 1
// behind `remote`: batches/s and edges/s of next() over the measured batches.
std::pair<double, double> run_loader(caf::actor_system& system, const std::string& dir, const partition_actor& remote,
                                     const SamplerConfig& config, const LoaderBenchOptions& o, uint64_t epoch) {
  PartitionStores own = open_partition_stores(dir, 0);
  PartitionFolder folder(dir);
  EpochPlan plan = plan_epoch(train_seeds(dir, 0), o.batch_size, o.seed, epoch);
  plan.offsets.resize(std::min<size_t>(plan.offsets.size(), kWarmupBatches + o.num_batches + 1));
  auto make_sampler = [&]() -> BatchSampler {
    auto sampler = std::make_shared<DistributedSampler>(
        system, folder.book(), std::vector<PartitionRef>{PartitionRef::local(own.topology, own.features),
                                                         PartitionRef::remote(remote)},
        config, kDeadline);
    return [sampler](Span<const int64_t> seeds, const SampleKey& key) { return sampler->sample(seeds, key); };
  };
  Loader loader(std::move(plan), make_sampler, {1, o.prefetch, kDeadline});
  for (int b = 0; b < kWarmupBatches; ++b) loader.next();
  Stopwatch watch;
  int64_t edges = 0, batches = 0;
  while (loader.has_next()) {
    edges += static_cast<int64_t>(loader.next().row.size());
    ++batches;
  }
  const double seconds = watch.seconds();
  return {static_cast<double>(batches) / seconds, static_cast<double>(edges) / seconds};
}

std::string start_daemon(ChildProcess& daemon) {
  const std::regex ready(R"(partita daemon listening on (127\.0\.0\.1:[0-9]+)\n)");
  for (int i = 0; i < 3000; ++i) {
    std::smatch match;
    std::string out = daemon.output_so_far();
    if (std::regex_search(out, match, ready)) return match[1];
    if (!daemon.running()) break;
    std::this_thread::sleep_for(10ms);
  }
  throw Error("the benchmark's daemon did not start: " + daemon.errors_so_far());
}

std::string per_sampler(const Round& round) {
  std::string text;
  for (size_t i = 0; i < round.reports.size(); ++i) {
    char item[64];
    std::snprintf(item, sizeof(item), "%sp%zu %.1f", text.empty() ? "" : ", ", i,
                  round.reports[i].batches / round.reports[i].seconds);
    text += item;
  }
  return text;
}

}  // namespace

void run_loader_bench(const LoaderBenchOptions& o) {
  std::string workdir = o.workdir;
  const bool own_workdir = workdir.empty();
  if (own_workdir) {
    const char* tmp = std::getenv("TMPDIR");
    workdir = std::string(tmp != nullptr ? tmp : "/tmp") + "/partita-loader-bench-" + std::to_string(::getpid());
  }
  fs::create_directories(workdir);
  struct Cleanup {
    std::string dir;
    bool remove;
    ~Cleanup() {
      std::error_code ec;
      if (remove) fs::remove_all(dir, ec);
    }
  } cleanup{workdir, own_workdir};
  prepare_graph(o, workdir);
  const std::string one_dir = workdir + "/parts1", two_dir = workdir + "/parts2";

  SamplerConfig config;
  config.fanouts = {o.fanouts};
  SamplerOptions sampler_options;
  sampler_options.config = config;
  sampler_options.prefetch = o.prefetch;
  sampler_options.deadline = kDeadline;
  runtime::ActorSystemOptions system_options;
  add_protocol_types(system_options);
  runtime::ActorSystem system(system_options);

  // (a): one sampler, every partition (the one) read directly.
  PartitionFolder one(one_dir), two(two_dir);
  std::vector<sampler_actor> a_samplers{spawn_sampler_actor(system, one.book(), 0, open_partition_stores(one_dir, 0),
                                                            train_seeds(one_dir, 0), sampler_options)};
  wire(system, a_samplers, {caf::actor()});

  // (b): a partition actor and a sampler per partition, in this process.
  std::vector<caf::actor> b_partitions;
  std::vector<sampler_actor> b_samplers;
  for (int p = 0; p < 2; ++p) {
    PartitionStores stores = open_partition_stores(two_dir, p);
    b_partitions.push_back(caf::actor_cast<caf::actor>(
        spawn_partition_actor(system, stores.topology, stores.features, config)));
    b_samplers.push_back(spawn_sampler_actor(system, two.book(), p, stores, train_seeds(two_dir, p), sampler_options));
  }
  wire(system, b_samplers, b_partitions);

  // (c): the same on two daemons.
  std::vector<std::unique_ptr<ChildProcess>> daemons;
  std::vector<runtime::DaemonConnection> connections;
  std::vector<caf::actor> c_partitions;
  std::vector<sampler_actor> c_samplers;
  for (int p = 0; p < 2; ++p) {
    daemons.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        self_executable(), "--log-level", "warn", "daemon", "--listen", "127.0.0.1:0", "--name", "bench-" + std::to_string(p)}));
    connections.push_back(runtime::DaemonConnection::connect(system, start_daemon(*daemons.back()), 30s));
    runtime::Settings settings{{"dir", two_dir},
                               {"part", std::to_string(p)},
                               {"fanouts", fanouts_text(o.fanouts)},
                               {"prefetch", std::to_string(o.prefetch)},
                               {"deadline_ms", std::to_string(std::chrono::milliseconds(kDeadline).count())}};
    c_partitions.push_back(connections.back().spawn("partition", settings, kDeadline));
    c_samplers.push_back(caf::actor_cast<sampler_actor>(connections.back().spawn("sampler", settings, kDeadline)));
  }
  std::vector<std::string> c_addresses;
  for (const auto& c : connections) c_addresses.push_back(c.address());
  wire(system, c_samplers, c_partitions, c_addresses);
  const partition_actor remote = caf::actor_cast<partition_actor>(c_partitions[1]);

  std::printf("\nRMAT %lld nodes, %.0f directed edges, %lld float32 features; fanouts [%s], batch %lld\n"
              "each sampler: its partition's training nodes, %d warm-up batches, then for %.1f s (at most %d "
              "batches), %d in flight, features and labels included; medians of %d rounds\n\n",
              (long long)o.num_nodes, o.num_nodes * o.avg_degree, (long long)o.feature_dim,
              fanouts_text(o.fanouts).c_str(), (long long)o.batch_size, kWarmupBatches, o.seconds, o.num_batches,
              o.prefetch, o.repeat);

  std::vector<double> a_rate, a_edges, b_rate, b_edges, c_rate, c_edges, l_rate, l_edges, a_cpu, b_cpu, c_cpu;
  const std::vector<pid_t> here{::getpid()};
  std::vector<pid_t> everyone{::getpid()};
  for (const auto& d : daemons) everyone.push_back(d->pid());
  std::vector<std::string> b_split, c_split;
  for (int r = 0; r < o.repeat; ++r) {
    const uint64_t epoch = static_cast<uint64_t>(r);
    Round a = run_samplers(system, a_samplers, o, epoch, here);
    Round b = run_samplers(system, b_samplers, o, epoch, here);
    Round c = run_samplers(system, c_samplers, o, epoch, everyone);
    a_cpu.push_back(a.cpu_ms_per_batch());
    b_cpu.push_back(b.cpu_ms_per_batch());
    c_cpu.push_back(c.cpu_ms_per_batch());
    auto [loader_rate, loader_edges] = run_loader(system, two_dir, remote, config, o, epoch);
    a_rate.push_back(a.batches_per_second());
    a_edges.push_back(a.edges_per_second());
    b_rate.push_back(b.batches_per_second());
    b_edges.push_back(b.edges_per_second());
    c_rate.push_back(c.batches_per_second());
    c_edges.push_back(c.edges_per_second());
    l_rate.push_back(loader_rate);
    l_edges.push_back(loader_edges);
    b_split.push_back(per_sampler(b));
    c_split.push_back(per_sampler(c));
    std::printf("round %d: (a) %.1f  (b) %.1f [%s]  (c) %.1f [%s]  loader %.1f batches/s; "
                "CPU ms/batch (a) %.0f (b) %.0f (c) %.0f (%.1f of it here)\n",
                r + 1, a_rate.back(), b_rate.back(), b_split.back().c_str(), c_rate.back(), c_split.back().c_str(),
                loader_rate, a_cpu.back(), b_cpu.back(), c_cpu.back(),
                1000 * c.driver_cpu_seconds / static_cast<double>(c.batches()));
    std::fflush(stdout);
  }

  const double a_med = median(a_rate), b_med = median(b_rate), c_med = median(c_rate), l_med = median(l_rate);
  std::printf("\n%-66s %10s %10s %7s %12s\n", "configuration (medians)", "batches/s", "edges/s", "vs (a)",
              "CPU ms/batch");
  std::printf("%-66s %10.1f %9.2fM %7.2f %12.1f\n", "(a) 1 partition, in-process, one sampler", a_med,
              median(a_edges) / 1e6, 1.0, median(a_cpu));
  std::printf("%-66s %10.1f %9.2fM %7.2f %12.1f\n", "(b) 2 partitions in-process, 2 samplers at once (total)", b_med,
              median(b_edges) / 1e6, b_med / a_med, median(b_cpu));
  std::printf("%-66s %10.1f %9.2fM %7.2f %12.1f\n",
              "(c) 2 partitions on 2 daemons, a sampler on each, at once (total)", c_med, median(c_edges) / 1e6,
              c_med / a_med, median(c_cpu));
  std::printf("%-66s %10.1f %10s %7s   (c) / PyG: %.1fx\n", "    PyG distributed loader, 2 ranks (quoted)",
              kPygDistributedBatchesPerSecond, "", "", c_med / kPygDistributedBatchesPerSecond);
  std::printf("%-66s %10.1f %9.2fM %7.2f\n", "the trainer's Loader here (1 worker), partition 1 on a daemon", l_med,
              median(l_edges) / 1e6, l_med / a_med);
  // Ratios are taken within each round, where both sides saw the same load from elsewhere.
  std::vector<double> c_over_a;
  for (size_t r = 0; r < c_rate.size(); ++r) c_over_a.push_back(c_rate[r] / a_rate[r]);
  std::printf("median of the rounds' ratios: (c)/(a) %.2f (remote feature transfer: `partita bench transfer`)\n",
              median(c_over_a));
  std::printf("goals: (c) >= %.0f batches/s (10x PyG): %s; (c)/(a) >= 0.5: %s\n",
              10 * kPygDistributedBatchesPerSecond, c_med >= 10 * kPygDistributedBatchesPerSecond ? "met" : "not met",
              median(c_over_a) >= 0.5 ? "met" : "not met");

  for (const auto& s : a_samplers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  for (const auto& s : b_samplers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  for (const auto& p : b_partitions) caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  for (auto& c : connections) c.request_shutdown();
  for (auto& d : daemons) d->wait(30);
}

}  // namespace partita::bench
