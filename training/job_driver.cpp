#include "training/job_driver.h"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "actors/protocol.h"
#include "actors/sampler_client.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/progress.h"
#include "base/stopwatch.h"
#include "embeddings/embedding_shard.h"
#include "partitioner/feature_transforms.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_format.h"
#include "partitioner/readers.h"
#include "partitioner/splits.h"
#include "runtime/address.h"
#include "runtime/answered_request.h"
#include "runtime/collective/allreduce_group.h"
#include "runtime/errors.h"
#include "training/driver_base.h"
#include "training/gnn_link_trainer.h"
#include "training/kg_driver.h"
#include "training/link_metrics.h"
#include "training/metrics_record.h"
#include "training/rating_metrics.h"
#include "training/relational_encoder.h"

namespace partita {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr const char* kCheckpointFile = kCheckpointFileName;
constexpr const char* kMetricsFile = kMetricsFileName;
constexpr const char* kSourceFile = "SOURCE";  // beside the partitions a job wrote itself

// What the job's own partitions were made from: reused only if it still matches.
std::string data_source(const JobConfig& job) {
  std::ostringstream out;
  if (job.generate) {
    const GenerateSpec& g = job.generate_spec;
    out << "generate " << g.kind << " nodes=" << g.nodes << " classes=" << g.classes << " features=" << g.features
        << " avg_degree=" << g.avg_degree << " train_nodes=" << g.train_nodes << " seed=" << g.seed;
  } else {
    out << "dataset " << job.format << " " << job.dataset;
  }
  for (const std::string& t : job.transforms) out << " transform=" << t;
  out << " parts=" << job.num_partitions << " split_seed=" << job.split_seed();
  if (job.holdout_val > 0 || job.holdout_test > 0) {
    out << " holdout=" << job.holdout_val << "," << job.holdout_test << (job.holdout_by_time ? ",time" : "")
        << (job.holdout_keep_history ? ",history" : "");
    for (const std::string& t : job.link.target_edge) out << "," << t;
  }
  out << "\n";
  return out.str();
}

// data.holdout.val of node classification: moves round(fraction * |train|) of d's training
// nodes, drawn with `seed`, into its validation nodes.
void hold_out_train_nodes(Dataset& d, double fraction, uint64_t seed) {
  const int64_t n = static_cast<int64_t>(d.train_idx.size());
  const int64_t moved = std::llround(fraction * static_cast<double>(n));
  if (moved == 0) return;
  SplitOptions cut;
  cut.num_train = n - moved;  // > 0: fraction is at most 0.5 (parse_job)
  cut.train_fraction = 0.0;
  cut.val_fraction = static_cast<double>(moved) / static_cast<double>(n);
  cut.test_fraction = 0.0;
  NodeSplit split = random_node_split(d.train_idx, cut, seed);
  std::vector<int64_t> val = std::move(d.val_idx);
  val.insert(val.end(), split.val.begin(), split.val.end());
  std::sort(val.begin(), val.end());
  spdlog::info("data.holdout.val: {} of {} training nodes moved to validation", split.val.size(), d.train_idx.size());
  d.train_idx = std::move(split.train);
  d.val_idx = std::move(val);
}

// RMAT and the SBM take the same basic knobs.
template <typename Options>
Options generator_options(const GenerateSpec& spec, int threads) {
  Options options;
  options.num_nodes = spec.nodes;
  options.num_classes = spec.classes;
  options.feature_dim = spec.features;
  options.avg_degree = spec.avg_degree;
  options.split.num_train = spec.train_nodes;
  options.seed = spec.seed;
  options.threads = threads;
  return options;
}

Dataset generate(const GenerateSpec& spec, int threads) {
  if (spec.kind == "rmat") return generate_rmat(generator_options<RmatOptions>(spec, threads));
  if (spec.kind == "hetero") {
    HeteroOptions options;
    options.num_papers = spec.nodes;
    options.num_authors = std::max(spec.classes, spec.nodes / 2);
    options.num_venues = std::max(spec.classes, spec.nodes / 400);
    options.num_classes = spec.classes;
    options.feature_dim = spec.features;
    options.citations_per_paper = spec.avg_degree;
    options.split.num_train = spec.train_nodes;
    options.seed = spec.seed;
    options.threads = threads;
    return generate_hetero(options);
  }
  return generate_sbm(generator_options<SbmOptions>(spec, threads));
}

// Where a run starts: after `epoch` whole epochs and `step` steps of the next, with that
// epoch's sums so far (the steps before a checkpoint inside it).
struct ResumePoint {
  int epoch = 0;
  int64_t step = 0;
  double loss_sum = 0, seeds = 0, correct = 0;
  std::vector<double> step_losses;
  std::vector<uint64_t> step_hashes;
};

// The actors of one job and what the driver knows about them.
struct JobActors {
  std::vector<caf::actor> partitions;
  std::vector<caf::actor> samplers;  // per trainer
  std::vector<caf::actor> allreduce;
  // trainer_actor, or gnn_link_trainer_actor for link prediction with a GNN encoder: the
  // messages the driver sends are those the two have in common, and link eval.
  std::vector<caf::actor> trainers;
  std::vector<int64_t> train_seeds;  // per trainer (node classification)
  // Link prediction ranking against every entity (eval.negatives: all): an embedding shard
  // per partition holding its entities' encodings (training/gnn_link_trainer.h).
  std::vector<caf::actor> encodings;
};

// The driver of a GNN job: node classification, or link prediction with a GNN encoder.
class GnnDriver : public DriverBase {
 public:
  GnnDriver(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options)
      : DriverBase(runtime, job, options) {}
  // However the job ends (done, failed, cancelled), its actors stop: a host that runs many
  // jobs on one runtime does not pile them up. A trainer still in an epoch stops once its
  // next allreduce fails (the group is stopped with the rest).
  ~GnnDriver() {
    stop_allreduce_group();
    for (const auto& a : actors_.trainers) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (const auto& a : actors_.samplers) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (const auto& a : actors_.partitions) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (const auto& a : actors_.encodings) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  // Stops the allreduce group: every trainer's next step fails at once (how a trainer in
  // the middle of an epoch, one long message handler, is stopped).
  void stop_allreduce_group() const {
    for (const auto& a : actors_.allreduce) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }

  JobReport run();

 private:
  void spawn_actors();
  // One actor of the job, owned by this driver: its node stops it should the driver go
  // without stopping it (killed, its process's node lost; runtime/host.h).
  caf::actor spawn(int node, const std::string& type, const runtime::Settings& settings) {
    return runtime_.spawn(node, type, settings, caf::actor_cast<caf::actor>(self_));
  }
  // One sampler per trainer, with its partition, wired to every partition actor.
  void spawn_samplers(const std::string& fanouts);
  // The actor an address is, for errors.
  std::string describe_actor(const caf::actor_addr& actor) const;
  int64_t steps_per_epoch() const;
  [[noreturn]] void fail(const Error& failure) const { throw_naming_lost_node(failure); }
  ResumePoint resume_point();
  // Steps [from.step, steps) of `epoch`, after the sums `from` holds of the steps before.
  EpochMetrics train_epoch(int epoch, int64_t steps, const ResumePoint& from);
  // (loss, accuracy) over the split's seeds of every trainer.
  std::pair<double, double> evaluate(const std::string& split);
  // Link prediction: AUC, MRR, Hits@k and loss over the split's held-out edges, scored by
  // every trainer ("valid" or "test").
  // The trainers' rows for `split`'s held-out edges (training/gnn_link_trainer.h), in trainer order.
  std::vector<float> evaluate_links(const std::string& split);
  // eval.negatives: all: filtered and raw MRR and Hits@k of every trainer's ranking of its
  // share of `split` against every entity (training/link_metrics.h ranking_metrics).
  std::vector<std::pair<std::string, double>> rank_links(const std::string& split);
  // eval.negatives: all: spawns the encodings' shards and hands them to the trainers.
  void spawn_encoding_tables();
  // One evaluation reply from each trainer, each handed to `on_reply` (a handler of the
  // reply's types); an error reply, a lost actor or no reply within progress_deadline ends
  // the job, naming it. Blocking receive leaves other messages in the mailbox, so every
  // receive that ends without a failure took one reply.
  template <class OnReply>
  void receive_evaluations(const std::string& split, OnReply on_reply);
  // What a link-prediction job with a GNN encoder needs of its graph, checked before any
  // actor starts: UsageError naming the field otherwise.
  void check_link_job() const;
  // The times temporal sampling reads: the seeds' (node times for node seeds, edge times
  // for link seeds) and the neighbours' (of sampling.temporal.time). UsageError naming
  // sampling.temporal when the graph lacks them.
  void check_temporal_job() const;
  std::vector<char> state_of_first_trainer();
  void restore_all(const std::vector<char>& state);
  // The state after `at.epoch` epochs and `at.step` steps of the next (0: none of it).
  void checkpoint(const ResumePoint& at, const std::vector<char>& state);
  // Tells the host (RunOptions::on_progress); an exception from it is kept in
  // host_error_, to be rethrown once the trainers are stopped.
  void report_progress(const JobProgress& progress);
  // Stops the trainers in the middle of an epoch: drops the allreduce group, so that each
  // fails its next step, and waits for each to report the end of its epoch.
  // `finished` marks those that already did.
  void stop_trainers(int epoch, std::vector<bool> finished);
  [[noreturn]] void throw_cancelled(int epoch, int64_t steps_done) const;

  JobActors actors_;
  uint64_t last_hash_ = 0;
  // What OUTPUT's checkpoint holds (epoch and step only; {0, 0}: none).
  ResumePoint checkpointed_;
  std::exception_ptr host_error_;
};

void GnnDriver::report_progress(const JobProgress& progress) {
  if (!options_.on_progress || host_error_) return;
  try {
    options_.on_progress(progress);
  } catch (...) {
    host_error_ = std::current_exception();
  }
}

void GnnDriver::stop_trainers(int epoch, std::vector<bool> stopped) {
  stop_allreduce_group();
  size_t remaining = static_cast<size_t>(std::count(stopped.begin(), stopped.end(), false));
  auto stop = [&](int32_t trainer) {
    if (trainer >= 0 && static_cast<size_t>(trainer) < stopped.size() && !stopped[trainer]) {
      stopped[trainer] = true;
      --remaining;
    }
  };
  bool timed_out = false;
  while (remaining > 0 && !timed_out) {
    self_->receive([&](train_step_atom, int32_t, uint64_t, int64_t, int64_t, double, double, double, uint64_t) {},
                   [&](train_checkpoint_atom, int32_t, uint64_t, int64_t, std::vector<char>&) {},
                   [&](train_done_atom, int32_t trainer, uint64_t) { stop(trainer); },
                   [&](train_failed_atom, int32_t trainer, std::string&) { stop(trainer); },
                   [&](caf::down_msg& down) {
                     for (size_t t = 0; t < actors_.trainers.size(); ++t) {
                       if (actors_.trainers[t].address() == down.source) stop(static_cast<int32_t>(t));
                     }
                   },
                   caf::after(kRequestDeadline) >> [&] { timed_out = true; });
  }
  if (timed_out) {
    spdlog::warn("epoch {}: {} trainer(s) did not stop within {} s", epoch, remaining, kRequestDeadline.count() / 1000);
  }
}

void GnnDriver::throw_cancelled(int epoch, int64_t steps_done) const {
  std::string what = "job cancelled in epoch " + std::to_string(epoch) + " after " + std::to_string(steps_done) + " step(s); ";
  if (checkpointed_.epoch > 0 || checkpointed_.step > 0) {
    what += (fs::path(job_.output) / kCheckpointFile).string() + " holds " +
            (checkpointed_.step > 0 ? "step " + std::to_string(checkpointed_.step) + " of epoch " +
                                          std::to_string(checkpointed_.epoch + 1)
                                    : "epoch " + std::to_string(checkpointed_.epoch)) +
            " (resume to continue)";
  } else {
    what += "nothing was checkpointed";
  }
  throw JobCancelled(what, epoch, steps_done, checkpointed_.epoch);
}

std::string GnnDriver::describe_actor(const caf::actor_addr& actor) const {
  for (size_t t = 0; t < actors_.trainers.size(); ++t) {
    if (actors_.trainers[t].address() == actor) return describe_trainer(static_cast<int>(t));
  }
  for (size_t p = 0; p < actors_.partitions.size(); ++p) {
    if (actors_.partitions[p].address() == actor) {
      return "partition actor " + std::to_string(p) + " (on " +
             runtime_.node_name(node_of_partition(static_cast<int>(p))) + ")";
    }
  }
  for (size_t t = 0; t < actors_.samplers.size(); ++t) {
    if (actors_.samplers[t].address() == actor) return "the sampler of " + describe_trainer(static_cast<int>(t));
  }
  for (size_t r = 0; r < actors_.allreduce.size(); ++r) {
    if (actors_.allreduce[r].address() == actor) return "allreduce member " + std::to_string(r);
  }
  for (size_t p = 0; p < actors_.encodings.size(); ++p) {
    if (actors_.encodings[p].address() == actor) {
      return "the encoding table of partition " + std::to_string(p) + " (on " +
             runtime_.node_name(node_of_partition(static_cast<int>(p))) + ")";
    }
  }
  const int node = runtime_.node_of(actor);
  return node >= 0 ? "an actor on " + runtime_.node_name(node) : "an unknown actor";
}

void GnnDriver::spawn_actors() {
  // Before anything is spawned: an edge type the graph lacks fails the job here.
  const std::string fanouts = fanout_setting(job_, folder_.meta().edge_types);
  for (int p = 0; p < job_.num_partitions; ++p) {
    runtime::Settings settings{{"dir", dir_on(node_of_partition(p))},
                               {"part", std::to_string(p)},
                               {"fanouts", fanouts},
                               {"replace", job_.replace ? "true" : "false"},
                               {"hop_independent", job_.link_gnn() ? "true" : "false"},
                               {"disjoint", job_.temporal() ? "true" : "false"},
                               {"temporal", job_.temporal() ? job_.temporal_time : "none"},
                               {"temporal_strategy", job_.temporal_strategy},
                               {"features", job_.feature_storage}};
    // Its feature channel listens where the samplers on other nodes reach its node.
    if (runtime_.is_distributed()) {
      settings["channel_host"] = runtime::parse_endpoint(runtime_.node_name(node_of_partition(p)), "daemon").host;
    }
    actors_.partitions.push_back(spawn(node_of_partition(p), "partition", settings));
  }
  const int num_trainers = job_.num_trainers();
  spawn_samplers(fanouts);
  for (int t = 0; t < num_trainers; ++t) {
    const int node = node_of_partition(job_.part_of_trainer(t));
    runtime::Settings settings{{"rank", std::to_string(t)}, {"size", std::to_string(num_trainers)}};
    // Ring neighbours connect to each other directly: at the address the driver reached the
    // member's daemon at, which the other daemons can reach too.
    if (runtime_.is_distributed()) settings["host"] = runtime::parse_endpoint(runtime_.node_name(node), "daemon").host;
    actors_.allreduce.push_back(spawn(node, "allreduce", settings));
  }
  runtime::connect_allreduce_group(runtime_.system(), actors_.allreduce, kRequestDeadline);
  // The job as each node reads it: with the partition folder where that node has it.
  const auto job_yaml_on = [&](int node) {
    if (options_.node_partition_dirs.empty()) return job_to_yaml(job_);
    JobConfig there = job_;
    there.partitions = dir_on(node);
    return job_to_yaml(there);
  };
  for (int t = 0; t < num_trainers; ++t) {
    const int node = node_of_partition(job_.part_of_trainer(t));
    actors_.trainers.push_back(spawn(node, job_.link_gnn() ? "gnn_link_trainer" : "trainer",
                                     {{"job", job_yaml_on(node)}, {"trainer", std::to_string(t)}}));
  }
  for (const auto& a : actors_.partitions) self_->monitor(a);
  for (const auto& a : actors_.samplers) self_->monitor(a);
  for (const auto& a : actors_.allreduce) self_->monitor(a);
  for (const auto& a : actors_.trainers) self_->monitor(a);
  for (int t = 0; t < num_trainers; ++t) {
    std::optional<caf::error> failed;
    runtime::receive_reply(self_,
                           self_->request(actors_.trainers[t], kRequestDeadline, train_setup_atom::value,
                                          actors_.samplers[t], actors_.allreduce[t]),
        [](bool) {}, [&](caf::error& e) { failed = e; });
    if (failed) throw Error(describe_trainer(t) + ": set-up failed: " + runtime::describe(runtime_.system(), *failed));
  }
  if (job_.link_gnn() && job_.link.eval_negatives == 0) spawn_encoding_tables();
  for (int t = 0; t < num_trainers; ++t) {
    const int part = job_.part_of_trainer(t);
    const auto [begin, end] = job_.share_of_trainer(t, folder_.meta().parts[part].num_train);
    actors_.train_seeds.push_back(end - begin);
  }
}

void GnnDriver::spawn_encoding_tables() {
  const std::string run_key = new_shard_run_key(job_.output, job_.seed);
  for (int p = 0; p < job_.num_partitions; ++p) {
    const int node = node_of_partition(p);
    // A table written, never stepped: its optimiser settings are the shard's defaults.
    runtime::Settings settings{{"run", run_key},
                               {"dir", dir_on(node)},
                               {"part", std::to_string(p)},
                               {"dim", std::to_string(job_.link.dim)},
                               {"trainers", std::to_string(job_.num_trainers())},
                               {"seed", std::to_string(job_.seed)},
                               {"init_std", "0"},
                               {"learning_rate", "1"}};
    if (runtime_.is_distributed()) settings["host"] = runtime::parse_endpoint(runtime_.node_name(node), "daemon").host;
    actors_.encodings.push_back(spawn(node, "embedding_shard", settings));
    self_->monitor(actors_.encodings.back());
  }
  for (int t = 0; t < job_.num_trainers(); ++t) {
    std::optional<caf::error> failed;
    runtime::receive_reply(
        self_, self_->request(actors_.trainers[t], kRequestDeadline, link_table_atom::value, actors_.encodings, run_key),
        [](bool) {}, [&](caf::error& e) { failed = e; });
    if (failed) {
      throw Error(describe_trainer(t) + ": set-up of the encoding tables failed: " +
                  runtime::describe(runtime_.system(), *failed));
    }
  }
}

void GnnDriver::spawn_samplers(const std::string& fanouts) {
  const int k = job_.trainers_per_partition;
  for (int t = 0; t < job_.num_trainers(); ++t) {
    const int part = job_.part_of_trainer(t);
    actors_.samplers.push_back(spawn(node_of_partition(part), "sampler",
                                     {{"dir", dir_on(node_of_partition(part))},
                                      {"part", std::to_string(part)},
                                      {"fanouts", fanouts},
                                      {"replace", job_.replace ? "true" : "false"},
                                      {"hop_independent", job_.link_gnn() ? "true" : "false"},
                                      {"disjoint", job_.temporal() ? "true" : "false"},
                                      {"temporal", job_.temporal() ? job_.temporal_time : "none"},
                                      {"temporal_strategy", job_.temporal_strategy},
                                      {"seed_order", job_.time_ordered && !job_.link_gnn() ? "time" : "id"},
                                      {"labels", job_.link_gnn() ? "false" : "true"},
                                      {"prefetch", std::to_string(job_.prefetch)},
                                      {"features", job_.feature_storage},
                                      {"feature_cache_mb", std::to_string(job_.feature_cache_mb)},
                                      {"feature_cache_policy", job_.feature_cache_policy},
                                      {"share", std::to_string(t % k)},
                                      {"shares", std::to_string(k)}}));
  }
  // Each sampler connects to the daemons of the other partitions directly, at the address
  // the driver reached them at (CAF would otherwise route through this process).
  std::vector<std::string> addresses;
  if (runtime_.is_distributed()) {
    for (int p = 0; p < job_.num_partitions; ++p) addresses.push_back(runtime_.node_name(node_of_partition(p)));
  }
  for (int t = 0; t < job_.num_trainers(); ++t) {
    try {
      wire_sampler(runtime_.system(), caf::actor_cast<sampler_actor>(actors_.samplers[t]), actors_.partitions,
                   addresses, kRequestDeadline);
    } catch (const Error& e) {
      throw Error("the sampler of " + describe_trainer(t) + ": set-up failed: " + e.what());
    }
  }
}

int64_t GnnDriver::steps_per_epoch() const {
  if (job_.link_gnn()) {
    // Global steps: the s-th slice of batch_size training edges (of the target type),
    // whoever holds them.
    const int64_t edges = link_training_edges(job_, folder_);
    if (edges == 0) throw UsageError(folder_.dir() + " has no edges to train a link predictor on");
    return (edges + job_.batch_size - 1) / job_.batch_size;
  }
  int64_t steps = 0;
  for (int64_t seeds : actors_.train_seeds) steps = std::max(steps, (seeds + job_.batch_size - 1) / job_.batch_size);
  if (steps == 0) throw UsageError(folder_.dir() + " has no training nodes");
  return steps;
}

EpochMetrics GnnDriver::train_epoch(int epoch, int64_t steps, const ResumePoint& from) {
  const int num_trainers = static_cast<int>(actors_.trainers.size());
  const int64_t first = from.step;
  if (first > steps || static_cast<int64_t>(from.step_losses.size()) != first ||
      static_cast<int64_t>(from.step_hashes.size()) != first) {
    throw Error("cannot resume epoch " + std::to_string(epoch) + " after step " + std::to_string(first) + " of " +
                std::to_string(steps) + ": the checkpoint's step sums do not match");
  }
  for (const auto& trainer : actors_.trainers) {
    self_->send(trainer, train_epoch_atom::value, static_cast<uint64_t>(epoch), first, steps,
                job_.checkpoint_every_steps, caf::actor_cast<caf::actor>(self_));
  }
  EpochMetrics m;
  m.epoch = epoch;
  m.steps = steps;
  m.step_losses.assign(steps, 0.0);
  std::vector<int> reports(steps, 0);
  std::vector<uint64_t> hashes(steps, 0);
  std::vector<double> step_seeds(steps, 0.0), step_correct(steps, 0.0);
  for (int64_t s = 0; s < first; ++s) {
    reports[s] = num_trainers;
    m.step_losses[s] = from.step_losses[s];
    hashes[s] = from.step_hashes[s];
  }
  double loss_sum = from.loss_sum, seeds = from.seeds, correct = from.correct;
  // The sums after each step, for a checkpoint inside the epoch: steps are summed in order
  // (a step's first report comes after the previous step's), so a resumed epoch adds the
  // same numbers in the same order.
  std::vector<std::array<double, 3>> sums_after(steps, {0, 0, 0});
  int done = 0;
  std::optional<Error> failure;
  Stopwatch watch;
  // A bar on a terminal, a line every 2 s otherwise; the epoch's summary line is logged below.
  Progress bar("epoch " + std::to_string(epoch) + "/" + std::to_string(job_.epochs), steps, "steps");
  int64_t steps_seen = first;
  bar.set(steps_seen);
  bool stopping = false;  // cancelled, or the host's callback threw
  // With a cancel token the wait wakes up every kCancelPoll to look at it; the progress
  // deadline still counts from the last message.
  const milliseconds wait = options_.cancel ? std::min(kCancelPoll, options_.progress_deadline) : options_.progress_deadline;
  auto last_message = std::chrono::steady_clock::now();
  std::vector<bool> finished(num_trainers, false);  // trainers that reported the epoch's end
  while (done < num_trainers && !failure && !stopping) {
    bool idle = false;
    self_->receive(
        [&](train_step_atom, int32_t trainer, uint64_t e, int64_t step, int64_t, double step_loss, double step_seeds,
            double step_correct, uint64_t hash) {
          if (e != static_cast<uint64_t>(epoch) || step < 0 || step >= steps || trainer < 0 || trainer >= num_trainers) {
            failure = Error("trainer " + std::to_string(trainer) + " reported step " + std::to_string(step) +
                            " of epoch " + std::to_string(e) + " during epoch " + std::to_string(epoch));
            return;
          }
          if (reports[step]++ == 0) {
            hashes[step] = hash;
            m.step_losses[step] = step_seeds > 0 ? step_loss / step_seeds : 0.0;
            loss_sum += step_loss;
            seeds += step_seeds;
            correct += step_correct;
            sums_after[step] = {loss_sum, seeds, correct};
          } else if (hashes[step] != hash) {
            failure = Error("replicas diverged: " + describe_trainer(trainer) + " holds other weights than trainer 0 after step " +
                            std::to_string(step) + " of epoch " + std::to_string(epoch));
            return;
          }
          if (reports[step] == num_trainers) {
            ++steps_seen;
            last_hash_ = hash;
            JobProgress progress = step_progress(epoch, steps_seen, steps, m.step_losses[step], watch.seconds());
            progress.accuracy = step_seeds > 0 ? step_correct / step_seeds : 0.0;
            report_progress(progress);
            stopping = host_error_ || cancel_requested();
          }
          bar.set_note(fmt::format("loss {:.4f}", m.step_losses[std::max<int64_t>(0, steps_seen - 1)]));
          bar.set(steps_seen);
        },
        [&](train_checkpoint_atom, int32_t, uint64_t e, int64_t step, std::vector<char>& state) {
          // Trainer 0's state after `step`; its report of that step came before (one sender).
          if (e != static_cast<uint64_t>(epoch) || step < first || step >= steps || reports[step] == 0) return;
          ResumePoint at;
          at.epoch = epoch - 1;
          at.step = step + 1;
          at.loss_sum = sums_after[step][0];
          at.seeds = sums_after[step][1];
          at.correct = sums_after[step][2];
          at.step_losses.assign(m.step_losses.begin(), m.step_losses.begin() + step + 1);
          at.step_hashes.assign(hashes.begin(), hashes.begin() + step + 1);
          checkpoint(at, state);
        },
        [&](train_done_atom, int32_t trainer, uint64_t) {
          if (trainer >= 0 && trainer < num_trainers && !finished[trainer]) {
            finished[trainer] = true;
            ++done;
          }
        },
        [&](train_failed_atom, int32_t trainer, std::string& what) {
          failure = Error(describe_trainer(trainer) + " failed in epoch " + std::to_string(epoch) + ": " + what);
        },
        [&](caf::down_msg& down) {
          failure = Error(describe_actor(down.source) + " was lost: " + runtime::describe(runtime_.system(), down.reason));
        },
        caf::after(wait) >> [&] {
          idle = true;
          if (cancel_requested()) {
            stopping = true;
          } else if (std::chrono::steady_clock::now() - last_message >= options_.progress_deadline) {
            failure = Error("no progress from the trainers for " +
                            std::to_string(options_.progress_deadline.count() / 1000) + " s in epoch " +
                            std::to_string(epoch));
          }
        });
    if (!idle) last_message = std::chrono::steady_clock::now();
  }
  if (stopping && !failure) {
    spdlog::info("epoch {}: stopping the trainers after step {} ({})", epoch, steps_seen,
                 host_error_ ? "the progress callback failed" : "cancelled");
    stop_trainers(epoch, std::move(finished));
    if (host_error_) std::rethrow_exception(host_error_);
    throw_cancelled(epoch, steps_seen);
  }
  if (failure) {
    // Dropping the allreduce group fails every trainer's next step at once, instead of
    // leaving them blocked until their own deadlines.
    stop_allreduce_group();
    fail(*failure);
  }
  for (int64_t s = 0; s < steps; ++s) {
    if (reports[s] != num_trainers) throw Error("step " + std::to_string(s) + " was not reported by every trainer");
  }
  m.seconds = watch.seconds();
  m.batches_per_second = steps * num_trainers / m.seconds;
  m.train_loss = seeds > 0 ? loss_sum / seeds : 0;
  m.train_accuracy = seeds > 0 ? correct / seeds : 0;
  m.step_hashes = std::move(hashes);
  return m;
}

template <class OnReply>
void GnnDriver::receive_evaluations(const std::string& split, OnReply on_reply) {
  std::optional<Error> failure;
  for (size_t replies = 0; replies < actors_.trainers.size() && !failure; ++replies) {
    self_->receive(
        on_reply,
        [&](caf::error& e) {
          failure = Error(describe_actor(caf::actor_cast<caf::actor_addr>(self_->current_sender())) + ": evaluating " +
                          split + " failed: " + runtime::describe(runtime_.system(), e));
        },
        [&](caf::down_msg& down) {
          failure = Error(describe_actor(down.source) + " was lost: " + runtime::describe(runtime_.system(), down.reason));
        },
        caf::after(options_.progress_deadline) >> [&] {
          failure = Error("no evaluation result from the trainers for " +
                          std::to_string(options_.progress_deadline.count() / 1000) + " s");
        });
  }
  if (failure) fail(*failure);
}

std::pair<double, double> GnnDriver::evaluate(const std::string& split) {
  // Sent, not requested, so that every trainer evaluates at once; the replies come back
  // as plain messages, told apart by their sender.
  for (const auto& trainer : actors_.trainers) self_->send(trainer, evaluate_atom::value, split);
  double loss = 0;
  int64_t correct = 0, seeds = 0;
  receive_evaluations(split, [&](double l, int64_t c, int64_t n) {
    loss += l;
    correct += c;
    seeds += n;
  });
  if (seeds == 0) return {0, 0};
  return {loss / seeds, static_cast<double>(correct) / seeds};
}

std::vector<float> GnnDriver::evaluate_links(const std::string& split) {
  for (const auto& trainer : actors_.trainers) self_->send(trainer, link_eval_atom::value, split);
  // By trainer, so that the metrics' sums run in one order however the replies arrive.
  std::vector<std::vector<char>> scores(actors_.trainers.size());
  receive_evaluations(split, [&](std::vector<char>& bytes) {
    const caf::actor_addr sender = caf::actor_cast<caf::actor_addr>(self_->current_sender());
    for (size_t t = 0; t < actors_.trainers.size(); ++t) {
      if (actors_.trainers[t].address() == sender) scores[t] = std::move(bytes);
    }
  });
  std::vector<float> rows;
  for (const std::vector<char>& bytes : scores) {
    const size_t at = rows.size(), n = bytes.size() / sizeof(float);
    rows.resize(at + n);
    if (n > 0) std::memcpy(rows.data() + at, bytes.data(), n * sizeof(float));
  }
  return rows;
}

std::vector<std::pair<std::string, double>> GnnDriver::rank_links(const std::string& split) {
  Stopwatch watch;
  for (const auto& trainer : actors_.trainers) self_->send(trainer, link_eval_atom::value, split);
  std::vector<double> sums(kRankingSums, 0.0);
  std::optional<Error> bad;
  receive_evaluations(split, [&](std::vector<char>& bytes) {
    try {
      add_ranking_sums(Span<const char>(bytes.data(), bytes.size()), sums);
    } catch (const Error& e) {
      bad = e;
    }
  });
  if (bad) fail(*bad);
  return ranking_metrics(sums, split, watch.seconds());
}

void GnnDriver::check_link_job() const {
  const PartitionMeta& meta = folder_.meta();
  const int32_t target = check_link_encoder_fits(job_, meta, folder_.dir());
  check_held_out_history(job_, meta, folder_.dir());
  if (target < 0) {
    check_negatives_fit(job_, meta.num_nodes, "nodes of the graph");
  } else {
    // Negatives are nodes of the target edge type's destination type.
    const std::string& type = meta.edge_types[target].dst_type;
    const int32_t index =
        static_cast<int32_t>(std::find(meta.node_types.begin(), meta.node_types.end(), type) - meta.node_types.begin());
    const std::vector<int32_t> types = global_node_types(folder_);
    check_negatives_fit(job_, std::count(types.begin(), types.end(), index), "'" + type + "' nodes of model.target_edge");
  }
  if (job_.link.regression()) check_rating_target(job_, meta, folder_.dir(), options_.evaluate);
  if (options_.evaluate && !meta.has_edge_splits) {
    throw UsageError(folder_.dir() + " has no held-out edges to evaluate a link predictor on: give data.holdout "
                                     "(e.g. {val: 0.05, test: 0.1})");
  }
}

void GnnDriver::check_temporal_job() const {
  const PartitionMeta& meta = folder_.meta();
  const auto require = [&](bool present, const std::string& what, const std::string& why) {
    if (!present) {
      throw UsageError("sampling.temporal: " + folder_.dir() + " has no " + what + " times (" + why +
                       "); a graph without times cannot be sampled in time");
    }
  };
  if (job_.temporal_time == "node") require(meta.has_node_time, "node", "time: node bounds neighbours by them");
  if (job_.temporal_time == "edge") require(meta.has_edge_time, "edge", "time: edge bounds neighbours by them");
  if (job_.link_gnn()) {
    require(meta.has_edge_time, "edge", "a positive edge's time bounds its ends' neighbourhoods");
  } else {
    require(meta.has_node_time, "node", "a seed node's time bounds its neighbourhood");
  }
}

std::vector<char> GnnDriver::state_of_first_trainer() {
  std::vector<char> state;
  std::optional<caf::error> failed;
  runtime::receive_reply(self_, self_->request(actors_.trainers[0], kRequestDeadline, get_state_atom::value),
      [&](std::vector<char>& bytes) { state = std::move(bytes); }, [&](caf::error& e) { failed = e; });
  if (failed) fail(Error(describe_trainer(0) + ": cannot read its state: " + runtime::describe(runtime_.system(), *failed)));
  return state;
}

void GnnDriver::restore_all(const std::vector<char>& state) {
  for (size_t t = 0; t < actors_.trainers.size(); ++t) {
    std::optional<caf::error> failed;
    runtime::receive_reply(self_, self_->request(actors_.trainers[t], kRequestDeadline, set_state_atom::value, state),
        [](bool) {}, [&](caf::error& e) { failed = e; });
    if (failed) {
      fail(Error(describe_trainer(static_cast<int>(t)) + ": cannot restore the checkpoint: " +
                  runtime::describe(runtime_.system(), *failed)));
    }
  }
}

void GnnDriver::checkpoint(const ResumePoint& at, const std::vector<char>& state) {
  const fs::path dir = fs::path(job_.output) / "checkpoints";
  fs::create_directories(dir);
  const std::string name =
      "epoch-" + std::to_string(at.step > 0 ? at.epoch + 1 : at.epoch) + (at.step > 0 ? "-step-" + std::to_string(at.step) : "") + ".bin";
  write_file_atomically((dir / name).string(), state.data(), state.size());
  nlohmann::json meta = {{"epoch", at.epoch}, {"file", "checkpoints/" + name}, {"seed", job_.seed}};
  if (at.step > 0) {
    meta["step"] = at.step;
    meta["partial"] = {{"loss_sum", at.loss_sum},
                       {"seeds", at.seeds},
                       {"correct", at.correct},
                       {"step_losses", at.step_losses},
                       {"step_hashes", at.step_hashes}};
  }
  // The pointer moves last: a crash in between leaves the previous checkpoint in force.
  write_file_atomically((fs::path(job_.output) / kCheckpointFile).string(), meta.dump() + "\n");
  checkpointed_.epoch = at.epoch;
  checkpointed_.step = at.step;
  // One checkpoint to resume from is enough; older ones only fill the disk.
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename() != name) fs::remove(entry.path());
  }
  if (at.step > 0) spdlog::info("checkpoint after step {} of epoch {}", at.step, at.epoch + 1);
}

