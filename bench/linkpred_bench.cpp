#include "bench/linkpred_bench.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cstdio>
#include <filesystem>

#include "actors/protocol.h"
#include "base/error.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "models/torch_runtime.h"
#include "partitioner/partition_format.h"
#include "runtime/daemon_child.h"
#include "runtime/runtime.h"
#include "training/job_driver.h"
#include "training/job_types.h"
#include "training/kg_triples.h"

namespace partita::bench {

namespace {

namespace fs = std::filesystem;

JobConfig bench_job(const LinkpredBenchOptions& o, int parts, int threads, const std::string& dir) {
  JobConfig job;
  job.task = "link_prediction";
  job.dataset = fs::absolute(o.dataset).string();
  job.format = "triples";
  job.num_partitions = parts;
  job.link.decoder = "distmult";
  job.link.dim = o.dim;
  job.link.negatives = o.negatives;
  job.link.chunk_size = o.chunk_size;
  job.link.loss = "softmax";
  job.optimizer = "adagrad";
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
};

// Edges per positive: itself and its negatives on both sides.
double edges_per_positive(const LinkpredBenchOptions& o) { return 1.0 + 2.0 * static_cast<double>(o.negatives); }

JobTiming measure_job(runtime::Runtime& rt, const JobConfig& job, const LinkpredBenchOptions& o) {
  RunOptions options;
  options.overwrite = true;
  options.max_steps = o.steps + 1;
  std::vector<double> step_ends;
  Stopwatch watch;
  options.on_progress = [&](const JobProgress& p) {
    if (p.event == JobProgress::Event::step) step_ends.push_back(watch.seconds());
  };
  JobReport report = run_job(rt, job, options);
  if (step_ends.size() < 2) throw Error("the job ran fewer than 2 steps");
  // From the end of the first step: set-up and the first reads are not the steady state.
  const double seconds = step_ends.back() - step_ends.front();
  const double positives = static_cast<double>(o.batch_size) * static_cast<double>(step_ends.size() - 1);
  return {positives * edges_per_positive(o) / seconds, report.epochs.at(0).ranking_metric("test.seconds")};
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
  Workdir work(o.work_dir, "partita-linkpred-bench");
  const int per_daemon = std::max(1, o.cores / 2);
  JobConfig one = bench_job(o, 1, o.cores, work.path());
  JobConfig two = bench_job(o, 2, per_daemon, work.path());
  // (d): (a)'s partitions, its table on disk behind the buffer.
  JobConfig buffered = one;
  buffered.link.embedding_storage = "disk";
  buffered.link.embedding_partitions = o.buffer_partitions;
  buffered.link.embedding_buffer = o.buffer;
  buffered.partitions = one.partition_dir();
  buffered.dataset.clear();
  buffered.output = (fs::path(work.path()) / "buffered").string();
  prepare_data(one, o.cores);
  prepare_data(two, o.cores);
  const KgTriples kg{PartitionFolder(one.partition_dir())};
  int64_t test_triples = 0;
  for (int p = 0; p < 1; ++p) test_triples += kg.held_out("test", p).size();
  std::printf("DistMult on %s: %lld entities, %d relations, %lld training triples, %lld test triples; dim %lld, "
              "%lld positives per step in chunks of %lld sharing %lld negatives per side; %d cores; %d rounds of "
              "%lld steps\n",
              o.dataset.c_str(), static_cast<long long>(kg.num_entities()), kg.num_relations(),
              static_cast<long long>(kg.train().size()), static_cast<long long>(test_triples),
              static_cast<long long>(o.dim), static_cast<long long>(o.batch_size),
              static_cast<long long>(o.chunk_size), static_cast<long long>(o.negatives), o.cores, o.rounds,
              static_cast<long long>(o.steps));
  std::fflush(stdout);

  std::vector<double> a_rate, b_rate, c_rate, d_rate, a_eval, b_eval, d_eval, floor;
  for (int round = 0; round < o.rounds; ++round) {
    {
      auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
      const JobTiming t = measure_job(*rt, one, o);
      a_rate.push_back(t.edges_per_second);
      a_eval.push_back(t.eval_seconds);
    }
    {
      auto rt = runtime::Runtime::in_process(system_options(), job_actor_types());
      const JobTiming t = measure_job(*rt, buffered, o);
      d_rate.push_back(t.edges_per_second);
      d_eval.push_back(t.eval_seconds);
    }
    {
      std::vector<runtime::DaemonChild> daemons;
      std::vector<std::string> addresses;
      for (int d = 0; d < 2; ++d) {
        daemons.push_back(runtime::start_daemon_child(self_executable(), {}, {"--log-level", "warn"}));
        addresses.push_back(daemons.back().address);
      }
      auto rt = runtime::Runtime::connect(system_options(), addresses, std::chrono::seconds(10));
      const JobTiming t = measure_job(*rt, two, o);
      b_rate.push_back(t.edges_per_second);
      b_eval.push_back(t.eval_seconds);
    }
    set_torch_threads(o.cores);
    c_rate.push_back(measure_dense(kg, o));
    floor.push_back(measure_ranking_floor(2 * test_triples, kg.num_entities(), o.dim, one.link.eval_block,
                                          one.eval_batch_size));
    std::printf("round %d: edges/s (a) %.0f (d) %.0f (b) %.0f (c) %.0f; test ranking s (a) %.2f (d) %.2f (b) %.2f "
                "floor %.2f\n",
                round + 1, a_rate.back(), d_rate.back(), b_rate.back(), c_rate.back(), a_eval.back(), d_eval.back(),
                b_eval.back(), floor.back());
    std::fflush(stdout);
  }
  // Edges: each positive with its negatives on both sides (what is scored); positives: the
  // training triples themselves.
  std::printf("\n%-60s %14s %13s %8s\n", "training (medians)", "edges/s", "positives/s", "/ dense");
  const double dense = median(c_rate), per = edges_per_positive(o);
  const auto row = [&](const char* name, double rate) {
    std::printf("%-60s %14.0f %13.0f %8.2f\n", name, rate, rate / per, rate / dense);
  };
  row("(a) 1 partition, 1 trainer, in one process", median(a_rate));
  const std::string d_name = "(d) as (a), table on disk: " + std::to_string(o.buffer_partitions) + " partitions, buffer of " +
                             std::to_string(o.buffer);
  row(d_name.c_str(), median(d_rate));
  std::printf("%-60s %14s %13s %8.2f  (d) / (a)\n", "", "", "", median(d_rate) / median(a_rate));
  row("(b) 2 partitions on 2 daemons, 1 trainer each", median(b_rate));
  row("(c) dense libtorch loop (Embedding, sparse grads, Adagrad)", dense);
  std::printf("\n%-60s %14s %10s\n", "filtered ranking, test triples both ways (medians)", "seconds", "/ floor");
  const double f = median(floor);
  std::printf("%-60s %14.2f %10.2f\n", "(a) 1 trainer in one process", median(a_eval), median(a_eval) / f);
  std::printf("%-60s %14.2f %10.2f\n", "(d) as (a), rows read from the files", median(d_eval), median(d_eval) / f);
  std::printf("%-60s %14.2f %10.2f\n", "(b) 2 trainers on 2 daemons (each its share)", median(b_eval), median(b_eval) / f);
  std::printf("%-60s %14.2f %10.2f\n", "GEMM floor: every query x every entity block, torch::mm", f, 1.0);
}

}  // namespace partita::bench
