#include "training/link_trainer.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/actor_types.h"
#include "actors/sampler_client.h"
#include "base/error.h"
#include "base/random.h"
#include "base/stopwatch.h"
#include "models/batch_tensors.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"
#include "models/kg_decoder.h"
#include "models/kg_loss.h"
#include "models/torch_runtime.h"
#include "models/training.h"
#include "partitioner/partition_format.h"
#include "runtime/collective/allreduce_client.h"
#include "runtime/settings.h"
#include "training/job_config.h"
#include "training/kg_triples.h"
#include "training/relational_encoder.h"
#include "training/replica_step.h"
#include "training/sharded_embedding.h"
#include "training/triple_ranking.h"

namespace partita {

namespace {

using std::chrono::milliseconds;

// The slowest replica's step (sampling and compute) must end within this, and so must
// every batch the sampler hands over.
constexpr milliseconds kStepDeadline{120000};
// Evaluation batches and negatives are keyed by this epoch (less the split's number), the
// same every time: a metric moves only when the weights do.
constexpr uint64_t kEvalEpoch = ~uint64_t{0};

// One batch of this trainer: its positive edges (global ids, with their relation) and each
// positive's negative destinations.
struct LinkStep {
  std::vector<int64_t> src, dst;
  std::vector<int32_t> relation;
  std::vector<int64_t> time;       // temporal sampling: each positive's time bound
  std::vector<float> value;        // rating regression: each positive's value
  std::vector<int64_t> negatives;  // [positives, k] row-major
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// Everything one replica owns. Lives on the trainer's own thread.
struct LinkReplica {
  JobConfig job;
  int index = 0;
  int part = 0;
  int share = 0, shares = 1;
  PartitionBook book;
  std::unique_ptr<KgTriples> triples;
  // The held-out edges of every partition by split ("valid", "test"), ordered by the
  // original ids of their ends: the same order however the graph is partitioned.
  std::map<std::string, TripleList> held_out;
  KgNegatives negatives;
  KgLoss loss = KgLoss::kBce;
  KgDecoder decoder = KgDecoder::kDot;
  std::unique_ptr<SamplerClient> sampler;  // after set-up
  std::unique_ptr<runtime::Allreduce> allreduce;
  std::shared_ptr<GnnModel> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<float> gradients;  // the step's flat buffer, reused
  std::vector<LinkStep> steps;   // of the plan started last
  // Relational encoders: every node's type by global id, and the batches' layout.
  std::vector<int32_t> node_type;
  HeteroLayout hetero;
  // The decoder's relations [R, dim] (DistMult, ComplEx, TransE; undefined for dot): a
  // parameter of the model's module, so allreduced, stepped and checkpointed with it.
  at::Tensor relations;
  // model.target_edge: its relation (-1: every edge) and its training edges by original id;
  // the nodes its negatives are drawn from, global ids in original-id order (empty: every
  // node, as KgTriples draws them).
  int32_t target = -1;
  std::vector<int64_t> target_edges;
  std::vector<int64_t> candidates;
  // train.loss: mse (rating regression): no negatives; an edge's prediction is the decoder's
  // score plus the mean value of the training positives. Evaluation returns it beside two
  // baselines: that mean, and the mean of the destination's training positives (the
  // per-movie mean; the global mean for a destination with none).
  bool regression = false;
  double mean_value = 0;
  std::unordered_map<int64_t, double> destination_mean;
  // eval.negatives: all: the encoder's output per entity, sharded by owner (set up by the
  // driver), and which weights it holds: the count of weight changes (steps, restores) when
  // it was last written, so that valid and test rank against one encoding.
  std::unique_ptr<ShardedEmbedding> encodings;
  uint64_t weights_version = 0;
  uint64_t encoded_version = ~uint64_t{0};
};

// A chunk's negatives: KgTriples' draw over every node, or, for a target edge type, k draws
// among its destination type's nodes (keyed by (seed, epoch, step, chunk) as original-id
// positions, so partition-invariant like KgTriples'), degree_fraction of them as the
// destination of a uniformly drawn target training edge.
std::vector<int64_t> draw_negatives(const LinkReplica& r, const KgNegatives& negatives, uint64_t epoch, uint64_t step,
                                    uint64_t chunk) {
  if (r.candidates.empty()) return r.triples->draw_negatives(negatives, r.job.seed, epoch, step, chunk);
  Rng rng(mix64(mix64(r.job.seed, 0x6c6e6567ull /* "lneg" */), mix64(epoch, step), chunk));
  std::vector<int64_t> out(static_cast<size_t>(negatives.k));
  const uint64_t num_degree = static_cast<uint64_t>(static_cast<double>(negatives.k) * negatives.degree_fraction);
  for (size_t j = 0; j < out.size(); ++j) {
    if (j < num_degree && !r.target_edges.empty()) {
      out[j] = r.triples->train().tail[r.target_edges[rng.below(r.target_edges.size())]];
    } else {
      out[j] = r.candidates[rng.below(r.candidates.size())];
    }
  }
  return out;
}

// Of relation `target` only, when >= 0.
TripleList canonical_held_out(const KgTriples& triples, const std::string& split, int parts,
                              const std::vector<int64_t>& original_of, int32_t target) {
  TripleList all;
  for (int p = 0; p < parts; ++p) {
    const TripleList part = triples.held_out(split, p);
    for (int64_t i = 0; i < part.size(); ++i) {
      if (target >= 0 && part.relation[i] != target) continue;
      all.add(part, i);
    }
  }
  std::vector<size_t> order(all.head.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_tuple(original_of[all.head[a]], original_of[all.tail[a]], all.relation[a]) <
           std::make_tuple(original_of[all.head[b]], original_of[all.tail[b]], all.relation[b]);
  });
  TripleList sorted;
  for (size_t i : order) sorted.add(all, static_cast<int64_t>(i));
  return sorted;
}

std::unique_ptr<LinkReplica> make_replica(const runtime::Settings& settings) {
  auto r = std::make_unique<LinkReplica>();
  r->job = parse_job(runtime::required_setting(settings, "job"), "/", "the job sent by the driver");
  require_partition_folder(r->job.partition_dir(), "job");
  r->index = static_cast<int>(runtime::integer_setting(settings, "trainer", 0, r->job.num_trainers() - 1));
  r->part = r->job.part_of_trainer(r->index);
  r->shares = r->job.trainers_per_partition;
  r->share = r->index % r->shares;
  const PartitionFolder folder(r->job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  r->target = check_link_encoder_fits(r->job, meta, folder.dir());
  r->book = folder.book();
  r->triples = std::make_unique<KgTriples>(folder);
  std::vector<int64_t> original_of(static_cast<size_t>(meta.num_nodes));
  for (int64_t o = 0; o < meta.num_nodes; ++o) original_of[r->triples->global_of_original(o)] = o;
  for (const char* split : {"valid", "test"}) {
    r->held_out[split] = canonical_held_out(*r->triples, split, meta.num_parts, original_of, r->target);
  }
  const bool relational = r->job.model == "rgcn" || r->job.model == "hetero_sage";
  if (relational || r->target >= 0) r->node_type = global_node_types(folder);
  if (r->target >= 0) {
    const TripleList& train = r->triples->train();
    for (int64_t e = 0; e < train.size(); ++e) {
      if (train.relation[e] == r->target) r->target_edges.push_back(e);
    }
    const std::string& dst_type = meta.edge_types[r->target].dst_type;
    const int32_t type = static_cast<int32_t>(
        std::find(meta.node_types.begin(), meta.node_types.end(), dst_type) - meta.node_types.begin());
    for (int64_t o = 0; o < meta.num_nodes; ++o) {
      const int64_t v = r->triples->global_of_original(o);
      if (r->node_type[v] == type) r->candidates.push_back(v);
    }
    check_negatives_fit(r->job, static_cast<int64_t>(r->candidates.size()), "'" + dst_type + "' nodes of model.target_edge");
  }
  r->negatives.k = r->job.link.negatives;
  r->negatives.chunk_size = r->job.link.chunk_size;
  r->negatives.degree_fraction = r->job.link.degree_fraction;
  r->negatives.strict = r->job.link.strict;
  r->regression = r->job.link.regression();
  if (r->regression) {
    check_rating_target(r->job, meta, folder.dir(), false);
    // The training positives' mean value, and each destination's: the prediction's offset
    // and evaluation's baselines, the same in every trainer (every trainer reads all edges).
    const TripleList& train = r->triples->train();
    std::unordered_map<int64_t, std::pair<double, int64_t>> by_destination;
    double sum = 0;
    int64_t count = 0;
    for (int64_t e = 0; e < train.size(); ++e) {
      if (r->target >= 0 && train.relation[e] != r->target) continue;
      sum += train.value[e];
      ++count;
      auto& [destination_sum, destination_count] = by_destination[train.tail[e]];
      destination_sum += train.value[e];
      ++destination_count;
    }
    r->mean_value = count > 0 ? sum / static_cast<double>(count) : 0.0;
    for (const auto& [node, sum_count] : by_destination) {
      r->destination_mean[node] = sum_count.first / static_cast<double>(sum_count.second);
    }
  } else {
    r->loss = parse_kg_loss(r->job.link.loss, "train.loss");
  }
  r->decoder = parse_kg_decoder(r->job.link.decoder, r->job.link.transe_norm, "model.decoder");
  ModelConfig config;
  config.kind = r->job.model;
  config.in_dim = r->job.link.learnt_input() ? 0 : meta.feature_dim;  // 0: one-hot, a learnt row per node
  config.hidden_dim = r->job.hidden;
  config.out_dim = r->job.link.dim;
  config.num_layers = r->job.layers;
  config.heads = r->job.model == "gat" ? r->job.heads : 1;
  config.dropout = r->job.dropout;
  config.trim = r->job.trim;
  if (relational) {
    set_relations(config, meta);
    config.decomposition = r->job.decomposition;
    config.num_bases = r->job.bases;
    config.num_blocks = r->job.blocks;
    r->hetero = HeteroLayout{config.num_relations, &r->node_type};
  }
  // Every replica draws the same initial weights from the job seed.
  r->model = make_model(config, r->job.seed);
  if (r->decoder != KgDecoder::kDot) {
    // One relation per edge type (1 for an untyped graph), drawn from the job seed after the
    // encoder's weights: N(0, 1/dim), so that DistMult starts near the dot product's scale.
    check_kg_dim(r->decoder, r->job.link.dim, "model.dim");
    const int64_t num_relations = std::max<int64_t>(1, static_cast<int64_t>(meta.edge_types.size()));
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(mix64(r->job.seed, 0x72656c73ull /* "rels" */));
    at::Tensor init = at::normal(1.0, 1.0 / std::sqrt(static_cast<double>(r->job.link.dim)),
                                 {num_relations, r->job.link.dim}, generator);
    r->relations = r->model->register_parameter("decoder_relations", init);
  }
  r->optimizer = make_optimizer(r->job.optimizer, r->model->parameters(), r->job.learning_rate, r->job.weight_decay,
                                r->job.momentum);
  return r;
}

// Appends `step`'s seeds to `plan` as its next batch: the positives' sources, their
// destinations, then their negatives (SubgraphBuilder keeps each node once, unless
// disjoint). Temporal sampling: each seed's time bound is its positive's time.
void add_batch(EpochPlan& plan, const LinkStep& step, bool temporal) {
  plan.order.insert(plan.order.end(), step.src.begin(), step.src.end());
  plan.order.insert(plan.order.end(), step.dst.begin(), step.dst.end());
  plan.order.insert(plan.order.end(), step.negatives.begin(), step.negatives.end());
  plan.offsets.push_back(static_cast<int64_t>(plan.order.size()));
  if (!temporal) return;
  plan.times.insert(plan.times.end(), step.time.begin(), step.time.end());
  plan.times.insert(plan.times.end(), step.time.begin(), step.time.end());
  const size_t k = step.src.empty() ? 0 : step.negatives.size() / step.src.size();
  for (int64_t t : step.time) plan.times.insert(plan.times.end(), k, t);
}

// The epoch's `steps` batches (training/kg_triples.h: which positives and negatives), each
// leaving out all of the step's positives, whichever trainer holds them.
EpochPlan plan_training(LinkReplica& r, uint64_t epoch, int64_t steps) {
  const TripleList& train = r.triples->train();
  const std::vector<int64_t>& times = r.triples->train_times();
  const bool temporal = r.job.temporal();
  std::vector<int64_t> order = r.triples->epoch_order(r.job.seed, epoch);
  if (r.job.time_ordered) {
    // Batches cut in time order: the edges by time, ties by edge id.
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (r.target >= 0) {
    // The target type's edges alone, in the same order.
    order.erase(std::remove_if(order.begin(), order.end(), [&](int64_t e) { return train.relation[e] != r.target; }),
                order.end());
  }
  if (r.job.time_ordered) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return times[a] < times[b]; });
  }
  const int64_t m = static_cast<int64_t>(order.size()), b = r.job.batch_size;
  EpochPlan plan;
  plan.job_seed = r.job.seed;
  plan.epoch = epoch;
  plan.offsets = {0};
  plan.excluded_offsets = {0};
  r.steps.assign(static_cast<size_t>(steps), LinkStep());
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t begin = std::min(m, s * b), end = std::min(m, begin + b);
    LinkStep& step = r.steps[static_cast<size_t>(s)];
    std::map<int64_t, std::vector<int64_t>> chunks;
    for (int64_t p : trainer_positions(*r.triples, r.book, Span<const int64_t>(order), begin, end, r.part, r.share,
                                       r.shares)) {
      const int64_t e = order[static_cast<size_t>(begin + p)];
      step.src.push_back(train.head[e]);
      step.dst.push_back(train.tail[e]);
      step.relation.push_back(train.relation[e]);
      if (temporal) step.time.push_back(times[e]);
      if (r.regression) {
        step.value.push_back(train.value[e]);
        continue;
      }
      const int64_t chunk = p / r.negatives.chunk_size;
      auto it = chunks.find(chunk);
      if (it == chunks.end()) {
        it = chunks.emplace(chunk, draw_negatives(r, r.negatives, epoch, s, chunk)).first;
      }
      step.negatives.insert(step.negatives.end(), it->second.begin(), it->second.end());
    }
    add_batch(plan, step, temporal);
    for (int64_t i = begin; i < end; ++i) {
      plan.excluded_src.push_back(train.head[order[i]]);
      plan.excluded_dst.push_back(train.tail[order[i]]);
    }
    plan.excluded_offsets.push_back(static_cast<int64_t>(plan.excluded_src.size()));
  }
  return plan;
}

