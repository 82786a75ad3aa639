#include "bench/loader_bench.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "actors/partition_actor.h"
#include "actors/sampler_actor.h"
#include "actors/sampler_client.h"
#include "base/error.h"
#include "base/progress.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/input_graph.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "graph/batch_assembly.h"
#include "graph/cache_bound.h"
#include "graph/epoch_plan.h"
#include "graph/row_cache.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "runtime/client.h"
#include "runtime/daemon_child.h"

namespace partita::bench {

using namespace std::chrono_literals;

namespace {

// PyG's distributed loader, 2 ranks, on this machine class (a quoted figure, not rerun here).
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


std::string fanouts_text(const std::vector<int>& fanouts) {
  std::string text;
  for (int f : fanouts) text += (text.empty() ? "" : ",") + std::to_string(f);
  return text;
}

SamplerSeeds train_seeds(const std::string& dir, int part) {
  PartitionFolder folder(dir);
  const PartitionData data = folder.load_part(part);
  Span<const int64_t> train = data.train_idx.as<int64_t>();
  return {std::vector<int64_t>(train.begin(), train.end()), {}, {}};
}

// Generates (or reads --input) and partitions the graph into workdir/parts1 and parts2,
// unless a folder from the same options (the same input files) is there already.
void prepare_graph(const LoaderBenchOptions& o, const Workdir& workdir) {
  std::ostringstream params;
  if (o.input.empty()) {
    params << "nodes " << o.num_nodes << " degree " << o.avg_degree << " features " << o.feature_dim;
  } else {
    params << "input " << input_fingerprint(o.input);
  }
  params << " seed " << o.seed << "\n";
  const std::string stamp = "loader-bench-params.txt";
  if (workdir.has(stamp, params.str(), "parts1/META.json") && workdir.has(stamp, params.str(), "parts2/META.json")) {
    return;
  }
  RmatOptions rmat;
  rmat.num_nodes = o.num_nodes;
  rmat.avg_degree = o.avg_degree;
  rmat.feature_dim = o.feature_dim;
  rmat.num_classes = 16;
  rmat.seed = o.seed;
  const Dataset d = input_or_rmat(o.input, rmat);
  for (int k : {1, 2}) {
    PartitionOptions options;
    options.num_parts = k;
    options.seed = o.seed;
    WriteOptions write;
    write.overwrite = true;
    partition_dataset(d, options, workdir.path() + "/parts" + std::to_string(k), write);
  }
  workdir.mark(stamp, params.str());
}

// What the consumers of one configuration took in one round.
struct Round {
  int64_t batches = 0, nodes = 0, edges = 0;
  double seconds = 0;            // wall time, all consumers at once
  double cpu_seconds = 0;        // of the processes involved
  std::vector<double> per_sampler;  // batches/s of each sampler
  double batches_per_second() const { return static_cast<double>(batches) / seconds; }
  double cpu_ms_per_batch() const { return 1000 * cpu_seconds / static_cast<double>(batches); }
};

// One epoch of every sampler at once, each drained by a thread of its own exactly as a
// trainer takes its batches (SamplerClient: epoch, then next; by move in one process):
// warm-up batches, then batches for `seconds` (at most `num_batches` each), all consumers
// over the same time, so that one finishing early cannot leave the machine to the others.
// `pids`: the processes whose CPU time the batches cost.
Round drain(caf::actor_system& system, const std::vector<sampler_actor>& samplers, const LoaderBenchOptions& o,
            uint64_t epoch, const std::vector<pid_t>& pids) {
  const size_t n = samplers.size();
  std::vector<std::unique_ptr<SamplerClient>> clients;
  int64_t batches = o.num_batches;
  for (size_t i = 0; i < n; ++i) {
    clients.push_back(std::make_unique<SamplerClient>(system, samplers[i], kDeadline, "sampler " + std::to_string(i)));
    const int64_t available = clients[i]->start_epoch("train", o.seed, epoch, o.batch_size, true);
    if (available <= kWarmupBatches) {
      throw UsageError("--batch-size: an epoch of a partition has only " + std::to_string(available) + " batches");
    }
    batches = std::min(batches, available - kWarmupBatches);
  }
  std::vector<Round> taken(n);
  std::vector<std::string> failures(n);
  std::atomic<int> warm{0};
  double cpu_before = 0;
  Stopwatch watch;
  std::mutex start_mutex;
  std::condition_variable start;
  bool go = false;
  std::vector<std::thread> consumers;
  for (size_t i = 0; i < n; ++i) {
    consumers.emplace_back([&, i] {
      try {
        for (int b = 0; b < kWarmupBatches; ++b) clients[i]->next();
        {
          std::unique_lock<std::mutex> lock(start_mutex);
          if (++warm == static_cast<int>(n)) {
            cpu_before = cpu_seconds(pids);
            watch.restart();
            go = true;
            start.notify_all();
          }
          start.wait(lock, [&] { return go; });
        }
        Stopwatch own;
        while (taken[i].batches < batches && own.seconds() < o.seconds) {
          MiniBatch batch = clients[i]->next();
          ++taken[i].batches;
          taken[i].nodes += static_cast<int64_t>(batch.node_ids.size());
          taken[i].edges += static_cast<int64_t>(batch.row.size());
          clients[i]->give_back(std::move(batch.x));  // as a trainer does after its step
        }
        taken[i].seconds = own.seconds();
      } catch (const Error& e) {
        failures[i] = e.what();
        std::lock_guard<std::mutex> lock(start_mutex);
        go = true;
        start.notify_all();
      }
    });
  }
  for (auto& c : consumers) c.join();
  Round round;
  round.seconds = watch.seconds();
  round.cpu_seconds = cpu_seconds(pids) - cpu_before;
  for (size_t i = 0; i < n; ++i) {
    if (!failures[i].empty()) throw Error(failures[i]);
    round.batches += taken[i].batches;
    round.nodes += taken[i].nodes;
    round.edges += taken[i].edges;
    round.per_sampler.push_back(static_cast<double>(taken[i].batches) / taken[i].seconds);
  }
  return round;
}

// `addresses`: of the daemons hosting the partitions (empty in one process), so that the
// samplers' nodes connect to each other instead of talking through this process.
void wire(caf::actor_system& system, const std::vector<sampler_actor>& samplers,
          const std::vector<caf::actor>& partitions, const std::vector<std::string>& addresses = {}) {
  for (const auto& s : samplers) wire_sampler(system, s, partitions, addresses, kDeadline);
}

std::string per_sampler(const Round& round) {
  std::string text;
  for (size_t i = 0; i < round.per_sampler.size(); ++i) {
    char item[64];
    std::snprintf(item, sizeof(item), "%sp%zu %.1f", text.empty() ? "" : ", ", i, round.per_sampler[i]);
    text += item;
  }
  return text;
}

// The cache sizes whose bound is always printed (% of partition 1's rows), beside those measured.
const std::vector<double> kBoundPercents{5, 10, 20, 30, 50};
// The lookups the frequency policy counts before choosing (RowCache::kCountedLookups).
constexpr int kFrequencyCounted = RowCache::kCountedLookups;
// Epochs the bound's batches are drawn from: apart from the measured ones (0.., 1000).
constexpr uint64_t kBoundFirstEpoch = 5000;
// Look-ahead windows measured (batches whose rows a cache sees before it chooses): up to the
// loader's default batches in flight.
constexpr int64_t kAheadWindows = 2;

// The bound of any cache of partition 1's rows for the sampler of partition 0
// (graph/cache_bound.h), from `batches` batches it would build (the same plan, sampler and
// fanouts), sampled in this process with both partitions' stores: the first half ranks, the
// second half scores. Per cache size (`percents` of partition 1's rows): the share of the
// asked rows the top k covers in-sample (ranked and scored on all batches) and held out,
// what the degree ranking (the kDegree policy's hot set) and a ranking on the first
// kFrequencyCounted batches (the kFrequency policy's) cover of the held-out half, what a cache
// that saw the next kAheadWindows batches' rows (the degree ranking after them) or knew every
// held-out batch to come serves of them, and per hop, the held-out coverage of the rows that
// hop asked for.
struct CacheBound {
  std::vector<double> percents;
  std::vector<size_t> rows;  // per size
  std::vector<double> in_sample, held_out, degree, frequency;  // per size
  std::vector<double> clairvoyant;  // per size: Belady's MIN over the held-out batches
  std::vector<std::vector<double>> ahead;  // [window - 1][size]: the degree ranking seeing the next batches
  std::vector<double> hop_share;                // per hop (1..): share of the asked rows
  std::vector<std::vector<double>> hop_held_out;  // [hop][size]
  // The smallest cache, in whole % of partition 1's rows, whose top k serves half of the
  // asked rows (the goal for a cache of 10%), in-sample and held out; 0: none.
  int half_in_sample = 0, half_held_out = 0;
  int64_t batches = 0, epochs = 0, batches_per_epoch = 0;
  double rows_per_batch = 0;
};

CacheBound measure_cache_bound(const std::string& two_dir, const PartitionFolder& two, const SamplerConfig& config,
                               const LoaderBenchOptions& o, std::vector<double> percents) {
  const PartitionBook& book = two.book();
  const int64_t num_hops = config.num_hops();
  const int64_t half = o.cache_bound_batches / 2;
  RowDemand all(book.num_nodes()), ranking_half(book.num_nodes()), counted(book.num_nodes()),
      scored_half(book.num_nodes());
  std::vector<RowDemand> scored_hop(static_cast<size_t>(num_hops), RowDemand(book.num_nodes()));
  std::vector<std::vector<int64_t>> scored_batches;  // the held-out batches' rows, in order
  BatchAssembly assembly(book, config, FeatureNames{"", ""},
                         {open_partition_stores(two_dir, 0), open_partition_stores(two_dir, 1)});
  const SamplerSeeds seeds = train_seeds(two_dir, 0);
  Progress progress("cache bound: sampling", 2 * half, "batches");
  std::vector<int64_t> remote;
  std::vector<std::vector<int64_t>> remote_by_hop(static_cast<size_t>(num_hops));
  MiniBatch batch;
  CacheBound bound;
  for (uint64_t epoch = kBoundFirstEpoch; bound.batches < 2 * half; ++epoch) {
    const EpochPlan plan = plan_epoch(Span<const int64_t>(seeds.train), o.batch_size, o.seed, epoch, true);
    ++bound.epochs;
    bound.batches_per_epoch = plan.num_batches();
    if (plan.num_batches() < 1 || plan.batch(0).size() < static_cast<size_t>(o.batch_size)) {
      throw UsageError("--batch-size: partition 0 has fewer than " + std::to_string(o.batch_size) + " training nodes");
    }
    for (int64_t b = 0; b < plan.num_batches() && bound.batches < 2 * half; ++b) {
      if (plan.batch(b).size() < static_cast<size_t>(o.batch_size)) continue;  // the last, smaller one
      assembly.start(plan.batch(b), plan.key(b), std::move(batch));
      while (assembly.sampling()) {
        for (int p = 0; p < assembly.num_parts(); ++p) {
          if (assembly.hop_needs(p)) assembly.sample_local(p);
        }
        assembly.finish_hop();
      }
      assembly.start_rows();
      batch = assembly.finish();
      // Partition 1's rows of the batch, and the hop that added each (node_ids is in hop order).
      remote.clear();
      for (auto& ids : remote_by_hop) ids.clear();
      int64_t position = 0;
      for (int64_t hop = 0; hop < static_cast<int64_t>(batch.num_sampled_nodes.size()); ++hop) {
        for (int64_t k = 0; k < batch.num_sampled_nodes[hop]; ++k, ++position) {
          const int64_t id = batch.node_ids[position];
          if (book.owner(id) != 1) continue;
          remote.push_back(id);
          if (hop == 0) throw Error("bench loader: a seed of partition 0 is owned by partition 1");
          remote_by_hop[hop - 1].push_back(id);
        }
      }
      all.add_batch(remote);
      if (bound.batches < half) {
        ranking_half.add_batch(remote);
        if (bound.batches < kFrequencyCounted) counted.add_batch(remote);
      } else {
        scored_half.add_batch(remote);
        scored_batches.push_back(remote);
        for (int64_t hop = 0; hop < num_hops; ++hop) scored_hop[hop].add_batch(remote_by_hop[hop]);
      }
      ++bound.batches;
      progress.advance();
    }
  }
  progress.done(false);

  bound.percents = std::move(percents);
  for (double percent : bound.percents) {
    bound.rows.push_back(static_cast<size_t>(percent / 100 * static_cast<double>(book.size(1))));
  }
  const size_t most = *std::max_element(bound.rows.begin(), bound.rows.end());
  bound.in_sample = cache_coverage(all.ranked(most), all, bound.rows);
  const std::vector<int64_t> held_out_ranking = ranking_half.ranked(most);
  bound.held_out = cache_coverage(held_out_ranking, scored_half, bound.rows);
  bound.frequency = cache_coverage(counted.ranked(most), scored_half, bound.rows);
  const PartitionStores local = open_partition_stores(two_dir, 0);
  const std::vector<int64_t> degree_ranking = rank_remote_by_edges(*local.topology, most);
  bound.degree = cache_coverage(degree_ranking, scored_half, bound.rows);
  bound.clairvoyant = lookahead_coverage(scored_batches, book.num_nodes(), half, {}, bound.rows);
  for (int64_t window = 1; window <= kAheadWindows; ++window) {
    bound.ahead.push_back(lookahead_coverage(scored_batches, book.num_nodes(), window, degree_ranking, bound.rows));
  }
  std::vector<std::vector<int64_t>>().swap(scored_batches);
  for (int64_t hop = 0; hop < num_hops; ++hop) {
    bound.hop_share.push_back(static_cast<double>(scored_hop[hop].asked()) /
                              static_cast<double>(std::max<uint64_t>(1, scored_half.asked())));
    bound.hop_held_out.push_back(cache_coverage(held_out_ranking, scored_hop[hop], bound.rows));
  }
  bound.rows_per_batch = static_cast<double>(all.asked()) / static_cast<double>(bound.batches);
  std::vector<size_t> whole_percents;
  for (int percent = 1; percent <= 100; ++percent) {
    whole_percents.push_back(static_cast<size_t>(percent * book.size(1) / 100));
  }
  const size_t every = static_cast<size_t>(book.size(1));
  const std::vector<double> in_sample = cache_coverage(all.ranked(every), all, whole_percents);
  const std::vector<double> held_out = cache_coverage(ranking_half.ranked(every), scored_half, whole_percents);
  for (int percent = 100; percent >= 1; --percent) {
    if (in_sample[percent - 1] >= 0.5) bound.half_in_sample = percent;
    if (held_out[percent - 1] >= 0.5) bound.half_held_out = percent;
  }
  return bound;
}

void print_cache_bound(const CacheBound& bound, const LoaderBenchOptions& o) {
  std::printf("\nthe best any cache of partition 1's rows can do (graph/cache_bound.h): the static top k by batches "
              "asking, from %lld batches of partition 0's sampler (fanouts [%s], batch %lld: %.0f of partition 1's "
              "rows each; %lld epochs of %lld batches); ranked on the first %lld, scored on the other %lld (held "
              "out) or on all (in-sample)\n",
              (long long)bound.batches, fanouts_text(o.fanouts).c_str(), (long long)o.batch_size,
              bound.rows_per_batch, (long long)bound.epochs, (long long)bound.batches_per_epoch,
              (long long)(bound.batches / 2), (long long)(bound.batches / 2));
  std::printf("%-22s %9s %8s %10s %9s %15s %18s", "cache of partition 1", "rows", "ceiling", "in-sample",
              "held out", "degree ranking", ("first " + std::to_string(kFrequencyCounted) + " batches").c_str());
  for (int64_t window = 1; window <= kAheadWindows; ++window) std::printf(" %7s %lld", "ahead", (long long)window);
  std::printf(" %12s\n", "clairvoyant");
  for (size_t k = 0; k < bound.rows.size(); ++k) {
    std::printf("%20g%% %9zu %8.3f %10.3f %9.3f %15.3f %18.3f", bound.percents[k], bound.rows[k],
                std::min(1.0, static_cast<double>(bound.rows[k]) / bound.rows_per_batch), bound.in_sample[k],
                bound.held_out[k], bound.degree[k], bound.frequency[k]);
    for (const auto& ahead : bound.ahead) std::printf(" %9.3f", ahead[k]);
    std::printf(" %12.3f\n", bound.clairvoyant[k]);
  }
  std::printf("(shares of the asked rows a cache holding those rows serves; ceiling: rows / rows asked per batch, "
              "what k rows would serve if every batch asked for all of them; degree ranking: the degree policy's "
              "hot set, first %d batches: the frequency policy's, both scored on the held-out batches; ahead W: "
              "a cache that sees the next W batches' rows and keeps those first, then the degree ranking; "
              "clairvoyant: one that knows every batch to come, Belady's MIN: the bound of any cache of k rows)\n",
              kFrequencyCounted);
  std::printf("half of the asked rows served from a cache of %d%% of partition 1's rows (in-sample), %d%% (held out)\n",
              bound.half_in_sample, bound.half_held_out);
  std::printf("\nper hop (held-out batches): share of partition 1's asked rows, and the share of that hop's rows the "
              "held-out top k covers / the hop's share of the rows it misses\n%-6s %8s", "hop", "asked");
  for (double percent : bound.percents) std::printf(" %12g%%", percent);
  std::printf("\n");
  for (size_t hop = 0; hop < bound.hop_share.size(); ++hop) {
    std::printf("%-6zu %8.3f", hop + 1, bound.hop_share[hop]);
    for (size_t k = 0; k < bound.percents.size(); ++k) {
      const double covered = bound.hop_held_out[hop][k];
      const double missed = 1 - bound.held_out[k];
      std::printf("  %6.3f/%-6.3f", covered, missed > 0 ? bound.hop_share[hop] * (1 - covered) / missed : 0.0);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

}  // namespace

void run_loader_bench(const LoaderBenchOptions& o) {
  if (!o.input.empty()) check_input_graph(o.input, {"x.npy", "y.npy", "train_idx.npy"});
  const Workdir workdir(o.workdir, "loader-bench");
  prepare_graph(o, workdir);
  const std::string one_dir = workdir.path() + "/parts1", two_dir = workdir.path() + "/parts2";

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

  // (c): the trainer's path across processes: the sampler of partition 0 here (its
  // trainer's process), partition 1 on a daemon, reached over its feature channel.
  runtime::DaemonChild daemon = runtime::start_daemon_child(self_executable(), {"--name", "bench-1"});
  runtime::DaemonConnection connection = runtime::DaemonConnection::connect(system, daemon.address, 30s);
  const caf::actor remote_partition = connection.spawn(
      "partition", {{"dir", two_dir}, {"part", "1"}, {"fanouts", fanouts_text(o.fanouts)}}, kDeadline);
  auto c_counts = std::make_shared<RemoteRowCounts>();
  SamplerOptions counted = sampler_options;
  counted.remote_counts = c_counts;
  std::vector<sampler_actor> c_samplers{spawn_sampler_actor(system, two.book(), 0, open_partition_stores(two_dir, 0),
                                                            train_seeds(two_dir, 0), counted)};
  wire(system, c_samplers, {b_partitions[0], remote_partition});

  // (c) with caches of partition 1's rows: one sampler per size and policy.
  struct Cached {
    std::string name;
    double percent = 0;
    std::shared_ptr<RowCache> cache;
    std::shared_ptr<RemoteRowCounts> counts = std::make_shared<RemoteRowCounts>();
    std::vector<sampler_actor> sampler;
    std::vector<double> rate, ratio, bytes, hit, cpu;
  };
  std::vector<Cached> cached;
  {
    const PartitionStores stores = open_partition_stores(two_dir, 0);
    std::vector<size_t> columns{stores.features->get("node", "x")->row_bytes(), stores.features->get("node", "y")->row_bytes()};
    for (const std::string& policy_name : o.cache_policies) {
      const CachePolicy policy = parse_cache_policy(policy_name, "--cache-policies");
      for (double percent : o.cache_percents) {
        const auto rows = static_cast<size_t>(percent / 100 * static_cast<double>(two.book().size(1)));
        Cached c;
        char name[96];
        std::snprintf(name, sizeof(name), "    cache %g%% of partition 1 (%zu rows, %s)", percent, rows,
                      policy_name.c_str());
        c.name = name;
        c.percent = percent;
        c.cache = make_remote_row_cache(policy, RowCache::budget_for(rows, columns[0] + columns[1]), columns,
                                        *stores.topology);
        SamplerOptions options = sampler_options;
        options.cache = c.cache;
        options.remote_counts = c.counts;
        c.sampler.push_back(spawn_sampler_actor(system, two.book(), 0, stores, train_seeds(two_dir, 0), options));
        wire(system, c.sampler, {b_partitions[0], remote_partition});
        cached.push_back(std::move(c));
      }
    }
  }

  std::printf("\n%s: %lld nodes, %lld directed edges, %lld float32 features; fanouts [%s], batch %lld\n"
              "each sampler: its partition's training nodes, %d in flight, features and labels included, taken by "
              "a consumer thread as a trainer takes them (epoch, next; by move); %d warm-up batches, then for "
              "%.1f s (at most %d batches); medians of %d interleaved rounds\n\n",
              o.input.empty() ? "RMAT" : o.input.c_str(), (long long)one.meta().num_nodes,
              (long long)one.meta().num_edges, (long long)one.meta().feature_dim,
              fanouts_text(o.fanouts).c_str(), (long long)o.batch_size, o.prefetch, kWarmupBatches, o.seconds,
              o.num_batches, o.repeat);

  std::vector<double> a_rate, b_rate, c_rate, a_cpu, b_cpu, c_cpu, c_over_a, c_bytes;
  std::vector<double> nodes_per_batch, edges_per_batch;
  const std::vector<pid_t> here{::getpid()};
  const std::vector<pid_t> everyone{::getpid(), daemon.process->pid()};
  // Bytes per batch that crossed the channel during a drain of `sampler`, from its counts.
  const auto measured = [&](const std::vector<sampler_actor>& sampler, RemoteRowCounts& counts, uint64_t epoch,
                            Round& round) {
    const uint64_t bytes = counts.bytes, batches = counts.batches;
    round = drain(system, sampler, o, epoch, everyone);
    return static_cast<double>(counts.bytes - bytes) / static_cast<double>(std::max<uint64_t>(1, counts.batches - batches));
  };
  CacheBound bound;
  if (!cached.empty()) {
    std::vector<double> percents = kBoundPercents;
    percents.insert(percents.end(), o.cache_percents.begin(), o.cache_percents.end());
    std::sort(percents.begin(), percents.end());
    percents.erase(std::unique(percents.begin(), percents.end()), percents.end());
    bound = measure_cache_bound(two_dir, two, config, o, percents);
    print_cache_bound(bound, o);
    std::printf("\n");
    for (Cached& c : cached) drain(system, c.sampler, o, 1000, everyone);  // warms the caches (untimed)
  }
  for (int r = 0; r < o.repeat; ++r) {
    const uint64_t epoch = static_cast<uint64_t>(r);
    Round a = drain(system, a_samplers, o, epoch, here);
    Round b = drain(system, b_samplers, o, epoch, here);
    Round c;
    c_bytes.push_back(measured(c_samplers, *c_counts, epoch, c));
    for (Cached& k : cached) {
      Round kr;
      const RowCacheCounts before = k.cache->counts();
      k.bytes.push_back(measured(k.sampler, *k.counts, epoch, kr));
      const RowCacheCounts after = k.cache->counts();
      k.rate.push_back(kr.batches_per_second());
      k.cpu.push_back(kr.cpu_ms_per_batch());
      k.ratio.push_back(kr.batches_per_second() / c.batches_per_second());
      k.hit.push_back(static_cast<double>(after.hits - before.hits) /
                      static_cast<double>(std::max<uint64_t>(1, after.lookups - before.lookups)));
      if (k.cache->memory_bytes() > k.cache->budget_bytes()) throw Error("bench loader: a cache outgrew its budget");
    }
    a_rate.push_back(a.batches_per_second());
    b_rate.push_back(b.batches_per_second());
    c_rate.push_back(c.batches_per_second());
    a_cpu.push_back(a.cpu_ms_per_batch());
    b_cpu.push_back(b.cpu_ms_per_batch());
    c_cpu.push_back(c.cpu_ms_per_batch());
    c_over_a.push_back(c_rate.back() / a_rate.back());
    nodes_per_batch.push_back(static_cast<double>(a.nodes) / static_cast<double>(a.batches));
    edges_per_batch.push_back(static_cast<double>(a.edges) / static_cast<double>(a.batches));
    std::printf("round %d: (a) %.1f  (b) %.1f [%s]  (c) %.1f batches/s; CPU ms/batch (a) %.0f (b) %.0f (c) %.0f\n",
                r + 1, a_rate.back(), b_rate.back(), per_sampler(b).c_str(), c_rate.back(), a_cpu.back(),
                b_cpu.back(), c_cpu.back());
    std::fflush(stdout);
  }

  const double a_med = median(a_rate), b_med = median(b_rate), c_med = median(c_rate);
  std::printf("\nper batch (a): %.0f nodes, %.0f edges (medians)\n", median(nodes_per_batch), median(edges_per_batch));
  std::printf("\n%-70s %10s %7s %12s\n", "configuration (medians)", "batches/s", "vs (a)", "CPU ms/batch");
  std::printf("%-70s %10.1f %7.2f %12.1f\n", "(a) 1 partition, in-process, one sampler", a_med, 1.0, median(a_cpu));
  std::printf("%-70s %10.1f %7.2f %12.1f\n", "(b) 2 partitions in-process, 2 samplers at once (total)", b_med,
              b_med / a_med, median(b_cpu));
  std::printf("%-70s %10.1f %7.2f %12.1f\n", "(c) 2 partitions, partition 1 on a daemon, the sampler of partition 0",
              c_med, median(c_over_a), median(c_cpu));
  std::printf("%-70s %10.1f\n", "    PyG distributed loader, 2 ranks (quoted)", kPygDistributedBatchesPerSecond);
  std::printf("\n(c)/(a), the median of the rounds' ratios: %.2f (goal >= 0.8: %s); remote feature transfer alone: "
              "`partita bench transfer`\n",
              median(c_over_a), median(c_over_a) >= 0.8 ? "met" : "not met");
  if (!cached.empty()) {
    const double off_bytes = median(c_bytes);
    std::printf("\n%-60s %10s %7s %15s %7s %8s %9s %12s\n", "(c) with a cache of partition 1's rows (medians)",
                "batches/s", "vs (c)", "remote MB/batch", "vs (c)", "hit rate", "best any", "CPU ms/batch");
    std::printf("%-60s %10.1f %7.2f %15.2f %7.2f %8s %9s %12.1f\n", "    no cache: (c)", c_med, 1.0, off_bytes / 1e6,
                1.0, "-", "-", median(c_cpu));
    for (const Cached& k : cached) {
      const size_t at = static_cast<size_t>(
          std::find(bound.percents.begin(), bound.percents.end(), k.percent) - bound.percents.begin());
      std::printf("%-60s %10.1f %7.2f %15.2f %7.2f %8.2f %9.2f %12.1f\n", k.name.c_str(), median(k.rate),
                  median(k.ratio), median(k.bytes) / 1e6, median(k.bytes) / off_bytes, median(k.hit),
                  bound.held_out[at], median(k.cpu));
    }
    std::printf("\nvs (c): the median of the rounds' ratios to (c) without cache, measured in the same rounds; remote "
                "MB/batch: feature rows requested over the channel per batch (x and y); hit rate: the share of "
                "partition 1's rows of a batch served by the cache; best any: the held-out bound above, the hit rate of the best "
                "static cache of that size. Caches warmed by one untimed round.\n");
  }

  for (const auto& s : c_samplers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  for (const auto& k : cached) caf::anon_send_exit(k.sampler[0], caf::exit_reason::user_shutdown);
  for (const auto& s : a_samplers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  for (const auto& s : b_samplers) caf::anon_send_exit(s, caf::exit_reason::user_shutdown);
  for (const auto& p : b_partitions) caf::anon_send_exit(p, caf::exit_reason::user_shutdown);
  connection.request_shutdown();
  daemon.process->wait(30);
}

}  // namespace partita::bench