ResumePoint GnnDriver::resume_point() {
  if (!options_.resume) return {};
  const std::optional<CheckpointPointer> pointer = read_checkpoint_pointer(job_.output);
  if (!pointer) throw UsageError("cannot resume: " + job_.output + " holds no checkpoint (" + kCheckpointFile + ")");
  const nlohmann::json& meta = pointer->meta;
  try {
    ResumePoint at;
    at.epoch = pointer->epoch;
    at.step = pointer->step;
    if (at.step > 0) {
      const nlohmann::json& partial = meta.at("partial");
      at.loss_sum = partial.at("loss_sum").get<double>();
      at.seeds = partial.at("seeds").get<double>();
      at.correct = partial.at("correct").get<double>();
      at.step_losses = partial.at("step_losses").get<std::vector<double>>();
      at.step_hashes = partial.at("step_hashes").get<std::vector<uint64_t>>();
    }
    const fs::path file = fs::path(job_.output) / meta.at("file").get<std::string>();
    if (meta.at("seed").get<uint64_t>() != job_.seed) {
      throw UsageError("cannot resume: the checkpoint was written with seed " + std::to_string(meta.at("seed").get<uint64_t>()) +
                       ", the job says " + std::to_string(job_.seed));
    }
    const std::string bytes = read_file_if_exists(file.string());
    if (bytes.empty()) throw Error("cannot resume: " + file.string() + " is missing or empty");
    restore_all(std::vector<char>(bytes.begin(), bytes.end()));
    if (at.step > 0) {
      spdlog::info("resuming epoch {} after step {} from {}", at.epoch + 1, at.step, file.string());
    } else {
      spdlog::info("resuming after epoch {} from {}", at.epoch, file.string());
    }
    return at;
  } catch (const nlohmann::json::exception& e) {
    throw Error("cannot resume: " + pointer->path + " is damaged: " + e.what());
  }
}