// The split's held-out edges this trainer scores, in batches of eval_batch_size edges of
// the canonical order (keyed by their position there), each edge against eval.negatives
// destinations drawn keyed by its position. Held-out edges are not in the graph: nothing
// is left out. Temporal sampling bounds them by no time: they have none in a partition
// folder, and a time split (data.holdout.by: time) puts every training edge before them.
EpochPlan plan_evaluation(LinkReplica& r, const std::string& split) {
  const TripleList& edges = r.held_out.at(split);
  if (r.regression && static_cast<int64_t>(edges.value.size()) != edges.size()) {
    throw UsageError("train.loss: mse: the held-out " + split + " edges have no values to evaluate on");
  }
  const uint64_t split_code = split == "valid" ? 1 : 2;
  const int64_t n = edges.size(), b = r.job.eval_batch_size;
  KgNegatives negatives;
  negatives.k = r.regression ? 0 : r.job.link.eval_negatives;
  negatives.chunk_size = 1;
  EpochPlan plan;
  plan.job_seed = r.job.seed;
  plan.epoch = kEvalEpoch - split_code;
  plan.offsets = {0};
  const int64_t batches = (n + b - 1) / b;
  r.steps.assign(static_cast<size_t>(batches), LinkStep());
  for (int64_t batch = 0; batch < batches; ++batch) {
    LinkStep& step = r.steps[static_cast<size_t>(batch)];
    for (int64_t i = batch * b; i < std::min(n, (batch + 1) * b); ++i) {
      if (r.book.owner(edges.tail[i]) != r.part || i % r.shares != r.share) continue;
      step.src.push_back(edges.head[i]);
      step.dst.push_back(edges.tail[i]);
      step.relation.push_back(edges.relation[i]);
      if (r.job.temporal()) step.time.push_back(std::numeric_limits<int64_t>::max());
      if (r.regression) {
        step.value.push_back(edges.value[i]);
        continue;
      }
      const std::vector<int64_t> drawn = draw_negatives(r, negatives, plan.epoch, split_code, i);
      step.negatives.insert(step.negatives.end(), drawn.begin(), drawn.end());
    }
    add_batch(plan, step, r.job.temporal());
  }
  return plan;
}

