#include "bench/linkpred_bench.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "actors/protocol.h"
#include "base/error.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "embeddings/bucket_epoch.h"
#include "embeddings/bucket_order.h"
#include "embeddings/kg_triples.h"
#include "embeddings/partition_buffer.h"
#include "models/torch_runtime.h"
#include "partitioner/partition_format.h"
#include "runtime/daemon_child.h"
#include "runtime/runtime.h"
#include "training/job_actor_types.h"
#include "training/job_driver.h"

namespace partita::bench {

namespace {

namespace fs = std::filesystem;

JobConfig bench_job(const LinkpredBenchOptions& o, int parts, int threads, const std::string& dir) {
  JobConfig job;
  job.task = Task::kLinkPrediction;
  job.dataset = fs::absolute(o.dataset).string();
  job.format = "triples";
  job.num_partitions = parts;
  job.link.decoder = LinkDecoder::kDistMult;
  job.link.dim = o.dim;
  job.link.negatives = o.negatives;
  job.link.chunk_size = o.chunk_size;
  job.link.loss = LinkLoss::kSoftmax;
  job.optimizer = Optimizer::kAdagrad;
  job.learning_rate = 0.1;
  job.batch_size = o.batch_size;
  job.epochs = 1;
  job.threads = threads;
  job.seed = o.seed;
  job.output = (fs::path(dir) / ("parts-" + std::to_string(parts))).string();
  return job;
}

runtime::ActorSystemOptions system_options() {
  runtime::ActorSystemOptions options;
  options.threads = 2;
  add_protocol_types(options);
  return options;
}

struct JobTiming {
  double edges_per_second = 0;
  double eval_seconds = 0;  // the test split, both directions
  int64_t steps = 0;        // run, the first included
  // The table on disk: the buffer's stats over the run, and this process's bytes read
  // from the block device from the job's start to its last step (its evaluation excluded).
  PartitionBuffer::Stats buffer;
  int64_t device_read_bytes = 0;
};

// Edges per positive: itself and its negatives on both sides.
double edges_per_positive(const LinkpredBenchOptions& o) { return 1.0 + 2.0 * static_cast<double>(o.negatives); }

// The positives of every step of epoch 1 of `job` (1 trainer): full steps in memory; on
// disk each buffer state's last step is short (embeddings/bucket_epoch.h).
std::vector<int64_t> step_positives(const JobConfig& job, const KgTriples& kg) {
  std::vector<int64_t> out;
  const int64_t b = job.batch_size;
  if (!job.link.on_disk()) {
    for (int64_t begin = 0; begin < kg.train().size(); begin += b) out.push_back(std::min(b, kg.train().size() - begin));
    return out;
  }
  const EmbeddingPartitions::Shape shape =
      buffer_table_shape(kg.num_entities(), job.link.embedding_partitions, job.link.dim);
  const BucketEpoch plan = plan_bucket_epoch(kg, table_ids(kg, job.seed), shape, job.link.embedding_partitions,
                                             job.link.embedding_buffer, job.seed, 1, b);
  for (int64_t step = 0; step < plan.steps; ++step) {
    const size_t k = plan.state_of_step(step);
    const int64_t begin = (step - plan.first_step[k]) * b;
    out.push_back(std::min(b, static_cast<int64_t>(plan.edges[k].size()) - begin));
  }
  return out;
}

// This process's bytes read from the block device so far (/proc/self/io read_bytes).
int64_t device_read_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  throw Error("/proc/self/io has no read_bytes (a kernel without task I/O accounting)");
}

// While alive, syncs and drops the page-cache pages of every file in `dir` every 20 ms
// (fdatasync, then POSIX_FADV_DONTNEED, which drops clean pages only), so that reads of a
// file written more than a period ago come from the device. The folder may not exist yet.
class PageCacheDropper {
 public:
  explicit PageCacheDropper(std::string dir) : dir_(std::move(dir)), thread_([this] { run(); }) {}
  ~PageCacheDropper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  PageCacheDropper(const PageCacheDropper&) = delete;
  PageCacheDropper& operator=(const PageCacheDropper&) = delete;

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stopping_; })) {
      std::error_code ec;
      for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().extension() != ".bin") continue;
        const int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;  // renamed away meanwhile
        ::fdatasync(fd);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
      }
    }
  }

  std::string dir_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

