#include "training/kg_trainer.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "actors/actor_types.h"
#include "base/error.h"
#include "base/random.h"
#include "embeddings/bucket_epoch.h"
#include "embeddings/embedding_partitions.h"
#include "embeddings/embedding_shard.h"
#include "embeddings/kg_triples.h"
#include "embeddings/partition_buffer.h"
#include "embeddings/sharded_embedding.h"
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
  std::unique_ptr<ShardedEmbedding> table;
  std::unique_ptr<runtime::Allreduce> allreduce;
  std::vector<float> buffer;
  std::vector<int64_t> order;  // the epoch's triple order
  uint64_t order_epoch = 0;
  // embeddings.storage: disk: the table on disk, its buffer, the epoch's walk, the table id
  // (original node id) of each global id, and the state the buffer is in.
  std::unique_ptr<EmbeddingPartitions> disk;
  std::unique_ptr<PartitionBuffer> partitions;
  std::vector<int64_t> table_id;
  BucketEpoch plan;
  int64_t states_entered = 0;  // this epoch's: its swaps are one fewer
  std::vector<int64_t> state_edges;  // the state's own edges, sorted: the degree-based negatives' triples
  static constexpr size_t kNoState = ~size_t{0};
  size_t state = kNoState;  // the plan's state the buffer holds; kNoState before an epoch's first step
  SparseAdagrad entity_optimizer;
  uint64_t trained_epoch = 0;  // the last epoch trained whole (or restored): the files' epoch
};

EmbeddingPartitions::Shape disk_shape(const KgReplica& r) {
  return buffer_table_shape(r.triples->num_entities(), r.job.link.embedding_partitions, r.job.link.dim);
}

// The buffer's budget in the table's (logical) partitions: c physical ones.
int logical_capacity(const KgReplica& r) {
  return r.job.link.embedding_buffer * (r.disk->num_partitions() / r.job.link.embedding_partitions);
}

// The partitions a swap reads: one physical partition's logical ones (0 without prefetch).
int staging_of(const KgReplica& r) {
  return r.job.link.embedding_prefetch ? r.disk->num_partitions() / r.job.link.embedding_partitions : 0;
}

std::string embedding_dir(const JobConfig& job) {
  return job.link.embedding_dir.empty() ? job.output + "/embeddings" : job.link.embedding_dir;
}

// The table as of the job's last checkpoint (EmbeddingPartitions::snapshot), and its tag.
std::string snapshot_dir(const JobConfig& job) { return embedding_dir(job) + "/checkpoint"; }
std::string snapshot_tag(uint64_t epoch) { return "epoch " + std::to_string(epoch); }

// Creates the disk table with its initial values, and the buffer over it.
void open_disk_table(KgReplica& r) {
  const EmbeddingPartitions::Shape shape = disk_shape(r);
  r.table_id = table_ids(*r.triples, r.job.seed);
  r.disk = std::make_unique<EmbeddingPartitions>(EmbeddingPartitions::create(
      embedding_dir(r.job), shape, r.job.seed, r.job.link.init_std, 0.0, original_ids_of_rows(*r.triples, r.table_id)));
  r.partitions = std::make_unique<PartitionBuffer>(*r.disk, logical_capacity(r), staging_of(r), kStepDeadline);
  r.entity_optimizer.learning_rate = r.job.learning_rate;
  r.entity_optimizer.validate();
  const std::vector<int64_t> sizes = bucket_sizes(*r.triples, r.table_id, shape);
  const auto [smallest, largest] = std::minmax_element(sizes.begin(), sizes.end());
  spdlog::info("trainer {}: entity embeddings on disk in {}: {} partitions, regrouped every epoch from {} logical "
               "ones of ~{} rows ({:.1f} MiB each with their accumulators), a buffer of {} ({} logical); logical edge "
               "buckets of {} to {} triples",
               r.index, r.disk->dir(), r.job.link.embedding_partitions, shape.num_partitions,
               shape.num_entities / shape.num_partitions, static_cast<double>(r.disk->payload_bytes(0)) / (1 << 20),
               r.job.link.embedding_buffer, logical_capacity(r), *smallest, *largest);
}

// Walks the buffer to the state that trains `step` of the epoch's plan, and starts reading
// every logical partition the state after it admits (one physical partition: the swap).
void enter_state_of(KgReplica& r, int64_t step) {
  const size_t k = r.plan.state_of_step(step);
  if (k == r.state) return;
  r.partitions->enter(r.plan.resident[k]);
  r.state = k;
  ++r.states_entered;
  r.state_edges = r.plan.edges[k];
  std::sort(r.state_edges.begin(), r.state_edges.end());
  if (r.job.link.embedding_prefetch && k + 1 < r.plan.resident.size()) {
    std::vector<int> arriving;
    for (int next : r.plan.resident[k + 1]) {
      if (!r.partitions->resident(next)) arriving.push_back(next);
    }
    r.partitions->prefetch(arriving);
  }
}