struct Scores {
  at::Tensor positive;  // [P]
  at::Tensor negative;  // [P, k]; undefined without negatives (rating regression)
};

// The encoder's output for the batch's nodes; `local` the row of each seed, in seed order.
at::Tensor encode(LinkReplica& r, MiniBatch&& sampled, bool train, uint64_t dropout_key, at::Tensor& local) {
  local = torch::tensor(sampled.input_local, torch::kLong);
  if (r.model->config().in_dim == 0 && sampled.feature_dim > 0) {
    // model.input: learnt: the encoder reads node ids, not the features the sampler gathered.
    r.sampler->give_back(std::move(sampled.x));
    sampled.x.clear();
    sampled.feature_dim = 0;
  }
  const GraphBatch batch = to_graph_batch(std::move(sampled), r.sampler->recycler(), r.hetero);
  return r.model->forward(batch, train, dropout_key);
}

// Encodes the batch's nodes and scores the step's positives and negatives.
Scores score(LinkReplica& r, MiniBatch&& sampled, const LinkStep& step, bool train, uint64_t dropout_key) {
  const int64_t p = step.size();
  const int64_t k = static_cast<int64_t>(step.negatives.size()) / std::max<int64_t>(p, 1);
  if (static_cast<int64_t>(sampled.input_local.size()) != p * (2 + k)) {
    throw Error("the sampler's batch has " + std::to_string(sampled.input_local.size()) + " seeds, the step " +
                std::to_string(p * (2 + k)));
  }
  at::Tensor local;
  const at::Tensor h = encode(r, std::move(sampled), train, dropout_key, local);
  const at::Tensor src = h.index_select(0, local.slice(0, 0, p));
  const at::Tensor dst = h.index_select(0, local.slice(0, p, 2 * p));
  const at::Tensor neg = h.index_select(0, local.slice(0, 2 * p)).view({p, k, h.size(1)});
  at::Tensor relation;
  if (r.relations.defined()) {
    relation = r.relations.index_select(0, torch::tensor(std::vector<int64_t>(step.relation.begin(), step.relation.end()),
                                                         torch::kLong));
  }
  const at::Tensor query = kg_query(r.decoder, KgSide::kTail, src, relation);
  if (k == 0) return {kg_score_pairs(r.decoder, query, dst), at::Tensor()};
  return {kg_score_pairs(r.decoder, query, dst), kg_score_groups(r.decoder, query.unsqueeze(1), neg).squeeze(1)};
}