JobTiming measure_job(runtime::Runtime& rt, const JobConfig& job, const LinkpredBenchOptions& o, const KgTriples& kg) {
  RunOptions options;
  options.overwrite = true;
  options.max_steps = o.steps + 1;
  std::vector<double> step_ends;
  Stopwatch watch;
  const int64_t read_before = device_read_bytes();
  int64_t read_at_last_step = read_before;  // the evaluation after the steps reads rows too
  options.on_progress = [&](const JobProgress& p) {
    if (p.event != JobProgress::Event::step) return;
    step_ends.push_back(watch.seconds());
    read_at_last_step = device_read_bytes();
  };
  std::unique_ptr<PageCacheDropper> dropper;
  if (o.drop_cache && job.link.on_disk()) dropper = std::make_unique<PageCacheDropper>(job.output + "/embeddings");
  const PartitionBuffer::Stats before = PartitionBuffer::process_totals();
  JobReport report = run_job(rt, job, options);
  dropper.reset();
  if (step_ends.size() < 2) throw Error("the job ran fewer than 2 steps");
  // From the end of the first step: set-up and the first reads are not the steady state.
  const double seconds = step_ends.back() - step_ends.front();
  const std::vector<int64_t> per_step = step_positives(job, kg);
  if (step_ends.size() > per_step.size()) throw Error("the job ran more steps than its epoch has");
  double positives = 0;
  for (size_t s = 1; s < step_ends.size(); ++s) positives += static_cast<double>(per_step[s]);
  JobTiming t;
  t.edges_per_second = positives * edges_per_positive(o) / seconds;
  t.eval_seconds = report.epochs.at(0).ranking_metric("test.seconds");
  t.steps = static_cast<int64_t>(step_ends.size());
  const PartitionBuffer::Stats after = PartitionBuffer::process_totals();
  t.buffer.reads = after.reads - before.reads;
  t.buffer.writes = after.writes - before.writes;
  t.buffer.prefetched = after.prefetched - before.prefetched;
  t.buffer.swaps = after.swaps - before.swaps;
  t.buffer.wait_seconds = after.wait_seconds - before.wait_seconds;
  t.buffer.swap_seconds = after.swap_seconds - before.swap_seconds;
  t.device_read_bytes = read_at_last_step - read_before;
  return t;
}

// The dense reference: the whole table in this process as one torch Embedding with sparse
// gradients, the same batches' shapes (chunks of positives sharing negatives, both sides),
// the same softmax loss, torch's Adagrad.
double measure_dense(const KgTriples& kg, const LinkpredBenchOptions& o) {
  torch::manual_seed(static_cast<uint64_t>(o.seed));
  const int64_t n = kg.num_entities(), d = o.dim, b = o.batch_size, k = o.negatives;
  const int64_t chunks = (b + o.chunk_size - 1) / o.chunk_size, per_chunk = b / chunks;
  torch::nn::Embedding entities(torch::nn::EmbeddingOptions(n, d).sparse(true));
  {
    torch::NoGradGuard no_grad;
    entities->weight.normal_(0, 1e-3);
  }
  at::Tensor relations = (torch::randn({kg.num_relations(), d}) * 1e-3).set_requires_grad(true);
  torch::optim::Adagrad optimizer({entities->weight, relations}, torch::optim::AdagradOptions(0.1).eps(1e-10));
  const TripleList& train = kg.train();
  const at::Tensor heads = torch::from_blob(const_cast<int64_t*>(train.head.data()), {train.size()}, torch::kLong);
  const at::Tensor tails = torch::from_blob(const_cast<int64_t*>(train.tail.data()), {train.size()}, torch::kLong);
  std::vector<int64_t> rel64(train.relation.begin(), train.relation.end());
  const at::Tensor rels = torch::from_blob(rel64.data(), {train.size()}, torch::kLong);
  auto step = [&] {
    const at::Tensor pick = torch::randint(train.size(), {chunks * per_chunk}, torch::kLong);
    const at::Tensor h = entities(heads.index_select(0, pick)), t = entities(tails.index_select(0, pick));
    const at::Tensor r = relations.index_select(0, rels.index_select(0, pick));
    const at::Tensor neg = entities(torch::randint(n, {chunks * k}, torch::kLong)).view({chunks, k, d});
    const at::Tensor q_tail = h * r, q_head = t * r;
    const at::Tensor pos = (q_tail * t).sum(1);
    auto side = [&](const at::Tensor& q) {
      const at::Tensor s = at::bmm(q.view({chunks, per_chunk, d}), neg.transpose(1, 2)).view({chunks * per_chunk, k});
      return (at::logsumexp(at::cat({pos.unsqueeze(1), s}, 1), 1) - pos).sum();
    };
    const at::Tensor loss = (side(q_tail) + side(q_head)) / static_cast<double>(chunks * per_chunk);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  };
  step();  // warm-up
  Stopwatch watch;
  for (int64_t s = 0; s < o.steps; ++s) step();
  return static_cast<double>(chunks * per_chunk * o.steps) * edges_per_positive(o) / watch.seconds();
}