JobReport GnnDriver::run() {
  if (job_.link_gnn()) check_link_job();
  if (job_.temporal()) check_temporal_job();
  open_job_output(job_, options_);
  check_placement(options_, job_.num_partitions, runtime_.num_nodes());

  announce_owner();
  spawn_actors();
  ResumePoint from = resume_point();
  const int done_epochs = from.epoch;
  const int64_t full_steps = steps_per_epoch();
  const int64_t steps = options_.max_steps > 0 ? std::min(options_.max_steps, full_steps) : full_steps;
  spdlog::info("training {} on {}: {} trainer(s) on {} node(s), {} steps per epoch", job_.model.description(), folder_.dir(),
               actors_.trainers.size(), runtime_.num_nodes(), steps);
  JobReport report;
  report.first_epoch = done_epochs + 1;
  report.steps_per_epoch = full_steps;
  const int last_epoch = options_.stop_after_epoch > 0 ? std::min(options_.stop_after_epoch, job_.epochs) : job_.epochs;
  checkpointed_.epoch = from.epoch;
  checkpointed_.step = from.step;
  start_selection(done_epochs);
  int ran_to = std::max(done_epochs, 0);
  bool early_stopped = false;
  for (int epoch = done_epochs + 1; epoch <= last_epoch; ++epoch) {
    if (cancel_requested()) throw_cancelled(epoch, 0);
    EpochMetrics m = train_epoch(epoch, steps, from);
    from = ResumePoint{};
    // eval.every: a link job evaluates after every N-th epoch and after the last.
    const bool evaluate_now = options_.evaluate && (!job_.link_gnn() || epoch % job_.link.eval_every == 0 ||
                                                    epoch == last_epoch);
    if (evaluate_now && job_.link_gnn() && job_.link.regression()) {
      const RatingMetrics valid = rating_metrics(evaluate_links("valid")), test = rating_metrics(evaluate_links("test"));
      m.val_loss = valid.rmse * valid.rmse;
      m.test_loss = test.rmse * test.rmse;
      for (const RatingMetrics* split : {&valid, &test}) {
        for (auto& entry : split->named(split == &valid ? "valid" : "test")) m.ranking.push_back(std::move(entry));
      }
      spdlog::info("epoch {}/{}: {:.1f}s, {:.2f} batches/s, train mse {:.4f}, valid rmse {:.4f}, test rmse {:.4f} "
                   "(predicting the training mean: {:.4f}, each destination's training mean: {:.4f})",
                   epoch, job_.epochs, m.seconds, m.batches_per_second, m.train_loss, valid.rmse, test.rmse,
                   test.rmse_global_mean, test.rmse_destination_mean);
    } else if (evaluate_now && job_.link_gnn() && job_.link.eval_negatives == 0) {
      for (const std::string split : {"valid", "test"}) {
        for (auto& metric : rank_links(split)) m.ranking.push_back(std::move(metric));
      }
      spdlog::info("epoch {}/{}: {:.1f}s, {:.2f} batches/s, train loss {:.4f}; valid MRR {:.4f}; test MRR {:.4f}, "
                   "hits@1 {:.4f}, hits@10 {:.4f} (filtered, against all entities; raw MRR {:.4f}); ranking {:.1f}s",
                   epoch, job_.epochs, m.seconds, m.batches_per_second, m.train_loss, m.ranking_metric("valid.mrr"),
                   m.ranking_metric("test.mrr"), m.ranking_metric("test.hits@1"), m.ranking_metric("test.hits@10"),
                   m.ranking_metric("test.raw_mrr"), m.ranking_metric("test.seconds"));
    } else if (evaluate_now && job_.link_gnn()) {
      const LinkMetrics valid = link_metrics(evaluate_links("valid"), job_.link.eval_negatives),
                        test = link_metrics(evaluate_links("test"), job_.link.eval_negatives);
      m.val_loss = valid.loss;
      m.test_loss = test.loss;
      for (const LinkMetrics* split : {&valid, &test}) {
        for (auto& entry : split->named(split == &valid ? "valid" : "test")) m.ranking.push_back(std::move(entry));
      }
      spdlog::info("epoch {}/{}: {:.1f}s, {:.2f} batches/s, train loss {:.4f}, valid auc {:.4f} mrr {:.4f}, test auc "
                   "{:.4f} mrr {:.4f} hits@10 {:.4f}",
                   epoch, job_.epochs, m.seconds, m.batches_per_second, m.train_loss, valid.auc, valid.mrr, test.auc,
                   test.mrr, test.hits10);
    } else if (job_.link_gnn()) {
      spdlog::info("epoch {}/{}: {:.1f}s, {:.2f} batches/s, train loss {:.4f}", epoch, job_.epochs, m.seconds,
                   m.batches_per_second, m.train_loss);
    } else {
      if (evaluate_now) {
        std::tie(m.val_loss, m.val_accuracy) = evaluate("val");
        std::tie(m.test_loss, m.test_accuracy) = evaluate("test");
      }
      spdlog::info("epoch {}/{}: {:.1f}s, {:.2f} batches/s, train loss {:.4f} acc {:.4f}, val acc {:.4f}, test acc {:.4f}",
                   epoch, job_.epochs, m.seconds, m.batches_per_second, m.train_loss, m.train_accuracy, m.val_accuracy,
                   m.test_accuracy);
    }
    report.final_state = state_of_first_trainer();
    ResumePoint done;
    done.epoch = epoch;
    checkpoint(done, report.final_state);
    append_metrics(m);
    const bool stop = select_epoch(m);
    ran_to = epoch;
    report.add_epoch(std::move(m));
    JobProgress progress;
    progress.event = JobProgress::Event::epoch;
    progress.epoch = epoch;
    progress.epochs = job_.epochs;
    progress.step = progress.steps = steps;
    progress.loss = report.epochs.back().train_loss;
    progress.accuracy = report.epochs.back().train_accuracy;
    progress.seconds = report.epochs.back().seconds;
    progress.steps_per_second = progress.seconds > 0 ? steps / progress.seconds : 0.0;
    progress.metrics = &report.epochs.back();
    report_progress(progress);
    if (host_error_) std::rethrow_exception(host_error_);
    if (stop && epoch < last_epoch) {
      early_stopped = true;
      break;
    }
  }
  report.parameter_hash = last_hash_;
  finish_selection(report, ran_to, early_stopped);
  return report;
}

}  // namespace