// Strict negatives: false where a negative destination makes a training edge with the
// positive's source.
at::Tensor strict_mask(const LinkReplica& r, const LinkStep& step) {
  const int64_t p = step.size(), k = r.negatives.k;
  at::Tensor keep = torch::ones({p, k}, torch::kBool);
  auto a = keep.accessor<bool, 2>();
  for (int64_t i = 0; i < p; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      a[i][j] = r.triples->keeps_negative(true, step.src[i], step.relation[i], step.dst[i], step.negatives[i * k + j]);
    }
  }
  return keep;
}

std::array<double, 3> train_step(LinkReplica& r, uint64_t epoch, int64_t s) {
  ++r.weights_version;
  r.optimizer->zero_grad();
  BatchResult result;
  MiniBatch sampled = r.sampler->next();  // first: it tells the client where buffers go back
  const LinkStep& step = r.steps[static_cast<size_t>(s)];
  if (step.size() > 0 && r.regression) {
    // Squared error of each positive's predicted value, summed; "correct": within 0.5.
    const Scores scores = score(r, std::move(sampled), step, true, step_key(r.job.seed, epoch, s, r.index));
    const at::Tensor error = scores.positive + r.mean_value - torch::tensor(step.value, torch::kFloat);
    const at::Tensor loss = error.pow(2).sum();
    loss.backward();
    result.loss_sum = loss.item<double>();
    result.seeds = step.size();
    result.correct = (error.abs() <= 0.5).sum().item<int64_t>();
  } else if (step.size() > 0) {
    const Scores scores = score(r, std::move(sampled), step, true, step_key(r.job.seed, epoch, s, r.index));
    const at::Tensor keep = r.negatives.strict ? strict_mask(r, step) : at::Tensor();
    const at::Tensor loss = kg_loss_sum(r.loss, scores.positive, scores.negative, keep, r.job.link.margin);
    loss.backward();
    result.loss_sum = loss.item<double>();
    result.seeds = step.size();
    result.correct = (scores.positive.unsqueeze(1) > scores.negative).all(1).sum().item<int64_t>();
  } else {
    r.sampler->give_back(std::move(sampled.x));
  }
  return allreduce_and_step(*r.model, *r.optimizer, *r.allreduce, r.gradients, result, s);
}

