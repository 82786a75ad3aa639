#include "training/kg_driver.h"

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/checksum.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/progress.h"
#include "base/random.h"
#include "base/stopwatch.h"
#include "embeddings/bucket_epoch.h"
#include "embeddings/embedding_shard.h"
#include "partitioner/partition_format.h"
#include "runtime/address.h"
#include "runtime/answered_request.h"
#include "runtime/collective/allreduce_group.h"
#include "runtime/errors.h"
#include "runtime/host.h"
#include "training/driver_base.h"
#include "training/gnn_link_trainer.h"
#include "training/kg_trainer.h"
#include "training/metrics_record.h"

namespace partita {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr const char* kCheckpointFile = kCheckpointFileName;

class KgDriver : public DriverBase {
 public:
  KgDriver(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options)
      : DriverBase(runtime, job, options), run_key_(new_shard_run_key(job.output, job.seed)) {}
  ~KgDriver() {
    for (const auto& a : allreduce_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (const auto& a : trainers_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    for (const auto& a : shards_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
  JobReport run();

 private:
  // (dir_on: each node's folder holds every part, as each trainer reads every part's
  // triples: embeddings/kg_triples.h.)
  std::string describe_actor(const caf::actor_addr& actor) const;
  [[noreturn]] void fail(const std::string& what) const;
  void spawn_actors();
  EpochMetrics train_epoch(int epoch, int64_t steps);
  std::vector<std::pair<std::string, double>> evaluate(const std::string& split);
  // The trainers' replicated state (from trainer 0) and every shard's, as saved.
  std::vector<std::vector<char>> save_state();
  void restore_state(const std::vector<std::vector<char>>& state);
  void checkpoint(int epoch, const std::vector<std::vector<char>>& state);
  int resume_point();
  template <typename Reply>
  Reply ask(const caf::actor& actor, const std::string& who, const std::string& what, caf::message message);

  std::string run_key_;
  std::vector<caf::actor> shards_, allreduce_, trainers_;
  uint64_t last_hash_ = 0;
  int checkpoint_epoch_ = 0;
};

std::string KgDriver::describe_actor(const caf::actor_addr& actor) const {
  for (size_t t = 0; t < trainers_.size(); ++t) {
    if (trainers_[t].address() == actor) return describe_trainer(static_cast<int>(t));
  }
  for (size_t p = 0; p < shards_.size(); ++p) {
    if (shards_[p].address() == actor) {
      return "embedding shard " + std::to_string(p) + " (on " + runtime_.node_name(node_of_partition(static_cast<int>(p))) + ")";
    }
  }
  for (size_t r = 0; r < allreduce_.size(); ++r) {
    if (allreduce_[r].address() == actor) return "allreduce member " + std::to_string(r);
  }
  return "an unknown actor";
}

void KgDriver::fail(const std::string& what) const {
  for (const auto& a : allreduce_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  throw_naming_lost_node(Error(what));
}

template <typename Reply>
Reply KgDriver::ask(const caf::actor& actor, const std::string& who, const std::string& what, caf::message message) {
  std::optional<Reply> reply;
  std::optional<caf::error> failed;
  runtime::receive_reply(self_, self_->request(actor, kRequestDeadline, std::move(message)),
      [&](Reply& r) { reply = std::move(r); }, [&](caf::error& e) { failed = e; });
  if (failed) fail(who + ": " + what + " failed: " + runtime::describe(runtime_.system(), *failed));
  return std::move(*reply);
}

void KgDriver::spawn_actors() {
  const int num_trainers = job_.num_trainers();
  // On disk, the trainer holds the table behind its partition buffer: no shards.
  for (int p = 0; p < (job_.link.on_disk() ? 0 : job_.num_partitions); ++p) {
    const int node = node_of_partition(p);
    runtime::Settings settings{{"run", run_key_},
                               {"dir", dir_on(node)},
                               {"part", std::to_string(p)},
                               {"dim", std::to_string(job_.link.dim)},
                               {"trainers", std::to_string(num_trainers)},
                               {"seed", std::to_string(job_.seed)},
                               {"init_std", fmt::format("{:.17g}", job_.link.init_std)},
                               {"learning_rate", fmt::format("{:.17g}", job_.learning_rate)},
                               {"optimizer", name_of(job_.optimizer)}};
    if (runtime_.is_distributed()) settings["host"] = runtime::parse_endpoint(runtime_.node_name(node), "daemon").host;
    shards_.push_back(runtime_.spawn(node, "embedding_shard", settings));
  }
  for (int t = 0; t < num_trainers; ++t) {
    const int node = node_of_partition(job_.part_of_trainer(t));
    runtime::Settings settings{{"rank", std::to_string(t)}, {"size", std::to_string(num_trainers)}};
    if (runtime_.is_distributed()) settings["host"] = runtime::parse_endpoint(runtime_.node_name(node), "daemon").host;
    allreduce_.push_back(runtime_.spawn(node, "allreduce", settings));
  }
  runtime::connect_allreduce_group(runtime_.system(), allreduce_, kRequestDeadline);
  // The job as each node reads it: with the partition folder where that node has it.
  const auto job_yaml_on = [&](int node) {
    JobConfig there = job_;
    there.partitions = dir_on(node);
    return job_to_yaml(there);
  };
  for (int t = 0; t < num_trainers; ++t) {
    const int node = node_of_partition(job_.part_of_trainer(t));
    trainers_.push_back(runtime_.spawn(node, "kg_trainer", {{"job", job_yaml_on(node)}, {"trainer", std::to_string(t)}}));
  }
  for (const auto& a : shards_) self_->monitor(a);
  for (const auto& a : allreduce_) self_->monitor(a);
  for (const auto& a : trainers_) self_->monitor(a);
  for (int t = 0; t < num_trainers; ++t) {
    ask<bool>(trainers_[t], describe_trainer(t), "set-up",
              caf::make_message(kg_setup_atom::value, shards_, allreduce_[t], run_key_));
  }
}

EpochMetrics KgDriver::train_epoch(int epoch, int64_t steps) {
  const int num_trainers = static_cast<int>(trainers_.size());
  for (const auto& trainer : trainers_) {
    self_->send(trainer, train_epoch_atom::value, static_cast<uint64_t>(epoch), steps, caf::actor_cast<caf::actor>(self_));
  }
  EpochMetrics m;
  m.epoch = epoch;
  m.steps = steps;
  m.step_losses.assign(steps, 0.0);
  m.step_hashes.assign(steps, 0);
  std::vector<int> reports(steps, 0);
  double loss_sum = 0, positives = 0;
  int done = 0;
  std::optional<std::string> failure;
  bool cancelled = false;
  Stopwatch watch;
  Progress bar("epoch " + std::to_string(epoch) + "/" + std::to_string(job_.epochs), steps, "steps");
  int64_t steps_seen = 0;
  const milliseconds wait = options_.cancel ? std::min(kCancelPoll, options_.progress_deadline) : options_.progress_deadline;
  auto last_message = std::chrono::steady_clock::now();
  while (done < num_trainers && !failure && !cancelled) {
    bool idle = false;
    self_->receive(
        [&](train_step_atom, int32_t trainer, uint64_t e, int64_t step, int64_t, double step_loss, double step_positives,
            double, uint64_t hash) {
          if (e != static_cast<uint64_t>(epoch) || step < 0 || step >= steps || trainer < 0 || trainer >= num_trainers) {
            failure = "trainer " + std::to_string(trainer) + " reported step " + std::to_string(step) + " of epoch " +
                      std::to_string(e) + " during epoch " + std::to_string(epoch);
            return;
          }
          if (reports[step]++ == 0) {
            m.step_hashes[step] = hash;
            m.step_losses[step] = step_positives > 0 ? step_loss / step_positives : 0.0;
            loss_sum += step_loss;
            positives += step_positives;
          } else if (m.step_hashes[step] != hash) {
            failure = "replicas diverged: " + describe_trainer(trainer) + " holds other relation embeddings than trainer 0 after step " +
                      std::to_string(step) + " of epoch " + std::to_string(epoch);
            return;
          }
          if (reports[step] == num_trainers) {
            ++steps_seen;
            last_hash_ = hash;
            if (options_.on_progress) {
              options_.on_progress(step_progress(epoch, steps_seen, steps, m.step_losses[step], watch.seconds()));
            }
            cancelled = cancel_requested();
          }
          bar.set_note(fmt::format("loss {:.4f}", m.step_losses[step]));
          bar.set(steps_seen);
        },
        [&](train_done_atom, int32_t, uint64_t) { ++done; },
        [&](train_failed_atom, int32_t trainer, std::string& what) {
          failure = describe_trainer(trainer) + " failed in epoch " + std::to_string(epoch) + ": " + what;
        },
        [&](caf::down_msg& down) {
          failure = describe_actor(down.source) + " was lost: " + runtime::describe(runtime_.system(), down.reason);
        },
        caf::after(wait) >> [&] {
          idle = true;
          if (cancel_requested()) {
            cancelled = true;
          } else if (std::chrono::steady_clock::now() - last_message >= options_.progress_deadline) {
            failure = "no progress from the trainers for " + std::to_string(options_.progress_deadline.count() / 1000) +
                      " s in epoch " + std::to_string(epoch);
          }
        });
    if (!idle) last_message = std::chrono::steady_clock::now();
  }
  if (cancelled && !failure) {
    for (const auto& a : allreduce_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    throw JobCancelled("job cancelled in epoch " + std::to_string(epoch) + " after " + std::to_string(steps_seen) +
                           " step(s)",
                       epoch, steps_seen, checkpoint_epoch_);
  }
  if (failure) fail(*failure);
  m.seconds = watch.seconds();
  m.batches_per_second = steps * num_trainers / m.seconds;
  m.train_loss = positives > 0 ? loss_sum / positives : 0;
  // Edges per second: each positive with its negatives on both sides.
  m.ranking.emplace_back("train.edges_per_second", positives * (1 + 2 * job_.link.negatives) / m.seconds);
  m.ranking.emplace_back("train.positives_per_second", positives / m.seconds);
  return m;
}

std::vector<std::pair<std::string, double>> KgDriver::evaluate(const std::string& split) {
  for (const auto& trainer : trainers_) self_->send(trainer, kg_eval_atom::value, split);
  std::vector<double> sums(kRankingSums, 0.0);
  size_t replies = 0;
  std::optional<std::string> failure;
  Stopwatch watch;
  while (replies < trainers_.size() && !failure) {
    self_->receive(
        [&](std::vector<char>& bytes) {
          try {
            add_ranking_sums(Span<const char>(bytes.data(), bytes.size()), sums);
            ++replies;
          } catch (const Error& e) {
            failure = e.what();
          }
        },
        [&](caf::error& e) {
          failure = describe_actor(caf::actor_cast<caf::actor_addr>(self_->current_sender())) + ": evaluating " + split +
                    " failed: " + runtime::describe(runtime_.system(), e);
        },
        [&](caf::down_msg& down) {
          failure = describe_actor(down.source) + " was lost: " + runtime::describe(runtime_.system(), down.reason);
        },
        caf::after(options_.progress_deadline) >> [&] {
          failure = "no evaluation result from the trainers for " + std::to_string(options_.progress_deadline.count() / 1000) + " s";
        });
  }
  if (failure) fail(*failure);
  return ranking_metrics(sums, split, watch.seconds());
}

std::vector<std::vector<char>> KgDriver::save_state() {
  std::vector<std::vector<char>> state;
  state.push_back(ask<std::vector<char>>(trainers_[0], describe_trainer(0), "saving its state",
                                         caf::make_message(get_state_atom::value)));
  for (size_t p = 0; p < shards_.size(); ++p) {
    state.push_back(ask<std::vector<char>>(shards_[p], "embedding shard " + std::to_string(p), "saving",
                                           caf::make_message(shard_save_atom::value)));
  }
  return state;
}

void KgDriver::restore_state(const std::vector<std::vector<char>>& state) {
  if (state.size() != shards_.size() + 1) {
    throw Error("the checkpoint holds " + std::to_string(state.size() - 1) + " embedding shards, the job has " +
                std::to_string(shards_.size()));
  }
  for (size_t t = 0; t < trainers_.size(); ++t) {
    ask<bool>(trainers_[t], describe_trainer(static_cast<int>(t)), "restoring the checkpoint",
              caf::make_message(set_state_atom::value, state[0]));
  }
  for (size_t p = 0; p < shards_.size(); ++p) {
    ask<bool>(shards_[p], "embedding shard " + std::to_string(p), "restoring the checkpoint",
              caf::make_message(shard_load_atom::value, state[p + 1]));
  }
}

void KgDriver::checkpoint(int epoch, const std::vector<std::vector<char>>& state) {
  const fs::path dir = fs::path(job_.output) / "checkpoints";
  fs::create_directories(dir);
  nlohmann::json files = nlohmann::json::array();
  const std::string prefix = "epoch-" + std::to_string(epoch);
  for (size_t i = 0; i < state.size(); ++i) {
    const std::string name = prefix + (i == 0 ? "-replica.bin" : "-shard" + std::to_string(i - 1) + ".bin");
    write_file_atomically((dir / name).string(), state[i].data(), state[i].size());
    files.push_back({{"file", "checkpoints/" + name}, {"checksum", checksum(state[i].data(), state[i].size())}});
  }
  nlohmann::json meta = {{"epoch", epoch}, {"files", files}, {"seed", job_.seed}, {"task", name_of(job_.task)}};
  write_file_atomically((fs::path(job_.output) / kCheckpointFile).string(), meta.dump() + "\n");
  checkpoint_epoch_ = epoch;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(prefix + "-", 0) != 0) fs::remove(entry.path());
  }
}

int KgDriver::resume_point() {
  const fs::path pointer = fs::path(job_.output) / kCheckpointFile;
  if (!options_.resume) return 0;
  if (!fs::exists(pointer)) throw UsageError("cannot resume: " + job_.output + " holds no checkpoint (" + kCheckpointFile + ")");
  try {
    const nlohmann::json meta = nlohmann::json::parse(read_file(pointer.string()));
    if (meta.value("task", std::string()) != name_of(job_.task)) {
      throw UsageError("cannot resume: the checkpoint in " + job_.output + " is not a link-prediction job's");
    }
    if (meta.at("seed").get<uint64_t>() != job_.seed) {
      throw UsageError("cannot resume: the checkpoint was written with seed " + std::to_string(meta.at("seed").get<uint64_t>()) +
                       ", the job says " + std::to_string(job_.seed));
    }
    std::vector<std::vector<char>> state;
    for (const auto& entry : meta.at("files")) {
      const fs::path file = fs::path(job_.output) / entry.at("file").get<std::string>();
      const std::string bytes = read_file_if_exists(file.string());
      if (checksum(bytes.data(), bytes.size()) != entry.at("checksum").get<uint64_t>()) {
        throw Error("cannot resume: " + file.string() + " is missing or damaged (checksum mismatch)");
      }
      state.emplace_back(bytes.begin(), bytes.end());
    }
    restore_state(state);
    const int epoch = meta.at("epoch").get<int>();
    spdlog::info("resuming after epoch {} from {}", epoch, pointer.string());
    return epoch;
  } catch (const nlohmann::json::exception& e) {
    throw Error("cannot resume: " + pointer.string() + " is damaged: " + e.what());
  }
}

JobReport KgDriver::run() {
  check_held_out_history(job_, folder_.meta(), folder_.dir());
  open_job_output(job_, options_);
  if (job_.link.negatives > folder_.meta().num_nodes) {
    throw UsageError("negatives.k: " + std::to_string(job_.link.negatives) + " is more than " + folder_.dir() + "'s " +
                     std::to_string(folder_.meta().num_nodes) + " entities");
  }
  check_placement(options_, job_.num_partitions, runtime_.num_nodes());
  // The key its nodes list its actors under: how a head matches them to the job.
  announce_owner();
  spawn_actors();
  const int done_epochs = resume_point();
  int64_t full_steps = (folder_.meta().num_edges + job_.batch_size - 1) / job_.batch_size;
  // On disk, an epoch's steps follow its buffer walk (embeddings/bucket_epoch.h): each state's
  // last step may be short.
  std::unique_ptr<KgTriples> triples;
  std::vector<int64_t> table_id;
  EmbeddingPartitions::Shape shape;
  auto steps_of_epoch = [&](int epoch) {
    int64_t n = full_steps;
    if (triples) n = plan_bucket_epoch(*triples, table_id, shape, job_.link.embedding_partitions,
                                       job_.link.embedding_buffer, job_.seed, static_cast<uint64_t>(epoch),
                                       job_.batch_size).steps;
    return options_.max_steps > 0 ? std::min(options_.max_steps, n) : n;
  };
  if (job_.link.on_disk()) {
    triples = std::make_unique<KgTriples>(folder_);
    table_id = table_ids(*triples, job_.seed);
    shape = buffer_table_shape(triples->num_entities(), job_.link.embedding_partitions, job_.link.dim);
    full_steps = steps_of_epoch(done_epochs + 1);
  }
  const int64_t steps = options_.max_steps > 0 ? std::min(options_.max_steps, full_steps) : full_steps;
  spdlog::info("training {} embeddings (dim {}) on {}: {} trainer(s) on {} node(s), {} steps of {} triples per epoch",
               name_of(job_.link.decoder), job_.link.dim, folder_.dir(), trainers_.size(), runtime_.num_nodes(), steps,
               job_.batch_size);
  JobReport report;
  report.first_epoch = done_epochs + 1;
  report.steps_per_epoch = full_steps;
  checkpoint_epoch_ = done_epochs;
  const int last_epoch = options_.stop_after_epoch > 0 ? std::min(options_.stop_after_epoch, job_.epochs) : job_.epochs;
  std::vector<std::vector<char>> state;
  start_selection(done_epochs);
  int ran_to = done_epochs;
  bool early_stopped = false;
  for (int epoch = done_epochs + 1; epoch <= last_epoch; ++epoch) {
    if (cancel_requested()) throw JobCancelled("job cancelled before epoch " + std::to_string(epoch), epoch, 0, checkpoint_epoch_);
    EpochMetrics m = train_epoch(epoch, steps_of_epoch(epoch));
    if (options_.evaluate && (epoch % job_.link.eval_every == 0 || epoch == last_epoch)) {
      for (const std::string split : {"valid", "test"}) {
        for (auto& metric : evaluate(split)) m.ranking.push_back(std::move(metric));
      }
      spdlog::info("epoch {}/{}: {:.1f}s, train loss {:.4f}; valid MRR {:.4f}; test MRR {:.4f}, hits@1 {:.4f}, "
                   "hits@10 {:.4f} (filtered; raw MRR {:.4f}); ranking {:.1f}s",
                   epoch, job_.epochs, m.seconds, m.train_loss, m.ranking_metric("valid.mrr"),
                   m.ranking_metric("test.mrr"), m.ranking_metric("test.hits@1"), m.ranking_metric("test.hits@10"),
                   m.ranking_metric("test.raw_mrr"), m.ranking_metric("test.seconds"));
    } else {
      spdlog::info("epoch {}/{}: {:.1f}s, train loss {:.4f}", epoch, job_.epochs, m.seconds, m.train_loss);
    }
    state = save_state();
    checkpoint(epoch, state);
    append_metrics(m);
    const bool stop = select_epoch(m);
    ran_to = epoch;
    report.add_epoch(std::move(m));
    if (options_.on_progress) {
      JobProgress progress;
      progress.event = JobProgress::Event::epoch;
      progress.epoch = epoch;
      progress.epochs = job_.epochs;
      progress.step = progress.steps = report.epochs.back().steps;
      progress.loss = report.epochs.back().train_loss;
      progress.seconds = report.epochs.back().seconds;
      progress.metrics = &report.epochs.back();
      options_.on_progress(progress);
    }
    if (stop && epoch < last_epoch) {
      early_stopped = true;
      break;
    }
  }
  finish_selection(report, ran_to, early_stopped);
  // The final state: the relations' hash mixed with every shard's bytes.
  uint64_t hash = last_hash_;
  for (size_t i = 1; i < state.size(); ++i) hash = mix64(hash, checksum(state[i].data(), state[i].size()));
  report.parameter_hash = hash;
  for (const auto& part : state) report.final_state.insert(report.final_state.end(), part.begin(), part.end());
  return report;
}

}  // namespace

JobReport run_kg_job(runtime::Runtime& runtime, const JobConfig& job, const RunOptions& options) {
  KgDriver driver(runtime, job, options);
  return driver.run();
}

}  // namespace partita