// The entity rows of `ids` (global ids) from the buffer (training: all resident) or, with
// the buffer flushed, from the files (evaluation).
void read_disk_rows(KgReplica& r, const std::vector<int64_t>& ids, float* out) {
  const int64_t dim = r.job.link.dim;
  std::vector<int64_t> table(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) table[i] = r.table_id[static_cast<size_t>(ids[i])];
  if (r.partitions->resident_count() == 0) {
    r.disk->read_rows(Span<const int64_t>(table), out);
    return;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    const int part = r.disk->partition_of(table[i]);
    const Span<float> values = r.partitions->values(part);
    std::memcpy(out + i * dim, values.data() + (table[i] - r.disk->begin(part)) * dim, static_cast<size_t>(dim) * sizeof(float));
  }
}

// Applies a step's entity gradients (grads[i * dim, ...) for global ids[i], unique) to the
// resident partitions, as an embedding shard applies them (embeddings/sparse_adagrad.h).
void apply_disk_gradients(KgReplica& r, const std::vector<int64_t>& ids, const std::vector<float>& grads) {
  const int64_t dim = r.job.link.dim;
  const int p = r.disk->num_partitions();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(p));
  std::vector<std::vector<float>> part_grads(static_cast<size_t>(p));
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t t = r.table_id[static_cast<size_t>(ids[i])];
    const int part = r.disk->partition_of(t);
    rows[part].push_back(t - r.disk->begin(part));
    part_grads[part].insert(part_grads[part].end(), grads.begin() + i * dim, grads.begin() + (i + 1) * dim);
  }
  for (int part = 0; part < p; ++part) {
    if (rows[part].empty()) continue;
    r.entity_optimizer.step(r.partitions->values(part), r.partitions->accumulators(part), dim,
                            Span<const int64_t>(rows[part]), Span<const float>(part_grads[part]));
  }
}

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

// The rows of `ids` (sorted, unique) from their owners, as a [n, dim] tensor.
at::Tensor read_rows(KgReplica& r, const std::vector<int64_t>& ids) {
  at::Tensor rows = torch::empty({static_cast<int64_t>(ids.size()), r.job.link.dim}, torch::kFloat);
  if (ids.empty()) return rows;
  if (r.disk) {
    read_disk_rows(r, ids, rows.data_ptr<float>());
  } else {
    r.table->read(Span<const int64_t>(ids), rows.data_ptr<float>());
  }
  return rows;
}

// [p, k]: log of the rate at which the buffer draws each positive's chunk negatives against
// the in-memory job (BucketEpoch::log_rate).
at::Tensor negative_log_rates(const KgReplica& r, const std::vector<int64_t>& heads, const std::vector<int64_t>& tails,
                              const std::vector<int64_t>& negatives, const std::vector<int64_t>& chunk_of) {
  const int64_t p = static_cast<int64_t>(heads.size());
  const int64_t k = r.negatives.k;
  const int groups = r.job.link.embedding_partitions;
  auto physical = [&](int64_t id) {
    return r.plan.group_of[static_cast<size_t>(r.disk->partition_of(r.table_id[static_cast<size_t>(id)]))];
  };
  std::vector<int> negative_group(negatives.size());
  for (size_t j = 0; j < negatives.size(); ++j) negative_group[j] = physical(negatives[j]);
  at::Tensor out = torch::empty({p, k}, torch::kFloat);
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < p; ++i) {
    const double* row = r.plan.log_rate.data() + (static_cast<size_t>(physical(heads[i])) * groups + physical(tails[i])) * groups;
    const int* g = negative_group.data() + chunk_of[i] * k;
    for (int64_t j = 0; j < k; ++j) o[i * k + j] = static_cast<float>(row[g[j]]);
  }
  return out;
}