// Writes the encoder's output for every entity this trainer encodes to its owner's table:
// the entities of its partition (of those, its share: original id mod shares), in batches
// cut from all entities in original-id order, batch b keyed alike however the graph is
// partitioned (with hop-independent draws a node's sampled tree depends on (seed, batch,
// node) alone), so an entity's encoding is the same on 1 or 2 partitions. Returns once
// every trainer has written (an allreduce of the counts, which must cover every entity).
void encode_entities(LinkReplica& r) {
  if (r.encoded_version == r.weights_version) return;
  Stopwatch watch;
  const int64_t n = r.triples->num_entities(), b = r.job.eval_batch_size;
  EpochPlan plan;
  plan.job_seed = r.job.seed;
  plan.epoch = kEvalEpoch - 3;  // valid and test are 1 and 2
  plan.offsets = {0};
  for (int64_t first = 0; first < n; first += b) {
    for (int64_t o = first; o < std::min(n, first + b); ++o) {
      const int64_t v = r.triples->global_of_original(o);
      if (r.book.owner(v) == r.part && o % r.shares == r.share) plan.order.push_back(v);
    }
    plan.offsets.push_back(static_cast<int64_t>(plan.order.size()));
  }
  if (r.job.temporal()) plan.times.assign(plan.order.size(), std::numeric_limits<int64_t>::max());
  const int64_t batches = r.sampler->start_link_plan(plan);
  torch::NoGradGuard no_grad;
  for (int64_t batch = 0; batch < batches; ++batch) {
    MiniBatch sampled = r.sampler->next();
    const Span<const int64_t> seeds = plan.batch(batch);
    if (seeds.empty()) {
      r.sampler->give_back(std::move(sampled.x));
      continue;
    }
    at::Tensor local;
    const at::Tensor h = encode(r, std::move(sampled), false, 0, local);
    if (local.size(0) != static_cast<int64_t>(seeds.size())) {
      throw Error("the sampler's batch has " + std::to_string(local.size(0)) + " seeds, the plan " +
                  std::to_string(seeds.size()));
    }
    // The table's rows in id order (ids sorted, as the table wants them).
    std::vector<int64_t> ids(seeds.begin(), seeds.end()), order(ids.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return ids[x] < ids[y]; });
    std::sort(ids.begin(), ids.end());
    const at::Tensor rows =
        h.index_select(0, local.index_select(0, torch::tensor(order, torch::kLong))).to(torch::kFloat).contiguous();
    r.encodings->write(Span<const int64_t>(ids), Span<const float>(rows.data_ptr<float>(), rows.numel()));
  }
  float written = static_cast<float>(plan.order.size());
  r.allreduce->sum(&written, 1);
  if (static_cast<int64_t>(written) != n) {
    throw Error("the trainers encoded " + std::to_string(static_cast<int64_t>(written)) + " of " + std::to_string(n) +
                " entities");
  }
  r.encoded_version = r.weights_version;
  spdlog::info("trainer {}: encoded {} of the {} entities in {:.1f} s", r.index, plan.order.size(), n, watch.seconds());
}