void check_placement(const RunOptions& options, int partitions, int nodes) {
  const std::vector<int>& placement = options.placement;
  if (!options.node_partition_dirs.empty() && static_cast<int>(options.node_partition_dirs.size()) != nodes) {
    throw UsageError("partition folders for " + std::to_string(options.node_partition_dirs.size()) + " node(s) of " +
                     std::to_string(nodes));
  }
  if (placement.empty()) return;
  if (static_cast<int>(placement.size()) != partitions) {
    throw UsageError("a placement of " + std::to_string(placement.size()) + " partition(s) for a job of " +
                     std::to_string(partitions));
  }
  for (int node : placement) {
    if (node < 0 || node >= nodes) {
      throw UsageError("a placement on node " + std::to_string(node) + " of " + std::to_string(nodes));
    }
  }
}

void open_job_output(const JobConfig& job, const RunOptions& options) {
  fs::create_directories(job.output);
  const bool has_run = fs::exists(fs::path(job.output) / kCheckpointFile) || fs::exists(fs::path(job.output) / kMetricsFile);
  if (has_run && !options.resume && !options.overwrite) {
    throw UsageError("output " + job.output + " already holds a run: resume it (--resume) or start afresh (--overwrite)");
  }
  if (!options.resume) {
    fs::remove(fs::path(job.output) / kCheckpointFile);
    fs::remove(fs::path(job.output) / kMetricsFile);
    fs::remove_all(fs::path(job.output) / "checkpoints");
    fs::remove_all(fs::path(job.output) / kSelectedDirName);
    fs::remove(fs::path(job.output) / kReportFileName);
  }
  write_file_atomically((fs::path(job.output) / "job.yaml").string(), job_to_yaml(job));
}

