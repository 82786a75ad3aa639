// partita bench ...: the benchmarks of BENCHMARKS.md, one registration function each (its
// flags and its options next to each other).
#include <cstdlib>

#include "bench/aggregate_bench.h"
#include "bench/allreduce_bench.h"
#include "bench/checkpoint_bench.h"
#include "bench/codec_bench.h"
#include "bench/dashboard_bench.h"
#include "bench/disk_bench.h"
#include "graph/hop_sampler.h"
#include "bench/gather_bench.h"
#include "bench/loader_bench.h"
#include "bench/chaos_bench.h"
#include "bench/network_bench.h"
#include "bench/partition_bench.h"
#include "bench/recovery_bench.h"
#include "bench/sample_bench.h"
#include "bench/linkpred_bench.h"
#include "bench/train_bench.h"
#include "bench/staging_bench.h"
#include "bench/transfer_bench.h"
#include "base/error.h"
#include "bench/tls_bench.h"
#include "runtime/tls/temporary_cluster.h"
#include "tools/commands.h"

namespace partita::cli {

namespace {

// `bench tls`: TLS next to plaintext.
void add_tls_bench(CLI::App* bench) {
  auto tb = std::make_shared<bench::TlsBenchOptions>();
  CLI::App* tls = bench->add_subcommand(
      "tls", "bulk transfer and ring allreduce over TLS next to plaintext, interleaved rounds");
  tls->add_option("--transfer-mb", tb->transfer_mb, "MiB streamed per round")->check(cli::positive())->capture_default_str();
  tls->add_option("--floats", tb->floats, "float32 per allreduce")->check(cli::positive())->capture_default_str();
  tls->add_option("--members", tb->members, "ring members")->check(cli::in_range(2, 16))->capture_default_str();
  tls->add_option("--operations", tb->operations, "allreduces per round")->check(cli::positive())->capture_default_str();
  tls->add_option("--rounds", tb->rounds, "rounds per mode (medians are reported)")->check(cli::positive())->capture_default_str();
  tls->callback([tb] { bench::run_tls_bench(*tb); });
}

// `bench dashboard`: a job with its status page served and polled.
void add_dashboard_bench(CLI::App* bench) {
  auto db = std::make_shared<bench::DashboardBenchOptions>();
  CLI::App* dash = bench->add_subcommand(
      "dashboard", "seconds per training step with the status page served and polled, next to without it");
  dash->add_option("--nodes", db->num_nodes, "SBM nodes")->check(cli::positive())->capture_default_str();
  dash->add_option("--features", db->feature_dim, "float32 features per node")->check(cli::positive())->capture_default_str();
  dash->add_option("--hidden", db->hidden, "hidden features")->check(cli::positive())->capture_default_str();
  dash->add_option("--batch-size", db->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  dash->add_option("--rounds", db->rounds, "rounds of each configuration, interleaved")->check(cli::positive())->capture_default_str();
  dash->add_option("--pollers", db->pollers, "client threads polling the page")->check(cli::positive())->capture_default_str();
  dash->add_option("--poll-ms", db->poll_ms, "milliseconds between a poller's requests")->check(cli::at_least(0))->capture_default_str();
  dash->add_option("--workdir", db->work_dir, "keep the generated partitions here and reuse them");
  dash->add_option("--seed", db->seed, "graph, weights and sampling seed")->capture_default_str();
  dash->callback([db] { bench::run_dashboard_bench(*db); });
}

// `bench recovery`: a lost node, detected and recovered from.
void add_recovery_bench(CLI::App* bench) {
  auto rb = std::make_shared<bench::RecoveryBenchOptions>();
  CLI::App* recovery = bench->add_subcommand(
      "recovery", "a lost node (SIGKILL, SIGSTOP): time until a submitted job detects it and trains again, steps re-done");
  recovery->add_option("--trials", rb->trials, "trials per signal, interleaved")->check(cli::positive())->capture_default_str();
  recovery->add_option("--nodes", rb->num_nodes, "SBM nodes")->check(cli::positive())->capture_default_str();
  recovery->add_option("--checkpoint-every", rb->checkpoint_every, "train.checkpoint_every_steps")
      ->check(cli::positive())
      ->capture_default_str();
  recovery->add_option("--workdir", rb->work_dir, "keep the generated partitions here and reuse them");
  recovery->add_option("--seed", rb->seed, "graph and job seed")->capture_default_str();
  recovery->callback([rb] { bench::run_recovery_bench(*rb); });
}

// `bench chaos`: a long job under random faults.
void add_chaos_bench(CLI::App* bench) {
  auto cb = std::make_shared<bench::ChaosBenchOptions>();
  CLI::App* chaos = bench->add_subcommand(
      "chaos", "a long job on 3 hosts (network namespaces) under random faults of its nodes and head; its final "
               "parameter hash next to the same job run undisturbed");
  chaos->add_option("--minutes", cb->minutes, "the undisturbed job's length (calibrated)")->check(cli::positive())->capture_default_str();
  chaos->add_option("--interval", cb->interval, "seconds between faults (each lands at a random point of its interval)")
      ->check(cli::positive())
      ->capture_default_str();
  chaos->add_option("--nodes", cb->num_nodes, "SBM nodes")->check(cli::positive())->capture_default_str();
  chaos->add_option("--checkpoint-every", cb->checkpoint_every, "train.checkpoint_every_steps")
      ->check(cli::positive())
      ->capture_default_str();
  chaos->add_option("--workdir", cb->work_dir, "keep the generated partitions here and reuse them");
  chaos->add_option("--seed", cb->seed, "graph, job and fault seed")->capture_default_str();
  chaos->callback([cb] { bench::run_chaos_bench(*cb); });
}

// `bench network`: an epoch on separate hosts next to loopback.
void add_network_bench(CLI::App* bench) {
  auto nb = std::make_shared<bench::NetworkBenchOptions>();
  CLI::App* network = bench->add_subcommand(
      "network", "epoch time of a job on 2 and 3 hosts (network namespaces, 10 Gbit/s, 1 ms delay) next to loopback");
  network->add_option("--hosts", nb->hosts, "cluster sizes, e.g. 2,3 (partitions = nodes = hosts)")
      ->delimiter(',')
      ->check(cli::in_range(2, 16))
      ->capture_default_str();
  network->add_option("--nodes", nb->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  network->add_option("--avg-degree", nb->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  network->add_option("--features", nb->feature_dim, "float32 features per node")->check(cli::positive())->capture_default_str();
  network->add_option("--train-nodes", nb->train_nodes, "training nodes")->check(cli::positive())->capture_default_str();
  network->add_option("--hidden", nb->hidden, "hidden features")->check(cli::positive())->capture_default_str();
  network->add_option("--fanouts", nb->fanouts, "neighbours per layer, e.g. 15,10,5")->delimiter(',')->check(cli::positive());
  network->add_option("--batch-size", nb->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  network->add_option("--epochs", nb->epochs, "epochs per job, the first a warm-up")->check(cli::in_range(2, 1000))->capture_default_str();
  network->add_option("--rounds", nb->rounds, "interleaved rounds (medians are reported)")->check(cli::positive())->capture_default_str();
  network->add_option("--delay-ms", nb->delay_ms, "one-way delay on every host's way out in (c)")->check(cli::at_least(0))->capture_default_str();
  network->add_option("--rate", nb->rate, "the wire's rate in tc's syntax (\"\": no limit)")->capture_default_str();
  network->add_option("--workdir", nb->work_dir, "keep the generated partitions here and reuse them");
  network->add_option("--seed", nb->seed, "graph and job seed")->capture_default_str();
  network->callback([nb] { bench::run_network_bench(*nb); });
}

// `bench partition` and its baseline child `bench bare-metis`.
void add_partition_bench(CLI::App* bench, const GlobalOptions& global) {
  auto p = std::make_shared<bench::PartitionBenchOptions>();
  CLI::App* partition = bench->add_subcommand(
      "partition", "time and peak memory of `partita partition` next to the bare METIS call");
  partition->add_option("--nodes", p->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  partition->add_option("--avg-degree", p->avg_degree, "directed edges per node")->check(cli::positive())->capture_default_str();
  partition->add_option("--parts", p->parts, "part counts to measure")->delimiter(',')->check(cli::positive());
  partition->add_option("--seed", p->seed, "graph and METIS seed")->capture_default_str();
  partition->add_option("--repeat", p->repeat, "runs of each measurement (medians are compared)")->check(cli::positive())->capture_default_str();
  partition->add_option("--workdir", p->workdir, "keep the generated graph here (default: a temporary folder)");
  partition->callback([p, &global] {
    p->threads = global.threads;
    if (p->parts.empty()) throw UsageError("--parts: give at least one part count");
    bench::run_partition_bench(*p);
  });

  struct BareOptions {
    std::string input;
    int parts = 2;
    uint64_t seed = 1;
  };
  auto b = std::make_shared<BareOptions>();
  CLI::App* bare = bench->add_subcommand(
      "bare-metis", "(used by bench partition) time METIS_PartGraphKway alone on an npy graph");
  bare->add_option("--input", b->input, "npy folder")->required();
  bare->add_option("--parts", b->parts, "parts")->check(cli::positive());
  bare->add_option("--seed", b->seed, "METIS seed");
  bare->callback([b, &global] { bench::run_bare_metis(b->input, b->parts, b->seed, global.threads); });
}

// `bench sample`: neighbour sampling throughput.
void add_sample_bench(CLI::App* bench) {
  auto s = std::make_shared<bench::SampleBenchOptions>();
  auto fanouts = std::make_shared<std::vector<std::string>>();
  CLI::App* sample = bench->add_subcommand("sample", "neighbour sampling throughput (batches/s, edges/s)");
  sample->add_option("--input", s->input, "npy folder to sample (default: generate RMAT)");
  sample->add_option("--nodes", s->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  sample->add_option("--avg-degree", s->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  sample->add_option("--seed", s->seed, "graph and sampling seed")->capture_default_str();
  sample->add_option("--batch-size", s->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  sample->add_option("--fanouts", *fanouts, "fanout lists, e.g. 15,10,5 25,10 (default: both)");
  sample->add_option("--threads-list", s->threads, "thread counts to measure (default 1 2)")->check(cli::in_range(1, cli::kMaxThreads));
  sample->add_option("--batches", s->num_batches, "measured batches per configuration")->check(cli::positive())->capture_default_str();
  sample->add_option("--features", s->feature_dim, "float32 features per node for the gather (0: skip)")->check(cli::at_least(0))->capture_default_str();
  sample->add_flag("--hetero", s->hetero, "the hetero kernel on the hetero generator's graph against the homogeneous kernel on the same edges");
  sample->add_option("--papers", s->hetero_papers, "--hetero: papers of the generated graph")->check(cli::positive())->capture_default_str();
  sample->add_option("--triples", s->triples, "--hetero: a triples folder (FB15k-237) instead of the generator's graph");
  sample->add_option("--temporal", s->temporal, "temporal sampling (edge or node times) against uniform on the same graph")
      ->check(CLI::IsMember({"edge", "node"}));
  sample->add_option("--rounds", s->rounds, "interleaved rounds (medians reported)")->check(cli::positive())->capture_default_str();
  sample->callback([s, fanouts] {
    if (!fanouts->empty()) {
      s->fanouts.clear();
      for (const auto& text : *fanouts) s->fanouts.push_back(parse_fanouts(text, "--fanouts"));
    }
    if (!s->temporal.empty()) {
      bench::run_temporal_sample_bench(*s);
    } else if (s->hetero) {
      bench::run_hetero_sample_bench(*s);
    } else {
      bench::run_sample_bench(*s);
    }
  });
}

// `bench disk`: features on disk next to the device.
void add_disk_bench(CLI::App* bench) {
  auto k = std::make_shared<bench::DiskBenchOptions>();
  CLI::App* disk = bench->add_subcommand("disk", "gather of features on disk (io_uring) next to the device's random reads");
  disk->add_option("--input", k->input, "npy folder with x.npy (default: generate RMAT)");
  disk->add_option("--workdir", k->workdir, "folder for the feature file (default: a temporary one)");
  disk->add_option("--nodes", k->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  disk->add_option("--dim", k->dim, "RMAT float32 features per node")->check(cli::positive())->capture_default_str();
  disk->add_option("--seed", k->seed, "graph and sampling seed")->capture_default_str();
  disk->add_option("--batch-size", k->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  disk->add_option("--fanouts", k->fanouts, "fanouts of the sampled batches (default 15 10 5)")->check(cli::positive());
  disk->add_option("--batches", k->num_batches, "sampled batches whose rows each round gathers")->check(cli::positive())->capture_default_str();
  disk->add_option("--queue-depth", k->queue_depth, "reads in flight (store and device)")->check(cli::in_range(1, 4096))->capture_default_str();
  disk->add_option("--merge-gaps", k->merge_gaps, "the store's merge gaps to measure, bytes (default 0 8192)")->check(cli::in_range(0, 65536));
  disk->add_option("--runs", k->runs, "interleaved rounds (medians reported)")->check(cli::positive())->capture_default_str();
  disk->add_option("--memory-limit-mb", k->memory_limit_mb, "run the rounds in a cgroup with this memory limit (root; 0: none)")->check(cli::at_least(0))->capture_default_str();
  disk->callback([k] { bench::run_disk_bench(*k); });
}

// `bench gather`: the feature gather next to memcpy.
void add_gather_bench(CLI::App* bench) {
  auto g = std::make_shared<bench::GatherBenchOptions>();
  CLI::App* gather = bench->add_subcommand("gather", "feature gather GB/s next to memcpy of the same bytes");
  gather->add_option("--nodes", g->num_nodes, "rows of the feature matrix")->check(cli::positive())->capture_default_str();
  gather->add_option("--dim", g->dim, "float32 features per row")->check(cli::positive())->capture_default_str();
  gather->add_option("--batch-nodes", g->batch_nodes, "distinct random rows per batch")->check(cli::positive())->capture_default_str();
  gather->add_option("--threads-list", g->threads, "thread counts to measure (default 1 2)")->check(cli::in_range(1, cli::kMaxThreads));
  gather->add_option("--seed", g->seed, "seed")->capture_default_str();
  gather->add_option("--runs", g->runs, "measured runs (medians are reported)")->check(cli::positive())->capture_default_str();
  gather->add_option("--prefetch-sweep", g->prefetch_sweep, "also time the row copy kernel alone at these prefetch distances (rows ahead)")->check(cli::at_least(0));
  gather->callback([g] { bench::run_gather_bench(*g); });
}

// `bench codec`: the message codec next to memcpy.
void add_codec_bench(CLI::App* bench) {
  auto c = std::make_shared<bench::CodecBenchOptions>();
  CLI::App* codec = bench->add_subcommand("codec", "Cap'n Proto encode/decode of replies next to memcpy");
  codec->add_option("--feature-rows", c->feature_rows, "rows of the feature reply")->check(cli::positive())->capture_default_str();
  codec->add_option("--feature-dim", c->feature_dim, "float32 per row")->check(cli::positive())->capture_default_str();
  codec->add_option("--hop-neighbors", c->hop_neighbors, "neighbours in the hop reply")->check(cli::positive())->capture_default_str();
  codec->add_option("--fanout", c->fanout, "neighbours per node in the hop reply")->check(cli::positive())->capture_default_str();
  codec->add_option("--runs", c->runs, "measured runs (the median is reported)")->check(cli::positive())->capture_default_str();
  codec->callback([c] { bench::run_codec_bench(*c); });
}

// `bench checkpoint`: saving the training state next to memcpy and torch.
void add_checkpoint_bench(CLI::App* bench) {
  auto ck = std::make_shared<bench::CheckpointBenchOptions>();
  CLI::App* checkpoint = bench->add_subcommand("checkpoint", "saving and loading a job's training state next to memcpy and torch's archive");
  checkpoint->add_option("--nodes", ck->num_nodes, "width of the one-hot input (AIFB: 8285)")->check(cli::positive())->capture_default_str();
  checkpoint->add_option("--hidden", ck->hidden, "hidden units")->check(cli::positive())->capture_default_str();
  checkpoint->add_option("--relations", ck->relations, "relations")->check(cli::positive())->capture_default_str();
  checkpoint->add_option("--bases", ck->bases, "bases of the decomposition")->check(cli::positive())->capture_default_str();
  checkpoint->add_option("--rounds", ck->rounds, "interleaved rounds (the median is reported)")->check(cli::positive())->capture_default_str();
  checkpoint->callback([ck] { bench::run_checkpoint_bench(*ck); });
}

// `bench loader`: the sampling pipeline in-process and on a daemon.
void add_loader_bench(CLI::App* bench) {
  auto l = std::make_shared<bench::LoaderBenchOptions>();
  auto loader_fanouts = std::make_shared<std::string>("15,10,5");
  CLI::App* loader = bench->add_subcommand("loader", "the sampling pipeline as trainers use it: in-process and with a partition on a daemon");
  loader->add_option("--input", l->input, "npy folder with features, labels and a split (default: generate RMAT)");
  loader->add_option("--nodes", l->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  loader->add_option("--avg-degree", l->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  loader->add_option("--features", l->feature_dim, "float32 features per node")->check(cli::positive())->capture_default_str();
  loader->add_option("--fanouts", *loader_fanouts, "fanouts, e.g. 15,10,5")->capture_default_str();
  loader->add_option("--batch-size", l->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  loader->add_option("--batches", l->num_batches, "measured batches per sampler, at most")->check(cli::positive())->capture_default_str();
  loader->add_option("--seed", l->seed, "graph and sampling seed")->capture_default_str();
  loader->add_option("--seconds", l->seconds, "measurement window: consumers take no batch after it")->check(cli::positive())->capture_default_str();
  loader->add_option("--prefetch", l->prefetch, "batches in flight per sampler")->check(cli::positive())->capture_default_str();
  loader->add_option("--repeat", l->repeat, "rounds of every measurement (medians are reported)")->check(cli::positive())->capture_default_str();
  loader->add_option("--cache-percents", l->cache_percents, "also measure (c) with a cache of these % of partition 1's rows, e.g. 5 10 20")->check(cli::in_range(0.0, 100.0));
  loader->add_option("--cache-policies", l->cache_policies, "cache policies to measure (degree, frequency, sieve)")->capture_default_str();
  loader->add_option("--cache-bound-batches", l->cache_bound_batches, "with --cache-percents: batches sampled for the bound of any cache (half rank, half score)")->check(cli::in_range(2, 65536))->capture_default_str();
  loader->add_option("--workdir", l->workdir, "keep the generated graph here and reuse it (default: a temporary folder)");
  loader->callback([l, loader_fanouts] {
    l->fanouts = parse_fanouts(*loader_fanouts, "--fanouts");
    bench::run_loader_bench(*l);
  });
}

// `bench aggregate`: the aggregation kernels and model steps.
void add_aggregate_bench(CLI::App* bench) {
  auto a = std::make_shared<bench::AggregateBenchOptions>();
  auto aggregate_fanouts = std::make_shared<std::string>("15,10,5");
  CLI::App* aggregate = bench->add_subcommand(
      "aggregate", "GNN aggregation (CSC kernel vs index_add_) and model steps with and without trimming");
  aggregate->add_option("--nodes", a->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  aggregate->add_option("--avg-degree", a->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  aggregate->add_option("--seed", a->seed, "graph, sampling and feature seed")->capture_default_str();
  aggregate->add_option("--batch-size", a->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  aggregate->add_option("--fanouts", *aggregate_fanouts, "fanouts, one model layer per hop")->capture_default_str();
  aggregate->add_option("--in-dim", a->in_dim, "input features")->check(cli::positive())->capture_default_str();
  aggregate->add_option("--hidden", a->hidden_dim, "hidden features")->check(cli::positive())->capture_default_str();
  aggregate->add_option("--classes", a->num_classes, "output classes")->check(cli::positive())->capture_default_str();
  aggregate->add_option("--models", a->kinds, "model kinds to time: graphsage gcn gat")->delimiter(',')->capture_default_str();
  aggregate->add_option("--torch-threads", a->torch_threads, "libtorch intra-op threads")->check(cli::in_range(1, cli::kMaxThreads))->capture_default_str();
  aggregate->add_option("--runs", a->runs, "measured runs per row (the median is reported)")->check(cli::positive())->capture_default_str();
  aggregate->callback([a, aggregate_fanouts] {
    a->fanouts = parse_fanouts(*aggregate_fanouts, "--fanouts");
    for (const auto& kind : a->kinds) {
      if (kind != "graphsage" && kind != "gcn" && kind != "gat") {
        throw UsageError("--models: '" + kind + "' is not graphsage, gcn or gat");
      }
    }
    bench::run_aggregate_bench(*a);
  });
}

// `bench transfer`: remote features next to raw TCP.
void add_transfer_bench(CLI::App* bench) {
  auto x = std::make_shared<bench::TransferBenchOptions>();
  CLI::App* transfer = bench->add_subcommand(
      "transfer", "remote feature transfer from a daemon next to raw loopback TCP moving the same bytes");
  transfer->add_option("--nodes", x->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  transfer->add_option("--avg-degree", x->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  transfer->add_option("--features", x->feature_dim, "float32 features per node")->check(cli::positive())->capture_default_str();
  transfer->add_option("--rows", x->rows, "random rows per request")->check(cli::positive())->capture_default_str();
  transfer->add_flag("--contiguous", x->contiguous, "the partition's first rows in order instead of random ones (no gather cost)");
  transfer->add_option("--requests", x->requests, "measured requests per configuration and round")->check(cli::positive())->capture_default_str();
  transfer->add_option("--repeat", x->repeat, "interleaved rounds (medians are reported)")->check(cli::positive())->capture_default_str();
  transfer->add_option("--seed", x->seed, "graph and row seed")->capture_default_str();
  transfer->add_option("--workdir", x->workdir, "keep the generated graph here and reuse it (default: a temporary folder)");
  transfer->callback([x] { bench::run_transfer_bench(*x); });
}

// `bench staging`: staging a partition folder next to the request channel.
void add_staging_bench(CLI::App* bench) {
  auto sg = std::make_shared<bench::StagingBenchOptions>();
  CLI::App* staging = bench->add_subcommand(
      "staging", "staging a partition folder to a node's cache next to the request channel moving the same bytes");
  staging->add_option("--nodes", sg->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  staging->add_option("--avg-degree", sg->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  staging->add_option("--features", sg->feature_dim, "float32 features per node")->check(cli::positive())->capture_default_str();
  staging->add_option("--repeat", sg->repeat, "interleaved rounds (medians are reported)")->check(cli::positive())->capture_default_str();
  staging->add_option("--seed", sg->seed, "graph seed")->capture_default_str();
  staging->add_option("--workdir", sg->workdir, "keep the generated graph here and reuse it (default: a temporary folder)");
  staging->add_option("--in-flight", sg->in_flight, "staging requests in flight, e.g. 1,4: (b) once per value each round")
      ->delimiter(',')
      ->check(cli::in_range(1, 64))
      ->capture_default_str();
  staging->callback([sg] { bench::run_staging_bench(*sg); });
}

// `bench allreduce` and its hidden children (one rank each, a CAF echo).
void add_allreduce_bench(CLI::App* bench) {
  auto ar = std::make_shared<bench::AllreduceBenchOptions>();
  CLI::App* allreduce = bench->add_subcommand(
      "allreduce", "allreduce group vs gloo's ring allreduce, one process per rank over loopback");
  allreduce->add_option("--floats", ar->floats, "float32 per buffer, e.g. 1048576,16777216")->delimiter(',')->check(cli::positive());
  allreduce->add_option("--members", ar->members, "group sizes, e.g. 2,4")->delimiter(',')->check(cli::in_range(2, 64));
  allreduce->add_option("--warmup", ar->warmup, "operations before the measured ones")->check(cli::at_least(0))->capture_default_str();
  allreduce->add_option("--iterations", ar->iterations, "measured operations per run")->check(cli::positive())->capture_default_str();
  allreduce->add_option("--runs", ar->runs, "runs per row and implementation (the median is reported)")->check(cli::positive())->capture_default_str();
  allreduce->callback([ar] {
    if (ar->floats.empty() || ar->members.empty()) throw UsageError("--floats and --members need at least one value");
    bench::run_allreduce_bench(*ar);
  });
  // One rank of `bench allreduce` in its own process (hidden: the benchmark starts them).
  auto rank = std::make_shared<bench::AllreduceRankOptions>();
  for (const char* name : {"allreduce-member", "allreduce-gloo"}) {
    CLI::App* sub = bench->add_subcommand(name, "(used by bench allreduce) one rank")->group("");
    sub->add_option("--rank", rank->rank)->required()->check(cli::at_least(0));
    sub->add_option("--size", rank->size)->required()->check(cli::positive());
    sub->add_option("--floats", rank->floats)->required()->check(cli::positive());
    sub->add_option("--warmup", rank->warmup)->check(cli::at_least(0));
    sub->add_option("--iterations", rank->iterations)->check(cli::positive());
    if (std::string(name) == "allreduce-gloo") {
      sub->add_option("--store", rank->store, "rendezvous folder")->required();
      sub->callback([rank] { bench::run_gloo_rank(*rank); });
    } else {
      sub->callback([rank] { bench::run_allreduce_member_rank(*rank); });
    }
  }

  bench->add_subcommand("allreduce-echo", "(used by bench allreduce) a CAF echo")->group("")->callback([] {
    bench::run_echo_process();
  });
}

// `bench linkpred`: DistMult training and ranking.
void add_linkpred_bench(CLI::App* bench) {
  auto lp = std::make_shared<bench::LinkpredBenchOptions>();
  CLI::App* linkpred = bench->add_subcommand(
      "linkpred", "DistMult on FB15k-237: training edges/s (1 process, a partition buffer on disk, 2 daemons, a dense libtorch loop) and filtered ranking against its GEMM floor");
  linkpred->add_option("--dataset", lp->dataset, "a triples folder (default: the shared FB15k-237)");
  linkpred->add_option("--dim", lp->dim, "embedding size")->check(cli::positive())->capture_default_str();
  linkpred->add_option("--batch-size", lp->batch_size, "positives per step")->check(cli::positive())->capture_default_str();
  linkpred->add_option("--negatives", lp->negatives, "negatives per chunk and side")->check(cli::positive())->capture_default_str();
  linkpred->add_option("--chunk-size", lp->chunk_size, "positives sharing negatives")->check(cli::positive())->capture_default_str();
  linkpred->add_option("--steps", lp->steps, "timed steps per configuration and round")->check(cli::positive())->capture_default_str();
  linkpred->add_option("--rounds", lp->rounds, "interleaved rounds")->check(cli::positive())->capture_default_str();
  linkpred->add_option("--cores", lp->cores, "cores in all (torch threads in one process; split over the daemons)")
      ->check(cli::in_range(1, cli::kMaxThreads))->capture_default_str();
  linkpred->add_option("--buffer-partitions", lp->buffer_partitions, "(d): the table's partitions on disk")
      ->check(cli::positive())
      ->capture_default_str();
  linkpred->add_option("--buffer", lp->buffer, "(d): partitions the buffer holds (at least 2)")
      ->check(cli::in_range(2, 1024))
      ->capture_default_str();
  linkpred->add_option("--configs", lp->configs, "configurations to run each round, in order: a (in memory), d (buffer, prefetch), e (buffer, no prefetch), b (2 daemons), c (dense)")
      ->capture_default_str();
  linkpred->add_flag("--drop-cache", lp->drop_cache, "(d), (e): drop the table files' pages from the page cache every 20 ms while the job runs");
  linkpred->add_option("--workdir", lp->work_dir, "keep the partitions here and reuse them");
  linkpred->add_option("--seed", lp->seed, "seed")->capture_default_str();
  linkpred->callback([lp] { bench::run_linkpred_bench(*lp); });
}

// `bench train`: GraphSAGE epochs and a step against its floor.
void add_train_bench(CLI::App* bench) {
  auto t = std::make_shared<bench::TrainBenchOptions>();
  auto train_fanouts = std::make_shared<std::string>("15,10,5");
  CLI::App* train = bench->add_subcommand(
      "train", "seconds per GraphSAGE epoch, in one process and with 2 partitions on 2 daemons; a step against its floor");
  train->add_option("--compare-tls", t->compare_tls,
                    "only (b), this many rounds each over TLS and plaintext (--insecure daemons), alternating")
      ->check(cli::at_least(0));
  train->add_option("--compare-storage", t->compare_storage,
                    "only (a), this many rounds each with features in memory and on disk, alternating")
      ->check(cli::at_least(0));
  train->add_option("--input", t->input, "npy folder with features, labels and a split (default: generate RMAT)");
  train->add_option("--nodes", t->num_nodes, "RMAT nodes")->check(cli::positive())->capture_default_str();
  train->add_option("--avg-degree", t->avg_degree, "RMAT directed edges per node")->check(cli::positive())->capture_default_str();
  train->add_option("--features", t->feature_dim, "float32 features per node")->check(cli::positive())->capture_default_str();
  train->add_option("--classes", t->num_classes, "classes")->check(cli::in_range(2, 65536))->capture_default_str();
  train->add_option("--train-nodes", t->train_nodes, "training nodes")->check(cli::positive())->capture_default_str();
  train->add_option("--hidden", t->hidden, "hidden features")->check(cli::positive())->capture_default_str();
  train->add_option("--fanouts", *train_fanouts, "fanouts, one per layer")->capture_default_str();
  train->add_option("--batch-size", t->batch_size, "seeds per batch")->check(cli::positive())->capture_default_str();
  train->add_option("--cores", t->threads, "cores in all (torch threads in one process; split over the daemons)")
      ->check(cli::positive())->capture_default_str();
  train->add_option("--steps", t->max_steps, "time this many steps of each epoch and scale up (0: whole epochs)")
      ->check(cli::at_least(0))->capture_default_str();
  train->add_option("--profile-steps", t->profile_steps,
                    "steps timed phase by phase against the compute floor, in one process (0: none)")
      ->check(cli::in_range(0, 1000))->capture_default_str();
  train->add_flag("!--no-epochs", t->epochs, "only the step profile, no epochs");
  train->add_flag("!--no-daemons", t->daemons, "epochs of (a) alone, without (b) on daemons");
  train->add_option("--workdir", t->work_dir, "keep the generated partitions here and reuse them")->capture_default_str();
  train->add_option("--seed", t->seed, "graph, weights and sampling seed")->capture_default_str();
  train->add_option("--model", t->model, "graphsage, or rgcn (the hetero generator's graph, --nodes papers; step profile only)")
      ->check(CLI::IsMember({"graphsage", "rgcn"}))->capture_default_str();
  train->add_option("--bases", t->bases, "--model rgcn: bases of the basis decomposition")->check(cli::positive())->capture_default_str();
  train->callback([t, train_fanouts] {
    t->fanouts.clear();
    for (int f : parse_fanouts(*train_fanouts, "--fanouts")) t->fanouts.push_back(f);
    bench::run_train_bench(*t);
  });
}

}  // namespace

void add_bench_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* bench = app.add_subcommand("bench", "run a benchmark (see BENCHMARKS.md)");
  bench->require_subcommand(1);
  // Benchmarks start daemons of their own: they share a CA made for this run (TLS, as a
  // cluster runs), or run plaintext with --insecure.
  // The hidden subcommands (a benchmark's child processes) find the parent's CA in
  // PARTITA_TLS_DIR.
  bench->parse_complete_callback([&global] {
    static std::unique_ptr<runtime::tls::TemporaryCluster> cluster;
    const char* env = std::getenv("PARTITA_TLS_DIR");
    if (global.insecure || !global.tls_dir.empty() || (env != nullptr && *env != '\0')) {
      install_credentials(global);
    } else {
      cluster = std::make_unique<runtime::tls::TemporaryCluster>();
    }
  });

  add_tls_bench(bench);
  add_dashboard_bench(bench);
  add_recovery_bench(bench);
  add_chaos_bench(bench);
  add_network_bench(bench);
  add_partition_bench(bench, global);
  add_sample_bench(bench);
  add_disk_bench(bench);
  add_gather_bench(bench);
  add_codec_bench(bench);
  add_checkpoint_bench(bench);
  add_loader_bench(bench);
  add_aggregate_bench(bench);
  add_transfer_bench(bench);
  add_staging_bench(bench);
  add_allreduce_bench(bench);
  add_linkpred_bench(bench);
  add_train_bench(bench);
}

}  // namespace partita::cli