// eval.negatives: all: this trainer's share of the split's held-out edges (as
// plan_evaluation takes them), ranked both ways, filtered and raw, against every entity's
// encoding, read from its owner (training/triple_ranking.h, as encoder: none ranks).
std::vector<char> rank_against_all(LinkReplica& r, const std::string& split) {
  encode_entities(r);
  const TripleList& edges = r.held_out.at(split);
  TripleList mine;
  for (int64_t i = 0; i < edges.size(); ++i) {
    if (r.book.owner(edges.tail[i]) == r.part && i % r.shares == r.share) mine.add(edges, i);
  }
  TripleRanking how;
  how.decoder = r.decoder;
  how.relations = r.relations;
  how.num_relations = r.triples->num_relations();
  how.query_batch = r.job.eval_batch_size;
  how.block = r.job.link.eval_block;
  EntityRows rows;
  rows.dim = r.job.link.dim;
  rows.read = [&r](const std::vector<int64_t>& ids, float* out) { r.encodings->read(Span<const int64_t>(ids), out); };
  rows.read_range = [&r](int part, int64_t first, int64_t last, float* out) {
    r.encodings->read_range(part, first, last, out);
  };
  const std::vector<double> sums = rank_triples(*r.triples, mine, how, rows, r.book, {});
  std::vector<char> bytes(sums.size() * sizeof(double));
  std::memcpy(bytes.data(), sums.data(), bytes.size());
  return bytes;
}

