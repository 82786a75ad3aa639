#include "training/gnn_link_trainer.h"

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
#include "embeddings/kg_triples.h"
#include "embeddings/sharded_embedding.h"
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
#include "training/gnn_link_plan.h"
#include "training/job_config.h"
#include "training/relational_encoder.h"
#include "training/replica_step.h"
#include "training/triple_ranking.h"

namespace partita {

namespace {

using std::chrono::milliseconds;

// The slowest replica's step (sampling and compute) must end within this, and so must
// every batch the sampler hands over.
constexpr milliseconds kStepDeadline{120000};

// Everything one replica owns: its plans (training/gnn_link_plan.h) and its model. Lives on the
// trainer's own thread.
struct LinkReplica : LinkPlanner {
  KgLoss loss = KgLoss::kBce;
  KgDecoder decoder = KgDecoder::kDot;
  std::unique_ptr<SamplerClient> sampler;  // after set-up
  std::unique_ptr<runtime::Allreduce> allreduce;
  std::shared_ptr<GnnModel> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::vector<float> gradients;  // the step's flat buffer, reused
  // Relational encoders: the batches' layout.
  HeteroLayout hetero;
  // The decoder's relations [R, dim] (DistMult, ComplEx, TransE; undefined for dot): a
  // parameter of the model's module, so allreduced, stepped and checkpointed with it.
  at::Tensor relations;
  // model.node_bias: a learnt bias per node [num_nodes] (0 at first), also a parameter of the
  // model's module; undefined without.
  at::Tensor node_bias;
  // eval.negatives: all: the encoder's output per entity, sharded by owner (set up by the
  // driver), and which weights it holds: the count of weight changes (steps, restores) when
  // it was last written, so that valid and test rank against one encoding.
  std::unique_ptr<ShardedEmbedding> encodings;
  uint64_t weights_version = 0;
  uint64_t encoded_version = ~uint64_t{0};
};

std::unique_ptr<LinkReplica> make_replica(const runtime::Settings& settings) {
  auto r = std::make_unique<LinkReplica>();
  JobConfig job = *job_from_setting(runtime::required_setting(settings, "job"), "the job sent by the driver");
  const int index = static_cast<int>(runtime::integer_setting(settings, "trainer", 0, job.num_trainers() - 1));
  open_link_plan(*r, std::move(job), index);
  const PartitionFolder folder(r->job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  const bool relational = r->job.model.relational();
  if (!r->regression) {
    r->loss = parse_kg_loss(name_of(r->job.link.loss), "train.loss");
  }
  r->decoder = parse_kg_decoder(name_of(r->job.link.decoder), r->job.link.transe_norm, "model.decoder");
  ModelConfig config;
  config.kind = name_of(r->job.model.kind);
  config.name = r->job.model.name;
  config.in_dim = r->job.link.learnt_input() ? 0 : meta.feature_dim;  // 0: one-hot, a learnt row per node
  config.hidden_dim = r->job.model.hidden;
  config.out_dim = r->job.link.dim;
  config.num_layers = r->job.model.layers;
  config.heads = r->job.model.model_heads();
  config.dropout = r->job.model.dropout;
  config.input_dropout = r->job.model.input_dropout;
  config.trim = r->job.model.trim;
  if (r->job.model.matrix_factorisation()) {
    config.in_dim = 0;
    config.num_nodes = meta.num_nodes;
    config.init_std = r->job.link.init_std;
  }
  if (relational) {
    set_relations(config, meta);
    config.type_inputs = find_type_inputs(meta.node_types, r->job.link.type_inputs, meta.feature_dim, folder.dir());
    for (const std::string& input : config.type_inputs) {
      if (ModelConfig::input_reads_features(input)) config.in_dim = meta.feature_dim;
    }
    config.decomposition = r->job.model.decomposition;
    config.num_bases = r->job.model.bases;
    config.num_blocks = r->job.model.blocks;
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
  if (r->job.link.node_bias) {
    r->node_bias = r->model->register_parameter("decoder_node_bias", at::zeros({meta.num_nodes}));
  }
  r->optimizer = make_optimizer(name_of(r->job.optimizer), r->model->parameters(), r->job.learning_rate, r->job.weight_decay,
                                r->job.momentum);
  return r;
}

struct Scores {
  at::Tensor positive;  // [P]
  at::Tensor negative;  // [P, k]; undefined without negatives (rating regression)
  // mf with train.regularizer: l2: per positive, the squared norms of its ends' rows (factors
  // and bias); undefined otherwise.
  at::Tensor penalty;  // [P]
};

// mf's score of rows [factors | bias] (the encoder's out_dim + 1 columns): the factors' dot
// product plus both biases. `a` [..., d + 1] against `b` of the same shape.
at::Tensor biased_dot(const at::Tensor& a, const at::Tensor& b) {
  const int64_t d = a.size(-1) - 1;
  return (a.narrow(-1, 0, d) * b.narrow(-1, 0, d)).sum(-1) + a.select(-1, d) + b.select(-1, d);
}

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
  if (r.model->config().is_matrix_factorisation()) {
    Scores scores{biased_dot(src, dst), k == 0 ? at::Tensor() : biased_dot(src.unsqueeze(1), neg), at::Tensor()};
    if (r.job.link.regularizer == Regularizer::kL2) scores.penalty = src.pow(2).sum(1) + dst.pow(2).sum(1);
    return scores;
  }
  at::Tensor relation;
  if (r.relations.defined()) {
    relation = r.relations.index_select(0, torch::tensor(std::vector<int64_t>(step.relation.begin(), step.relation.end()),
                                                         torch::kLong));
  }
  const at::Tensor query = kg_query(r.decoder, KgSide::kTail, src, relation);
  Scores scores{kg_score_pairs(r.decoder, query, dst),
                k == 0 ? at::Tensor() : kg_score_groups(r.decoder, query.unsqueeze(1), neg).squeeze(1), at::Tensor()};
  if (r.node_bias.defined()) {
    const at::Tensor src_bias = r.node_bias.index_select(0, torch::tensor(step.src, torch::kLong));
    const at::Tensor dst_bias = r.node_bias.index_select(0, torch::tensor(step.dst, torch::kLong));
    scores.positive = scores.positive + src_bias + dst_bias;
    if (k > 0) {
      const at::Tensor neg_bias =
          r.node_bias.index_select(0, torch::tensor(step.negatives, torch::kLong)).view({p, k});
      scores.negative = scores.negative + src_bias.unsqueeze(1) + neg_bias;
    }
    if (r.job.link.regularizer == Regularizer::kL2) scores.penalty = src_bias.pow(2) + dst_bias.pow(2);
  }
  return scores;
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
    at::Tensor loss = error.pow(2).sum();
    if (scores.penalty.defined()) loss = loss + r.job.link.regularization * scores.penalty.sum();
    loss.backward();
    result.loss_sum = loss.item<double>();
    result.seeds = step.size();
    result.correct = (error.abs() <= 0.5).sum().item<int64_t>();
  } else if (step.size() > 0) {
    const Scores scores = score(r, std::move(sampled), step, true, step_key(r.job.seed, epoch, s, r.index));
    const at::Tensor keep = r.negatives.strict ? strict_mask(r, step) : at::Tensor();
    at::Tensor loss = kg_loss_sum(r.loss, scores.positive, scores.negative, keep, r.job.link.margin);
    if (scores.penalty.defined()) loss = loss + r.job.link.regularization * scores.penalty.sum();
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
  plan.epoch = kLinkEvalEpoch - 3;  // valid and test are 1 and 2
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

gnn_link_trainer_actor::behavior_type gnn_link_trainer(gnn_link_trainer_actor::pointer self, std::shared_ptr<LinkReplica> r) {
  return {
      [self, r](train_setup_atom, caf::actor& sampler, caf::actor& member) {
        return set_up_replica(self->system(), r->index, kStepDeadline, sampler, member, r->sampler, r->allreduce);
      },
      [r](train_epoch_atom, uint64_t epoch, int64_t first_step, int64_t steps, int64_t checkpoint_every,
          const caf::actor& driver) {
        run_epoch(driver, static_cast<int32_t>(r->index), epoch, [&] {
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
        });
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
      [r](set_state_atom, const std::vector<char>& bytes) {
        caf::result<bool> loaded = load_replica_state(*r->model, *r->optimizer, bytes, r->index);
        if (loaded.flag == caf::rt_value) ++r->weights_version;  // the encoding table is stale
        return loaded;
      },
  };
}

}  // namespace

void check_held_out_history(const JobConfig& job, const PartitionMeta& meta, const std::string& dir) {
  if (!meta.held_out_in_graph) return;
  if (!job.link_gnn() || job.temporal_time != "edge") {
    throw UsageError(dir + " keeps its held-out edges in the graph as history (data.holdout.history: keep): a link "
                           "job reads it only with a GNN encoder and sampling.temporal: {time: edge}, which bounds "
                           "every seed strictly before its edge's time; without it the held-out edges would be "
                           "read off the graph");
  }
}

int32_t check_link_encoder_fits(const JobConfig& job, const PartitionMeta& meta, const std::string& dir) {
  const std::string encoder = job.model.description();
  if (job.model.matrix_factorisation()) {
    // A learnt row per node: any graph (fanout_setting names one without edge types).
  } else if (job.model.relational()) {
    require_relational_graph(meta, encoder, "model.encoder", dir);
    find_type_inputs(meta.node_types, job.link.type_inputs, meta.feature_dim, dir);
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
  if (folder.meta().held_out_in_graph) {
    // Which edges are held out is KgTriples' to say.
    const KgTriples triples(folder);
    int64_t edges = 0;
    for (int64_t e = 0; e < triples.train().size(); ++e) {
      edges += triples.is_training_edge(e) && (target < 0 || triples.train().relation[e] == target);
    }
    return edges;
  }
  if (target < 0) return folder.meta().num_edges;
  int64_t edges = 0;
  for (int p = 0; p < folder.meta().num_parts; ++p) {
    const PartitionData part = folder.load_part(p);
    if (!part.edge_type) throw Error(folder.dir() + ": part " + std::to_string(p) + " has no edge types");
    for (int32_t t : part.edge_type->as<int32_t>()) edges += t == target;
  }
  return edges;
}

void register_gnn_link_trainer_type(runtime::ActorTypeRegistry& registry) {
  registry.add("gnn_link_trainer", [](caf::actor_system& system, const runtime::Settings& settings) {
    std::shared_ptr<LinkReplica> replica = make_replica(settings);
    set_torch_threads(replica->job.threads);
    tune_malloc_for_training();
    // Detached: an epoch blocks its thread in libtorch for a long time.
    return caf::actor_cast<caf::actor>(system.spawn<caf::detached>(gnn_link_trainer, std::move(replica)));
  });
}

}  // namespace partita
