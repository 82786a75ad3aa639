#include "training/kg_trainer.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <utility>

#include "actors/actor_types.h"
#include "base/error.h"
#include "base/random.h"
#include "embeddings/embedding_shard.h"
#include "embeddings/kg_triples.h"
#include "graph/epoch_plan.h"
#include "models/kg_decoder.h"
#include "models/kg_loss.h"
#include "models/parameters.h"
#include "models/torch_runtime.h"
#include "partitioner/partition_format.h"
#include "runtime/collective/allreduce_client.h"
#include "runtime/collective/allreduce_stopped.h"
#include "runtime/settings.h"
#include "training/job_config.h"
#include "training/kg_entities.h"
#include "training/triple_ranking.h"

namespace partita {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStepDeadline{120000};

struct KgReplica {
  JobConfig job;
  int index = 0, part = 0;
  std::unique_ptr<PartitionFolder> folder;
  std::unique_ptr<KgTriples> triples;
  KgDecoder decoder = KgDecoder::kDistMult;
  KgLoss loss = KgLoss::kSoftmax;
  KgRegularizer regularizer = KgRegularizer::kNone;
  KgNegatives negatives;
  at::Tensor relations;  // [R, dim], replicated
  std::unique_ptr<torch::optim::Optimizer> optimizer;  // the relations': Adagrad, or Adam with sparse_adam
  std::unique_ptr<KgEntities> entities;  // in memory or on disk (embeddings.storage); null before set-up
  std::unique_ptr<runtime::Allreduce> allreduce;
  std::vector<float> buffer;

  KgTrainerContext context() const { return {job, *triples, folder->book(), negatives, index, part}; }
};

std::unique_ptr<KgReplica> make_replica(const runtime::Settings& settings) {
  auto r = std::make_unique<KgReplica>();
  r->job = *job_from_setting(runtime::required_setting(settings, "job"), "the job sent by the driver");
  require_partition_folder(r->job.partition_dir(), "job");
  r->index = static_cast<int>(runtime::integer_setting(settings, "trainer", 0, r->job.num_trainers() - 1));
  r->part = r->job.part_of_trainer(r->index);
  r->folder = std::make_unique<PartitionFolder>(r->job.partition_dir());
  r->triples = std::make_unique<KgTriples>(*r->folder);
  const LinkPredictionSpec& link = r->job.link;
  r->decoder = parse_kg_decoder(name_of(link.decoder), link.transe_norm, "model.decoder");
  check_kg_dim(r->decoder, link.dim, "model.dim");
  r->loss = parse_kg_loss(name_of(link.loss), "train.loss");
  r->regularizer = parse_kg_regularizer(name_of(link.regularizer), "train.regularizer");
  r->negatives.k = link.negatives;
  r->negatives.chunk_size = link.chunk_size;
  r->negatives.degree_fraction = link.degree_fraction;
  r->negatives.strict = link.strict;
  if (link.negatives > r->triples->num_entities()) {
    throw UsageError("negatives.k: " + std::to_string(link.negatives) + " is more than the graph's " +
                     std::to_string(r->triples->num_entities()) + " entities");
  }
  // Relations start like entities, N(0, init_std), drawn from the job seed: every replica
  // holds the same values.
  // With reciprocal relations, rows R.. 2R-1 are the inverses used for head prediction.
  const int64_t num_relations = r->triples->num_relations() * (link.reciprocal ? 2 : 1);
  std::vector<float> init(static_cast<size_t>(num_relations * link.dim));
  Rng rng(mix64(r->job.seed, 0x72656cull /* "rel" */));
  for (float& v : init) v = static_cast<float>(rng.normal() * link.init_std);
  r->relations = torch::from_blob(init.data(), {num_relations, link.dim}, torch::kFloat).clone().set_requires_grad(true);
  // The relations are dense and replicated: torch's own optimiser of the family the job
  // chose for the entity rows (whose owners apply embeddings/row_optimizer.h).
  if (r->job.optimizer == Optimizer::kSparseAdam) {
    r->optimizer = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{r->relations},
                                                        torch::optim::AdamOptions(r->job.learning_rate));
  } else {
    r->optimizer = std::make_unique<torch::optim::Adagrad>(std::vector<at::Tensor>{r->relations},
                                                           torch::optim::AdagradOptions(r->job.learning_rate).eps(1e-10));
  }
  return r;
}