std::vector<char> evaluate(LinkReplica& r, const std::string& split) {
  if (r.job.link.eval_negatives == 0) return rank_against_all(r, split);
  const EpochPlan plan = plan_evaluation(r, split);
  const int64_t batches = r.sampler->start_link_plan(plan);
  std::vector<float> rows;
  torch::NoGradGuard no_grad;
  for (int64_t b = 0; b < batches; ++b) {
    MiniBatch sampled = r.sampler->next();
    const LinkStep& step = r.steps[static_cast<size_t>(b)];
    if (step.size() == 0) {
      r.sampler->give_back(std::move(sampled.x));
      continue;
    }
    const Scores scores = score(r, std::move(sampled), step, false, 0);
    if (r.regression) {
      // training/rating_metrics.h's rows: prediction, value, the two baselines' predictions.
      const at::Tensor predicted = (scores.positive + r.mean_value).contiguous();
      for (int64_t i = 0; i < step.size(); ++i) {
        const auto mean = r.destination_mean.find(step.dst[static_cast<size_t>(i)]);
        rows.push_back(predicted.data_ptr<float>()[i]);
        rows.push_back(step.value[static_cast<size_t>(i)]);
        rows.push_back(static_cast<float>(r.mean_value));
        rows.push_back(static_cast<float>(mean != r.destination_mean.end() ? mean->second : r.mean_value));
      }
      continue;
    }
    const at::Tensor table = at::cat({scores.positive.unsqueeze(1), scores.negative}, 1).contiguous();
    rows.insert(rows.end(), table.data_ptr<float>(), table.data_ptr<float>() + table.numel());
  }
  std::vector<char> bytes(rows.size() * sizeof(float));
  if (!rows.empty()) std::memcpy(bytes.data(), rows.data(), bytes.size());
  return bytes;
}