// One optimiser step of every replica; returns {loss sum, positives} over all replicas.
std::array<double, 2> train_step(KgReplica& r, uint64_t epoch, int64_t step) {
  const JobConfig& job = r.job;
  const KgTriples& kg = *r.triples;
  const TripleList& train = kg.train();
  // The step's slice of triples: of the epoch's order, or (disk) of its buffer state's.
  const std::vector<int64_t>* slice_of = &r.order;
  int64_t begin = 0, end = 0;
  std::vector<int64_t> positions;
  if (r.disk) {
    enter_state_of(r, step);
    slice_of = &r.plan.edges[r.state];
    const int64_t local = step - r.plan.first_step[r.state];
    begin = local * job.batch_size;
    end = std::min<int64_t>(begin + job.batch_size, static_cast<int64_t>(slice_of->size()));
    for (int64_t i = 0; i < end - begin; ++i) positions.push_back(i);
  } else {
    begin = std::min<int64_t>(step * job.batch_size, train.size());
    end = std::min<int64_t>(begin + job.batch_size, train.size());
    positions = trainer_positions(kg, r.folder->book(), Span<const int64_t>(r.order), begin, end, r.part,
                                  r.index % job.trainers_per_partition, job.trainers_per_partition);
  }
  const std::vector<int64_t>& slice = *slice_of;
  const int64_t p = static_cast<int64_t>(positions.size());
  const int64_t k = r.negatives.k;

  // The positives, grouped by chunk (positions are increasing, so chunks are contiguous).
  std::vector<int64_t> heads(p), tails(p), rels(p), chunks;
  std::vector<int64_t> group_of(p), slot_of(p);
  int64_t max_slots = 0;
  for (int64_t i = 0; i < p; ++i) {
    const int64_t e = slice[begin + positions[i]];
    heads[i] = train.head[e];
    tails[i] = train.tail[e];
    rels[i] = train.relation[e];
    const int64_t chunk = positions[i] / r.negatives.chunk_size;
    if (chunks.empty() || chunks.back() != chunk) chunks.push_back(chunk);
    group_of[i] = static_cast<int64_t>(chunks.size()) - 1;
    slot_of[i] = (i > 0 && group_of[i - 1] == group_of[i]) ? slot_of[i - 1] + 1 : 0;
    max_slots = std::max(max_slots, slot_of[i] + 1);
  }
  const int64_t groups = static_cast<int64_t>(chunks.size());
  std::vector<int64_t> negatives;
  negatives.reserve(static_cast<size_t>(groups * k));
  for (int64_t chunk : chunks) {
    std::vector<int64_t> drawn =
        r.disk ? draw_buffer_negatives(kg, r.negatives, r.plan, r.state, r.state_edges, r.table_id, r.disk->shape(), job.seed, epoch,
                                       static_cast<uint64_t>(step), static_cast<uint64_t>(chunk))
               : kg.draw_negatives(r.negatives, job.seed, epoch, static_cast<uint64_t>(step), static_cast<uint64_t>(chunk));
    negatives.insert(negatives.end(), drawn.begin(), drawn.end());
  }
  std::vector<int64_t> all(heads);
  all.insert(all.end(), tails.begin(), tails.end());
  all.insert(all.end(), negatives.begin(), negatives.end());
  const std::vector<int64_t> ids = sorted_unique(std::move(all));

  r.optimizer->zero_grad();
  at::Tensor rows = read_rows(r, ids).set_requires_grad(true);
  at::Tensor loss_sum = torch::zeros({}, torch::kFloat);
  if (p > 0) {
    at::Tensor h = rows.index_select(0, positions_in(ids, heads));
    at::Tensor t = rows.index_select(0, positions_in(ids, tails));
    at::Tensor rel = r.relations.index_select(0, ids_tensor(rels));
    at::Tensor neg = rows.index_select(0, positions_in(ids, negatives)).view({groups, k, job.link.dim});
    // Queries laid out [groups, max_slots, dim] (padded with zero rows), scored against
    // their chunk's negatives in one batched product, then taken back to [p, k].
    std::vector<int64_t> flat(p);
    for (int64_t i = 0; i < p; ++i) flat[i] = group_of[i] * max_slots + slot_of[i];
    const at::Tensor flat_index = ids_tensor(flat);
    auto negative_scores = [&](const at::Tensor& query) {
      at::Tensor padded = torch::zeros({groups * max_slots, job.link.dim}, torch::kFloat).index_copy(0, flat_index, query);
      at::Tensor scores = kg_score_groups(r.decoder, padded.view({groups, max_slots, job.link.dim}), neg);
      return scores.view({groups * max_slots, k}).index_select(0, flat_index);
    };
    at::Tensor keep_tail, keep_head;
    if (r.negatives.strict) {
      keep_tail = torch::empty({p, k}, torch::kBool);
      keep_head = torch::empty({p, k}, torch::kBool);
      bool* kt = keep_tail.data_ptr<bool>();
      bool* kh = keep_head.data_ptr<bool>();
      for (int64_t i = 0; i < p; ++i) {
        const int64_t* n = negatives.data() + group_of[i] * k;
        const int32_t rel_i = static_cast<int32_t>(rels[i]);
        for (int64_t j = 0; j < k; ++j) {
          kt[i * k + j] = kg.keeps_negative(true, heads[i], rel_i, tails[i], n[j]);
          kh[i * k + j] = kg.keeps_negative(false, heads[i], rel_i, tails[i], n[j]);
        }
      }
    }
    const at::Tensor q_tail = kg_query(r.decoder, KgSide::kTail, h, rel);
    const at::Tensor positive = kg_score_pairs(r.decoder, q_tail, t);
    at::Tensor q_head, positive_head, inverse;
    if (job.link.reciprocal) {
      inverse = r.relations.index_select(0, ids_tensor(rels) + kg.num_relations());
      q_head = kg_query(r.decoder, KgSide::kTail, t, inverse);
      positive_head = kg_score_pairs(r.decoder, q_head, h);
    } else {
      q_head = kg_query(r.decoder, KgSide::kHead, t, rel);
      positive_head = positive;
    }
    at::Tensor tail_scores = negative_scores(q_tail), head_scores = negative_scores(q_head);
    if (r.disk && r.loss == KgLoss::kSoftmax && !r.plan.log_rate.empty()) {
      // The buffer's negatives at their in-memory weight (embeddings/bucket_epoch.h).
      const at::Tensor correction = negative_log_rates(r, heads, tails, negatives, group_of);
      tail_scores = tail_scores - correction;
      head_scores = head_scores - correction;
    }
    loss_sum = kg_loss_sum(r.loss, positive, tail_scores, keep_tail, job.link.margin) +
               kg_loss_sum(r.loss, positive_head, head_scores, keep_head, job.link.margin);
    if (r.regularizer != KgRegularizer::kNone && job.link.regularization > 0) {
      at::Tensor reg = kg_regularizer_sum(r.regularizer, h) + kg_regularizer_sum(r.regularizer, t) +
                       kg_regularizer_sum(r.regularizer, rel);
      if (inverse.defined()) reg = reg + kg_regularizer_sum(r.regularizer, inverse);
      loss_sum = loss_sum + job.link.regularization * reg;
    }
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
  if (entity_grads.empty()) entity_grads.assign(ids.size() * static_cast<size_t>(job.link.dim), 0.0f);
  if (r.disk) {
    apply_disk_gradients(r, ids, entity_grads);
  } else {
    // Every shard hears of every trainer's step, even with no rows of its own.
    r.table->push(Span<const int64_t>(ids), Span<const float>(entity_grads));
  }
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
  rows.read = [&r](const std::vector<int64_t>& ids, float* out) {
    if (r.disk) {
      read_disk_rows(r, ids, out);
    } else {
      r.table->read(Span<const int64_t>(ids), out);
    }
  };
  rows.read_range = [&r](int part, int64_t begin, int64_t end, float* out) {
    if (r.disk) {
      std::vector<int64_t> ids(static_cast<size_t>(end - begin));
      for (int64_t i = begin; i < end; ++i) ids[i - begin] = i;
      read_disk_rows(r, ids, out);
    } else {
      r.table->read_range(part, begin, end, out);
    }
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
  if (r.disk) {
    // The table on disk is the rest of the state: the epoch's end left it flushed into its
    // files, which the snapshot keeps as they are now.
    if (r.partitions->resident_count() != 0) throw Error("saving the state in the middle of an epoch's walk");
    r.disk->snapshot(snapshot_dir(r.job), snapshot_tag(r.trained_epoch));
    archive.write("table_epoch", torch::tensor(static_cast<int64_t>(r.trained_epoch)));
  }
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
  if (r.disk) {
    at::Tensor table_epoch;
    if (!archive.try_read("table_epoch", table_epoch) || table_epoch.numel() != 1) {
      throw Error("the checkpoint holds no embedding table on disk (embeddings.storage changed?)");
    }
    const uint64_t epoch = static_cast<uint64_t>(table_epoch.item<int64_t>());
    r.partitions.reset();  // it reads the table being replaced
    r.disk = std::make_unique<EmbeddingPartitions>(
        EmbeddingPartitions::restore(snapshot_dir(r.job), snapshot_tag(epoch), embedding_dir(r.job), disk_shape(r)));
    r.partitions = std::make_unique<PartitionBuffer>(*r.disk, logical_capacity(r), staging_of(r), kStepDeadline);
    r.trained_epoch = epoch;
  }
}

kg_trainer_actor::behavior_type kg_trainer(kg_trainer_actor::pointer self, std::shared_ptr<KgReplica> r) {
  return {
      [self, r](kg_setup_atom, std::vector<caf::actor>& shards, caf::actor& member,
                const std::string& run_key) -> caf::result<bool> {
        try {
          if (!member) throw Error("set-up without an allreduce member");
          if (r->job.link.on_disk()) {
            open_disk_table(*r);
          } else {
            r->table = std::make_unique<ShardedEmbedding>(self->system(), r->folder->book(), std::move(shards), run_key,
                                                          r->index, r->job.link.dim, kStepDeadline);
          }
          r->allreduce = std::make_unique<runtime::Allreduce>(self->system(), std::move(member), kStepDeadline);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
      [self, r](train_epoch_atom, uint64_t epoch, int64_t steps, caf::actor& driver) {
        try {
          if (!r->allreduce) throw Error("not set up");
          release_heap_between_epochs(epoch);
          if (r->disk) {
            r->plan = plan_bucket_epoch(*r->triples, r->table_id, r->disk->shape(), r->job.link.embedding_partitions,
                                        r->job.link.embedding_buffer, r->job.seed, epoch, r->job.batch_size);
            r->state = KgReplica::kNoState;
            r->states_entered = 0;
            if (steps > r->plan.steps) {
              throw Error("asked for " + std::to_string(steps) + " steps, the epoch's walk has " +
                          std::to_string(r->plan.steps));
            }
          } else {
            r->order = r->triples->epoch_order(r->job.seed, epoch);
          }
          const PartitionBuffer::Stats before = r->partitions ? r->partitions->stats() : PartitionBuffer::Stats();
          for (int64_t step = 0; step < steps; ++step) {
            const std::array<double, 2> sums = train_step(*r, epoch, step);
            caf::anon_send(driver, train_step_atom::value, static_cast<int32_t>(r->index), epoch, step, steps, sums[0],
                           sums[1], 0.0, parameter_hash({r->relations}));
          }
          if (r->partitions) {
            // The files hold the epoch's table: evaluation and checkpoints read them.
            r->partitions->flush();
            r->state = KgReplica::kNoState;
            r->trained_epoch = epoch;
            const PartitionBuffer::Stats& after = r->partitions->stats();
            spdlog::info("trainer {}: epoch {}: {} of the walk's {} swaps (lower bound {}), {} logical partitions read ({} "
                         "prefetched), {} written, {:.2f} s in swaps, {:.2f} s waiting for reads, at most {} of {} "
                         "resident and {} staged",
                         r->index, epoch, std::max<int64_t>(r->states_entered - 1, 0), r->plan.order.swaps(),
                         swap_lower_bound(r->job.link.embedding_partitions, r->job.link.embedding_buffer),
                         after.reads - before.reads, after.prefetched - before.prefetched, after.writes - before.writes,
                         after.swap_seconds - before.swap_seconds, after.wait_seconds - before.wait_seconds,
                         after.peak_resident, r->partitions->capacity(), after.peak_staged);
          }
          caf::anon_send(driver, train_done_atom::value, static_cast<int32_t>(r->index), epoch);
        } catch (const std::exception& e) {
          std::string what = e.what();
          if (r->partitions) {
            // No half-entered state outlives the epoch: evaluation and the next walk read the
            // files, each whole as last written, with the rows trained so far written back.
            const std::string unsaved = r->partitions->settle();
            r->state = KgReplica::kNoState;
            if (!unsaved.empty()) what += " (and writing the buffer back failed: " + unsaved + ")";
          }
          if (dynamic_cast<const runtime::AllreduceStopped*>(&e) != nullptr ||
              dynamic_cast<const EmbeddingShardStopped*>(&e) != nullptr) {
            spdlog::info("trainer {}: epoch {} stopped: {}", r->index, epoch, what);  // by the driver
          } else {
            spdlog::error("trainer {}: epoch {} failed: {}", r->index, epoch, what);
          }
          caf::anon_send(driver, train_failed_atom::value, static_cast<int32_t>(r->index), what);
        }
      },
      [r](kg_eval_atom, const std::string& split) -> caf::result<std::vector<char>> {
        try {
          if (!r->table && !r->disk) throw Error("not set up");
          const std::vector<double> sums = evaluate(*r, split);
          std::vector<char> bytes(sums.size() * sizeof(double));
          std::memcpy(bytes.data(), sums.data(), bytes.size());
          return bytes;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
      [r](get_state_atom) -> caf::result<std::vector<char>> {
        try {
          return save_state(*r);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
      [r](set_state_atom, const std::vector<char>& bytes) -> caf::result<bool> {
        try {
          load_state(*r, bytes);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
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