std::vector<int64_t> sorted_unique(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// The rows of `ids` (sorted, unique) from the table, as a [n, dim] tensor.
at::Tensor read_rows(KgReplica& r, const std::vector<int64_t>& ids) {
  at::Tensor rows = torch::empty({static_cast<int64_t>(ids.size()), r.job.link.dim}, torch::kFloat);
  if (ids.empty()) return rows;
  r.entities->read(ids, rows.data_ptr<float>());
  return rows;
}

// One step's positives, grouped by chunk (positions are increasing, so chunks are
// contiguous), and the negatives of their chunks.
struct StepBatch {
  std::vector<int64_t> heads, tails, rels;  // per positive (global ids, relation)
  std::vector<int64_t> group_of;            // per positive: its chunk among the step's
  std::vector<int64_t> slot_of;             // per positive: its place in its chunk
  int64_t groups = 0;                       // the step's chunks
  int64_t max_slots = 0;                    // the most positives of one chunk
  std::vector<int64_t> negatives;           // [groups * k]: chunk g's are [g * k, (g + 1) * k)
  std::vector<int64_t> ids;                 // every row the step reads: sorted, unique

  int64_t size() const { return static_cast<int64_t>(heads.size()); }
};

StepBatch step_batch(KgReplica& r, uint64_t epoch, int64_t step) {
  const TripleList& train = r.triples->train();
  const KgEntities::StepTriples triples = r.entities->step_triples(step);
  const int64_t p = static_cast<int64_t>(triples.edges.size());
  StepBatch b;
  b.heads.resize(p);
  b.tails.resize(p);
  b.rels.resize(p);
  b.group_of.resize(p);
  b.slot_of.resize(p);
  std::vector<int64_t> chunks;
  for (int64_t i = 0; i < p; ++i) {
    const int64_t e = triples.edges[i];
    b.heads[i] = train.head[e];
    b.tails[i] = train.tail[e];
    b.rels[i] = train.relation[e];
    const int64_t chunk = triples.positions[i] / r.negatives.chunk_size;
    if (chunks.empty() || chunks.back() != chunk) chunks.push_back(chunk);
    b.group_of[i] = static_cast<int64_t>(chunks.size()) - 1;
    b.slot_of[i] = (i > 0 && b.group_of[i - 1] == b.group_of[i]) ? b.slot_of[i - 1] + 1 : 0;
    b.max_slots = std::max(b.max_slots, b.slot_of[i] + 1);
  }
  b.groups = static_cast<int64_t>(chunks.size());
  b.negatives.reserve(static_cast<size_t>(b.groups * r.negatives.k));
  for (int64_t chunk : chunks) {
    const std::vector<int64_t> drawn = r.entities->draw_negatives(epoch, step, chunk);
    b.negatives.insert(b.negatives.end(), drawn.begin(), drawn.end());
  }
  std::vector<int64_t> all(b.heads);
  all.insert(all.end(), b.tails.begin(), b.tails.end());
  all.insert(all.end(), b.negatives.begin(), b.negatives.end());
  b.ids = sorted_unique(std::move(all));
  return b;
}

// With strict negatives: [p, k] masks of the chunk negatives that corrupt each positive's
// tail (first) and head (second) into a triple not in the graph; undefined otherwise.
std::pair<at::Tensor, at::Tensor> kept_negatives(const KgReplica& r, const StepBatch& b) {
  if (!r.negatives.strict) return {};
  const int64_t p = b.size();
  const int64_t k = r.negatives.k;
  at::Tensor keep_tail = torch::empty({p, k}, torch::kBool);
  at::Tensor keep_head = torch::empty({p, k}, torch::kBool);
  bool* kt = keep_tail.data_ptr<bool>();
  bool* kh = keep_head.data_ptr<bool>();
  for (int64_t i = 0; i < p; ++i) {
    const int64_t* n = b.negatives.data() + b.group_of[i] * k;
    const int32_t rel_i = static_cast<int32_t>(b.rels[i]);
    for (int64_t j = 0; j < k; ++j) {
      kt[i * k + j] = r.triples->keeps_negative(true, b.heads[i], rel_i, b.tails[i], n[j]);
      kh[i * k + j] = r.triples->keeps_negative(false, b.heads[i], rel_i, b.tails[i], n[j]);
    }
  }
  return {keep_tail, keep_head};
}

// The step's loss summed over its positives (p > 0), both sides, with the regulariser;
// `rows`: the rows of b.ids.
at::Tensor step_loss(const KgReplica& r, const StepBatch& b, const at::Tensor& rows) {
  const JobConfig& job = r.job;
  const int64_t p = b.size();
  const int64_t k = r.negatives.k;
  const int64_t dim = job.link.dim;
  at::Tensor h = rows.index_select(0, positions_in(b.ids, b.heads));
  at::Tensor t = rows.index_select(0, positions_in(b.ids, b.tails));
  at::Tensor rel = r.relations.index_select(0, ids_tensor(b.rels));
  at::Tensor neg = rows.index_select(0, positions_in(b.ids, b.negatives)).view({b.groups, k, dim});
  // Queries laid out [groups, max_slots, dim] (padded with zero rows), scored against
  // their chunk's negatives in one batched product, then taken back to [p, k].
  std::vector<int64_t> flat(p);
  for (int64_t i = 0; i < p; ++i) flat[i] = b.group_of[i] * b.max_slots + b.slot_of[i];
  const at::Tensor flat_index = ids_tensor(flat);
  auto negative_scores = [&](const at::Tensor& query) {
    at::Tensor padded = torch::zeros({b.groups * b.max_slots, dim}, torch::kFloat).index_copy(0, flat_index, query);
    at::Tensor scores = kg_score_groups(r.decoder, padded.view({b.groups, b.max_slots, dim}), neg);
    return scores.view({b.groups * b.max_slots, k}).index_select(0, flat_index);
  };
  const auto [keep_tail, keep_head] = kept_negatives(r, b);
  const at::Tensor q_tail = kg_query(r.decoder, KgSide::kTail, h, rel);
  const at::Tensor positive = kg_score_pairs(r.decoder, q_tail, t);
  at::Tensor q_head, positive_head, inverse;
  if (job.link.reciprocal) {
    inverse = r.relations.index_select(0, ids_tensor(b.rels) + r.triples->num_relations());
    q_head = kg_query(r.decoder, KgSide::kTail, t, inverse);
    positive_head = kg_score_pairs(r.decoder, q_head, h);
  } else {
    q_head = kg_query(r.decoder, KgSide::kHead, t, rel);
    positive_head = positive;
  }
  at::Tensor tail_scores = negative_scores(q_tail), head_scores = negative_scores(q_head);
  if (r.loss == KgLoss::kSoftmax) {
    // Negatives drawn at another rate than in memory, at their in-memory weight
    // (embeddings/bucket_epoch.h); none is in memory.
    const at::Tensor correction = r.entities->negative_log_rates(b.heads, b.tails, b.negatives, b.group_of);
    if (correction.defined()) {
      tail_scores = tail_scores - correction;
      head_scores = head_scores - correction;
    }
  }
  at::Tensor loss_sum = kg_loss_sum(r.loss, positive, tail_scores, keep_tail, job.link.margin) +
                        kg_loss_sum(r.loss, positive_head, head_scores, keep_head, job.link.margin);
  if (r.regularizer != KgRegularizer::kNone && job.link.regularization > 0) {
    at::Tensor reg = kg_regularizer_sum(r.regularizer, h) + kg_regularizer_sum(r.regularizer, t) +
                     kg_regularizer_sum(r.regularizer, rel);
    if (inverse.defined()) reg = reg + kg_regularizer_sum(r.regularizer, inverse);
    loss_sum = loss_sum + job.link.regularization * reg;
  }
  return loss_sum;
}

// One optimiser step of every replica; returns {loss sum, positives} over all replicas.
std::array<double, 2> train_step(KgReplica& r, uint64_t epoch, int64_t step) {
  const StepBatch b = step_batch(r, epoch, step);
  const int64_t p = b.size();
  r.optimizer->zero_grad();
  at::Tensor rows = read_rows(r, b.ids).set_requires_grad(true);
  at::Tensor loss_sum = torch::zeros({}, torch::kFloat);
  if (p > 0) {
    loss_sum = step_loss(r, b, rows);
    loss_sum.backward();
  }
  // The relations' gradient, the loss and the positives, summed over the replicas.
  flatten_gradients({r.relations}, r.buffer);
  const size_t n = r.buffer.size();
  r.buffer.push_back(loss_sum.item<float>());
  r.buffer.push_back(static_cast<float>(p));
  r.allreduce->sum(r.buffer.data(), r.buffer.size());
  const double total = r.buffer[n + 1];
  const std::array<double, 2> sums{r.buffer[n], total};
  std::vector<float> entity_grads;
  if (total > 0) {
    const float scale = static_cast<float>(1.0 / total);
    for (size_t i = 0; i < n; ++i) r.buffer[i] *= scale;
    assign_gradients({r.relations}, r.buffer.data(), n);
    r.optimizer->step();
    if (p > 0) {
      at::Tensor g = (rows.grad() * scale).contiguous();
      entity_grads.assign(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
    }
  }
  if (entity_grads.empty()) entity_grads.assign(b.ids.size() * static_cast<size_t>(r.job.link.dim), 0.0f);
  r.entities->apply_gradients(b.ids, entity_grads);
  r.buffer.resize(n);
  return sums;
}

std::vector<double> evaluate(KgReplica& r, const std::string& split) {
  const JobConfig& job = r.job;
  const KgTriples& kg = *r.triples;
  const TripleList held = kg.held_out(split, r.part);
  const auto [first, last] = job.share_of_trainer(r.index, held.size());
  TripleList mine;
  for (int64_t i = first; i < last; ++i) mine.add(held, i);
  TripleRanking how;
  how.decoder = r.decoder;
  how.relations = r.relations;
  how.num_relations = kg.num_relations();
  how.reciprocal = job.link.reciprocal;
  how.query_batch = job.eval_batch_size;
  how.block = job.link.eval_block;
  EntityRows rows;
  rows.dim = job.link.dim;
  rows.read = [&r](const std::vector<int64_t>& ids, float* out) { r.entities->read(ids, out); };
  rows.read_range = [&r](int part, int64_t begin, int64_t end, float* out) {
    r.entities->read_range(part, begin, end, out);
  };
  std::vector<int64_t> sampled;
  if (job.link.eval_negatives > 0) {
    // K entities drawn once per evaluation (keyed by the job seed), shared by every query.
    Rng rng(mix64(job.seed, 0x6576616cull /* "eval" */));
    std::vector<int64_t> drawn(static_cast<size_t>(std::min(job.link.eval_negatives, kg.num_entities())));
    for (int64_t& id : drawn) id = kg.global_of_original(static_cast<int64_t>(rng.below(kg.num_entities())));
    sampled = sorted_unique(std::move(drawn));
  }
  return rank_triples(kg, mine, how, rows, r.folder->book(), sampled);
}

std::vector<char> save_state(KgReplica& r) {
  std::ostringstream stream;
  torch::serialize::OutputArchive archive;
  archive.write("relations", r.relations.detach());
  // Which optimiser's state follows (torch fails on another's with an internal assert).
  archive.write("sparse_adam", torch::tensor(r.job.optimizer == Optimizer::kSparseAdam ? 1 : 0));
  torch::serialize::OutputArchive optimizer;
  r.optimizer->save(optimizer);
  archive.write("optimizer", optimizer);
  if (r.entities) r.entities->save(archive);  // what the table keeps of its own
  archive.save_to(stream);
  const std::string bytes = stream.str();
  return std::vector<char>(bytes.begin(), bytes.end());
}

void load_state(KgReplica& r, const std::vector<char>& bytes) {
  torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  at::Tensor relations;
  archive.read("relations", relations);
  if (!relations.sizes().equals(r.relations.sizes())) {
    throw Error("the checkpoint's relations are " + std::to_string(relations.size(0)) + " x " +
                std::to_string(relations.dim() > 1 ? relations.size(1) : 0) + ", the job's " +
                std::to_string(r.relations.size(0)) + " x " + std::to_string(r.relations.size(1)));
  }
  at::Tensor sparse_adam = torch::tensor(0);  // checkpoints before SparseAdam: Adagrad's
  archive.try_read("sparse_adam", sparse_adam);
  if (sparse_adam.numel() != 1 || (sparse_adam.item<int64_t>() != 0) != (r.job.optimizer == Optimizer::kSparseAdam)) {
    throw Error("the checkpoint was trained with another optimiser than the job's " + std::string(name_of(r.job.optimizer)) +
                " (train.optimizer changed?)");
  }
  torch::NoGradGuard no_grad;
  r.relations.copy_(relations);
  torch::serialize::InputArchive optimizer;
  archive.read("optimizer", optimizer);
  r.optimizer->load(optimizer);
  if (r.entities) r.entities->load(archive);
}

// Opens the entity table (embeddings.storage) and joins the relations' allreduce.
bool set_up(KgReplica& r, caf::actor_system& system, std::vector<caf::actor> shards, caf::actor member,
            const std::string& run_key) {
  if (!member) throw Error("set-up without an allreduce member");
  r.entities = r.job.link.on_disk()
                   ? disk_kg_entities(r.context(), kStepDeadline)
                   : sharded_kg_entities(r.context(), system, std::move(shards), run_key, kStepDeadline);
  r.allreduce = std::make_unique<runtime::Allreduce>(system, std::move(member), kStepDeadline);
  return true;
}

// Trains epoch `epoch`'s `steps` steps, telling `driver` of each step and of the epoch's end,
// or of its failure (train_failed: with the table settled, stopped or failed as logged).
void train_epoch(KgReplica& r, uint64_t epoch, int64_t steps, const caf::actor& driver) {
  try {
    if (!r.allreduce) throw Error("not set up");
    release_heap_between_epochs(epoch);
    r.entities->begin_epoch(epoch, steps);
    for (int64_t step = 0; step < steps; ++step) {
      const std::array<double, 2> sums = train_step(r, epoch, step);
      caf::anon_send(driver, train_step_atom::value, static_cast<int32_t>(r.index), epoch, step, steps, sums[0], sums[1],
                     0.0, parameter_hash({r.relations}));
    }
    r.entities->end_epoch(epoch);
    caf::anon_send(driver, train_done_atom::value, static_cast<int32_t>(r.index), epoch);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (r.entities) {
      const std::string unsaved = r.entities->settle();
      if (!unsaved.empty()) what += " (and writing the buffer back failed: " + unsaved + ")";
    }
    if (dynamic_cast<const runtime::AllreduceStopped*>(&e) != nullptr ||
        dynamic_cast<const EmbeddingShardStopped*>(&e) != nullptr) {
      spdlog::info("trainer {}: epoch {} stopped: {}", r.index, epoch, what);  // by the driver
    } else {
      spdlog::error("trainer {}: epoch {} failed: {}", r.index, epoch, what);
    }
    caf::anon_send(driver, train_failed_atom::value, static_cast<int32_t>(r.index), what);
  }
}

// The kRankingSums sums of the trainer's share of `split`, as bytes (training/link_metrics.h).
std::vector<char> evaluation_bytes(KgReplica& r, const std::string& split) {
  if (!r.entities) throw Error("not set up");
  const std::vector<double> sums = evaluate(r, split);
  std::vector<char> bytes(sums.size() * sizeof(double));
  std::memcpy(bytes.data(), sums.data(), bytes.size());
  return bytes;
}

bool restore_state(KgReplica& r, const std::vector<char>& bytes) {
  load_state(r, bytes);
  return true;
}

// The reply of `handler`, or its exception as an error of `code` naming the trainer.
template <class Handler>
auto reply(const KgReplica& r, caf::sec code, Handler&& handler) -> caf::result<decltype(handler())> {
  try {
    return handler();
  } catch (const std::exception& e) {
    return caf::make_error(code, "trainer " + std::to_string(r.index) + ": " + e.what());
  }
}

kg_trainer_actor::behavior_type kg_trainer(kg_trainer_actor::pointer self, std::shared_ptr<KgReplica> r) {
  using caf::sec;
  return {
      [self, r](kg_setup_atom, std::vector<caf::actor>& shards, caf::actor& member, const std::string& run_key) {
        return reply(*r, sec::runtime_error, [&] { return set_up(*r, self->system(), std::move(shards), std::move(member), run_key); });
      },
      [r](train_epoch_atom, uint64_t epoch, int64_t steps, caf::actor& driver) { train_epoch(*r, epoch, steps, driver); },
      [r](kg_eval_atom, const std::string& split) {
        return reply(*r, sec::runtime_error, [&] { return evaluation_bytes(*r, split); });
      },
      [r](get_state_atom) { return reply(*r, sec::runtime_error, [&] { return save_state(*r); }); },
      [r](set_state_atom, const std::vector<char>& bytes) {
        return reply(*r, sec::invalid_argument, [&] { return restore_state(*r, bytes); });
      },
  };
}

}  // namespace

void register_kg_trainer_type(runtime::ActorTypeRegistry& registry) {
  registry.add("kg_trainer", [](caf::actor_system& system, const runtime::Settings& settings) {
    std::shared_ptr<KgReplica> replica = make_replica(settings);
    set_torch_threads(replica->job.threads);
    tune_malloc_for_training();
    // Detached: an epoch blocks its thread in libtorch for a long time.
    return caf::actor_cast<caf::actor>(system.spawn<caf::detached>(kg_trainer, std::move(replica)));
  });
}

}  // namespace partita