link_trainer_actor::behavior_type link_trainer(link_trainer_actor::pointer self, std::shared_ptr<LinkReplica> r) {
  return {
      [self, r](train_setup_atom, caf::actor& sampler, caf::actor& member) -> caf::result<bool> {
        if (!sampler || !member) {
          return caf::make_error(caf::sec::invalid_argument, "set-up without a sampler or an allreduce member");
        }
        r->sampler = std::make_unique<SamplerClient>(self->system(), caf::actor_cast<sampler_actor>(std::move(sampler)),
                                                     kStepDeadline, "trainer " + std::to_string(r->index) + "'s sampler");
        r->allreduce = std::make_unique<runtime::Allreduce>(self->system(), std::move(member), kStepDeadline);
        return true;
      },
      [self, r](train_epoch_atom, uint64_t epoch, int64_t first_step, int64_t steps, int64_t checkpoint_every,
                caf::actor& driver) {
        try {
          if (!r->allreduce) throw Error("not set up");
          check_step_range(epoch, first_step, steps, checkpoint_every);
          const int64_t batches = r->sampler->start_link_plan(plan_training(*r, epoch, steps));
          if (batches != steps) {
            throw Error("the sampler planned " + std::to_string(batches) + " batches for " + std::to_string(steps) +
                        " steps");
          }
          // A resumed epoch: the batches before its checkpoint were trained on already.
          for (int64_t b = 0; b < first_step; ++b) r->sampler->next();
          for (int64_t step = first_step; step < steps; ++step) {
            const std::array<double, 3> sums = train_step(*r, epoch, step);
            report_step(driver, static_cast<int32_t>(r->index), epoch, step, steps, sums, *r->model, *r->optimizer,
                        checkpoint_every);
          }
          caf::anon_send(driver, train_done_atom::value, static_cast<int32_t>(r->index), epoch);
        } catch (const std::exception& e) {
          spdlog::error("trainer {}: epoch {} failed: {}", r->index, epoch, e.what());
          caf::anon_send(driver, train_failed_atom::value, static_cast<int32_t>(r->index), std::string(e.what()));
        }
      },
      [self, r](link_table_atom, std::vector<caf::actor>& shards, const std::string& run_key) -> caf::result<bool> {
        try {
          if (r->job.link.eval_negatives != 0) throw Error("an encoding table, but the job samples eval.negatives");
          r->encodings = std::make_unique<ShardedEmbedding>(self->system(), r->book, std::move(shards), run_key, r->index,
                                                            r->job.link.dim, kStepDeadline);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
      [r](link_eval_atom, const std::string& split) -> caf::result<std::vector<char>> {
        if (split != "valid" && split != "test") {
          return caf::make_error(caf::sec::invalid_argument, "no split '" + split + "' (valid or test)");
        }
        try {
          if (!r->sampler) throw Error("not set up");
          if (r->job.link.eval_negatives == 0 && !r->encodings) throw Error("ranking against all entities without a table");
          return evaluate(*r, split);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
      [r](get_state_atom) { return save_training_state(*r->model, *r->optimizer); },
      [r](set_state_atom, const std::vector<char>& bytes) -> caf::result<bool> {
        try {
          load_training_state(*r->model, *r->optimizer, bytes);
          ++r->weights_version;
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::invalid_argument, "trainer " + std::to_string(r->index) + ": " + e.what());
        }
      },
  };
}

}  // namespace

int32_t check_link_encoder_fits(const JobConfig& job, const PartitionMeta& meta, const std::string& dir) {
  const std::string& encoder = job.link.encoder;
  if (encoder == "rgcn" || encoder == "hetero_sage") {
    require_relational_graph(meta, encoder, "model.encoder", dir);
  } else if (meta.feature_dim <= 0) {
    throw UsageError("model.encoder: " + encoder + " reads node features, and " + dir +
                     " has none (use encoder: none for learnt embeddings, or rgcn or hetero_sage, whose input is "
                     "one-hot, on a heterogeneous graph)");
  }
  return find_target_edge(meta.edge_types, job.link.target_edge, dir);
}

void check_rating_target(const JobConfig& job, const PartitionMeta& meta, const std::string& dir, bool evaluate) {
  const std::string what = job.link.target_edge.empty()
                               ? std::string("edges")
                               : "[" + job.link.target_edge[0] + ", " + job.link.target_edge[1] + ", " +
                                     job.link.target_edge[2] + "] edges";
  if (meta.edge_feature_dim != 1) {
    throw UsageError("train.loss: mse regresses each edge's value (one edge feature, as a MovieLens rating), but the " +
                     what + " of " + dir + " have " + std::to_string(meta.edge_feature_dim) + " edge features");
  }
  if (evaluate && meta.has_edge_splits && !meta.has_edge_split_attr) {
    throw UsageError("train.loss: mse evaluates on the held-out edges' values, and the held-out " + what + " of " + dir +
                     " have none (partitioned before held-out edges kept their features: partition again)");
  }
}

void check_negatives_fit(const JobConfig& job, int64_t candidates, const std::string& what) {
  for (const auto& [field, k] : {std::make_pair("negatives.k", job.link.negatives),
                                 std::make_pair("eval.negatives", job.link.eval_negatives)}) {
    if (k > candidates) {
      throw UsageError(std::string(field) + ": " + std::to_string(k) + " is more than the " + std::to_string(candidates) +
                       " " + what);
    }
  }
}

int64_t link_training_edges(const JobConfig& job, const PartitionFolder& folder) {
  const int32_t target = find_target_edge(folder.meta().edge_types, job.link.target_edge, folder.dir());
  if (target < 0) return folder.meta().num_edges;
  int64_t edges = 0;
  for (int p = 0; p < folder.meta().num_parts; ++p) {
    const PartitionData part = folder.load_part(p);
    if (!part.edge_type) throw Error(folder.dir() + ": part " + std::to_string(p) + " has no edge types");
    for (int32_t t : part.edge_type->as<int32_t>()) edges += t == target;
  }
  return edges;
}

void register_link_trainer_type(runtime::ActorTypeRegistry& registry) {
  registry.add("link_trainer", [](caf::actor_system& system, const runtime::Settings& settings) {
    std::shared_ptr<LinkReplica> replica = make_replica(settings);
    set_torch_threads(replica->job.threads);
    tune_malloc_for_training();
    // Detached: an epoch blocks its thread in libtorch for a long time.
    return caf::actor_cast<caf::actor>(system.spawn<caf::detached>(link_trainer, std::move(replica)));
  });
}

}  // namespace partita