void prepare_data(const JobConfig& job, int threads) {
  if (!job.partitions.empty()) return;  // a folder the user partitioned
  const fs::path dir = job.partition_dir();
  const std::string source = data_source(job);
  if (fs::exists(dir / "META.json") && read_file_if_exists((dir / kSourceFile).string()) == source) {
    spdlog::info("reusing {} ({})", dir.string(), source.substr(0, source.size() - 1));
    return;
  }
  fs::create_directories(job.output);
  Stopwatch watch;
  Dataset dataset;
  if (job.generate) {
    dataset = generate(job.generate_spec, threads);
  } else {
    ReadOptions read;
    read.split_seed = job.split_seed();
    read.val_fraction = 0;  // a job cuts validation nodes only when asked (data.holdout.val, below)
    read.remap_ids = job.remap_ids;
    read.undirected = job.undirected;
    dataset = read_dataset(job.format, job.dataset, read);
  }
  if (!job.link_prediction() && job.holdout_val > 0) hold_out_train_nodes(dataset, job.holdout_val, job.split_seed());
  std::vector<FeatureTransform> transforms;
  for (const std::string& t : job.transforms) transforms.push_back(parse_feature_transform(t, "data.transforms"));
  apply_feature_transforms(dataset, transforms);
  if (job.link_prediction() && (job.holdout_val > 0 || job.holdout_test > 0)) {
    // Of the target edge type only (and out of its reverse type too), when the job has one.
    const int32_t target = find_target_edge(dataset.edge_types, job.link.target_edge, "dataset '" + dataset.name + "'");
    hold_out_edges(dataset, job.holdout_val, job.holdout_test, job.split_seed(), job.holdout_by_time, target,
                   job.holdout_keep_history ? HeldOut::kKeepAsHistory : HeldOut::kLeaveGraph);
    spdlog::info("held out {} validation and {} test edges{}", dataset.val_edges.size(), dataset.test_edges.size(),
                 dataset.held_out_in_graph ? " (kept in the graph as history)" : "");
  }
  spdlog::info("{}: {} nodes, {} edges ({:.1f}s); partitioning into {} parts", source.substr(0, source.size() - 1),
               dataset.num_nodes, dataset.num_edges(), watch.seconds(), job.num_partitions);
  PartitionOptions options;
  options.num_parts = job.num_partitions;
  options.seed = job.split_seed();  // the partitioning is part of the data, as the split is
  options.threads = threads;
  WriteOptions write;
  write.overwrite = true;
  write.threads = threads;
  write.keep_node_names = job.remap_ids;  // the id map, beside the partitions
  partition_dataset(dataset, options, dir.string(), write);
  write_file_atomically((dir / kSourceFile).string(), source);
}

JobReport run_job(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options) {
  // Embedding jobs have their own driver; GNN encoders train as node classifiers do.
  if (job.link_prediction() && !job.link_gnn()) return run_kg_job(runtime, job, options);
  GnnDriver driver(runtime, job, options);
  return driver.run();
}

}  // namespace partita