// The GEMMs of ranking every test query (both directions) against every entity, blocks of
// `block` entities, queries in batches of `batch`: what the ranking cannot do with less.
double measure_ranking_floor(int64_t queries, int64_t entities, int64_t dim, int64_t block, int64_t batch) {
  const at::Tensor q = torch::randn({queries, dim});
  const at::Tensor e = torch::randn({block, dim});
  Stopwatch watch;
  for (int64_t b = 0; b < entities; b += block) {
    const int64_t rows = std::min(block, entities - b);
    const at::Tensor slice = e.narrow(0, 0, rows);
    for (int64_t i = 0; i < queries; i += batch) {
      const at::Tensor scores = torch::mm(q.narrow(0, i, std::min(batch, queries - i)), slice.t());
      (void)scores;
    }
  }
  return watch.seconds();
}

}  // namespace

void run_linkpred_bench(const LinkpredBenchOptions& o_in) {
  LinkpredBenchOptions o = o_in;
  if (o.dataset.empty()) o.dataset = std::string(PARTITA_BENCH_DATA_DIR) + "/fb15k-237";
  if (!fs::exists(fs::path(o.dataset) / "train.txt")) throw UsageError("--dataset: " + o.dataset + " has no train.txt");
  for (char c : o.configs) {
    if (std::string("abcde").find(c) == std::string::npos) {
      throw UsageError(std::string("--configs: '") + c + "' is not one of a, b, c, d, e");
    }
  }
  auto runs = [&](char c) { return o.configs.find(c) != std::string::npos; };
  Workdir work(o.work_dir, "partita-linkpred-bench");
  const int per_daemon = std::max(1, o.cores / 2);
  JobConfig one = bench_job(o, 1, o.cores, work.path());
  JobConfig two = bench_job(o, 2, per_daemon, work.path());
  // (d): (a)'s partitions, its table on disk behind the buffer; (e): (d) without prefetch.
  JobConfig buffered = one;
  buffered.link.embedding_storage = "disk";
  buffered.link.embedding_partitions = o.buffer_partitions;
  buffered.link.embedding_buffer = o.buffer;
  buffered.partitions = one.partition_dir();
  buffered.dataset.clear();
  buffered.output = (fs::path(work.path()) / "buffered").string();
  JobConfig unprefetched = buffered;
  unprefetched.link.embedding_prefetch = false;
  unprefetched.output = (fs::path(work.path()) / "unprefetched").string();
  prepare_data(one, o.cores);
  if (runs('b')) prepare_data(two, o.cores);
  const KgTriples kg{PartitionFolder(one.partition_dir())};
  int64_t test_triples = 0;
  for (int p = 0; p < 1; ++p) test_triples += kg.held_out("test", p).size();
  const EmbeddingPartitions::Shape shape = buffer_table_shape(kg.num_entities(), o.buffer_partitions, o.dim);
  const int64_t walk_swaps = beta_order(o.buffer_partitions, o.buffer).swaps();
  const int64_t bound = swap_lower_bound(o.buffer_partitions, o.buffer);
  const double file_mib = static_cast<double>(shape.num_entities / shape.num_partitions * o.dim * 8) / (1 << 20);
  std::printf("DistMult on %s: %lld entities, %d relations, %lld training triples, %lld test triples; dim %lld, "
              "%lld positives per step in chunks of %lld sharing %lld negatives per side; %d cores; %d rounds of "
              "%lld steps; configurations %s\n",
              o.dataset.c_str(), static_cast<long long>(kg.num_entities()), kg.num_relations(),
              static_cast<long long>(kg.train().size()), static_cast<long long>(test_triples),
              static_cast<long long>(o.dim), static_cast<long long>(o.batch_size),
              static_cast<long long>(o.chunk_size), static_cast<long long>(o.negatives), o.cores, o.rounds,
              static_cast<long long>(o.steps), o.configs.c_str());
  std::printf("(d), (e): %d partitions regrouped from %d logical files of ~%.2f MiB (values and accumulators), a buffer "
              "of %d; the walk: %lld swaps per epoch, lower bound %lld; page cache %s\n",
              o.buffer_partitions, shape.num_partitions, file_mib, o.buffer, static_cast<long long>(walk_swaps),
              static_cast<long long>(bound),
              o.drop_cache ? "dropped for the table files every 20 ms (fdatasync + POSIX_FADV_DONTNEED)" : "as it comes");
  std::fflush(stdout);

  std::vector<double> a_rate, b_rate, c_rate, d_rate, e_rate, a_eval, b_eval, d_eval, floor;
  std::vector<double> d_swap, e_swap, d_wait, e_wait, d_device, e_device;
  const auto in_process = [&](const JobConfig& job) {
    auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
    return measure_job(*rt, job, o, kg);
  };
  const auto report_buffer = [&](const char* name, const JobTiming& t) {
    const double read_mib = static_cast<double>(t.buffer.reads) * file_mib;
    std::printf("  %s: %lld steps, %lld swaps (walk %lld, bound %lld), %lld files read (%lld prefetched), %lld "
                "written; %.2f s in swaps, %.2f s waiting for reads; %.1f MiB read from the device until the last "
                "step, %.1f MiB by the buffer\n",
                name, static_cast<long long>(t.steps), static_cast<long long>(t.buffer.swaps),
                static_cast<long long>(walk_swaps), static_cast<long long>(bound),
                static_cast<long long>(t.buffer.reads), static_cast<long long>(t.buffer.prefetched),
                static_cast<long long>(t.buffer.writes), t.buffer.swap_seconds, t.buffer.wait_seconds,
                static_cast<double>(t.device_read_bytes) / (1 << 20), read_mib);
  };
  for (int round = 0; round < o.rounds; ++round) {
    std::printf("round %d:\n", round + 1);
    for (char c : o.configs) {
      if (c == 'a') {
        const JobTiming t = in_process(one);
        a_rate.push_back(t.edges_per_second);
        a_eval.push_back(t.eval_seconds);
        std::printf("  (a) %.0f edges/s over %lld steps; test ranking %.2f s\n", t.edges_per_second,
                    static_cast<long long>(t.steps), t.eval_seconds);
      } else if (c == 'd') {
        const JobTiming t = in_process(buffered);
        d_rate.push_back(t.edges_per_second);
        d_eval.push_back(t.eval_seconds);
        d_swap.push_back(t.buffer.swap_seconds);
        d_wait.push_back(t.buffer.wait_seconds);
        d_device.push_back(static_cast<double>(t.device_read_bytes) / (1 << 20));
        std::printf("  (d) %.0f edges/s; test ranking %.2f s\n", t.edges_per_second, t.eval_seconds);
        report_buffer("(d)", t);
      } else if (c == 'e') {
        const JobTiming t = in_process(unprefetched);
        e_rate.push_back(t.edges_per_second);
        e_swap.push_back(t.buffer.swap_seconds);
        e_wait.push_back(t.buffer.wait_seconds);
        e_device.push_back(static_cast<double>(t.device_read_bytes) / (1 << 20));
        std::printf("  (e) %.0f edges/s\n", t.edges_per_second);
        report_buffer("(e)", t);
      } else if (c == 'b') {
        std::vector<runtime::DaemonChild> daemons;
        std::vector<std::string> addresses;
        for (int d = 0; d < 2; ++d) {
          daemons.push_back(runtime::start_daemon_child(self_executable(), {}, {"--log-level", "warn"}));
          addresses.push_back(daemons.back().address);
        }
        auto rt = runtime::Runtime::connect(system_options(), addresses, std::chrono::seconds(10));
        const JobTiming t = measure_job(*rt, two, o, kg);
        b_rate.push_back(t.edges_per_second);
        b_eval.push_back(t.eval_seconds);
        std::printf("  (b) %.0f edges/s; test ranking %.2f s\n", t.edges_per_second, t.eval_seconds);
      } else if (c == 'c') {
        set_torch_threads(o.cores);
        c_rate.push_back(measure_dense(kg, o));
        floor.push_back(measure_ranking_floor(2 * test_triples, kg.num_entities(), o.dim, one.link.eval_block,
                                              one.eval_batch_size));
        std::printf("  (c) %.0f edges/s; ranking floor %.2f s\n", c_rate.back(), floor.back());
      }
      std::fflush(stdout);
    }
  }
  // Edges: each positive with its negatives on both sides (what is scored); positives: the
  // training triples themselves.
  std::printf("\n%-62s %14s %13s %8s\n", "training (medians)", "edges/s", "positives/s", "/ (a)");
  const double per = edges_per_positive(o), a = median(a_rate);
  const auto row = [&](const std::string& name, const std::vector<double>& rates) {
    if (rates.empty()) return;
    const double rate = median(rates);
    if (a > 0) {
      std::printf("%-62s %14.0f %13.0f %8.2f\n", name.c_str(), rate, rate / per, rate / a);
    } else {
      std::printf("%-62s %14.0f %13.0f %8s\n", name.c_str(), rate, rate / per, "-");
    }
  };
  const std::string buffer_name =
      "table on disk, " + std::to_string(o.buffer_partitions) + " partitions, buffer of " + std::to_string(o.buffer);
  row("(a) 1 partition, 1 trainer, in one process", a_rate);
  row("(d) as (a), " + buffer_name + ", prefetch", d_rate);
  row("(e) as (d), no prefetch", e_rate);
  row("(b) 2 partitions on 2 daemons, 1 trainer each", b_rate);
  row("(c) dense libtorch loop (Embedding, sparse grads, Adagrad)", c_rate);
  if (!d_rate.empty() || !e_rate.empty()) {
    std::printf("\n%-62s %12s %12s %12s\n", "the buffer (medians)", "s in swaps", "s waiting", "device MiB");
    if (!d_rate.empty()) {
      std::printf("%-62s %12.2f %12.2f %12.1f\n", "(d) prefetch", median(d_swap), median(d_wait), median(d_device));
    }
    if (!e_rate.empty()) {
      std::printf("%-62s %12.2f %12.2f %12.1f\n", "(e) no prefetch", median(e_swap), median(e_wait), median(e_device));
    }
  }
  if (floor.empty()) return;
  std::printf("\n%-62s %14s %10s\n", "filtered ranking, test triples both ways (medians)", "seconds", "/ floor");
  const double f = median(floor);
  const auto eval_row = [&](const char* name, const std::vector<double>& seconds) {
    if (!seconds.empty()) std::printf("%-62s %14.2f %10.2f\n", name, median(seconds), median(seconds) / f);
  };
  eval_row("(a) 1 trainer in one process", a_eval);
  eval_row("(d) as (a), rows read from the files", d_eval);
  eval_row("(b) 2 trainers on 2 daemons (each its share)", b_eval);
  std::printf("%-62s %14.2f %10.2f\n", "GEMM floor: every query x every entity block, torch::mm", f, 1.0);
}

}  // namespace partita::bench
