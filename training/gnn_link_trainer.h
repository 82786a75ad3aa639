// The trainer of a link-prediction job with a GNN encoder (task: link_prediction, encoder:
// graphsage, gcn or gat): a node-classification replica (a GnnModel whose output is the
// link.dim-wide node representation, its sampler actor, its allreduce member, dense
// gradients allreduced: training/replica_step.h) trained on edges instead of nodes.
//
// A step (embeddings/kg_triples.h says which edges and negatives, as for knowledge-graph
// jobs): the step's positives are the s-th slice of `sampling.batch_size` edges of the
// epoch's permutation of every training edge; this trainer takes those whose destination
// its partition owns (and of those its share), each against the `negatives.k` corrupted
// destinations of its chunk. The seeds of the step's sampled batch are the positives' ends
// and the negatives; its hops leave out every positive edge of the step, both directions
// (GraphBolt's exclude_seed_edges), so the model cannot read a positive off its subgraph.
// The encoder's output rows of the ends are scored by the decoder (models/kg_decoder.h: dot
// product, or DistMult, ComplEx or TransE with a relation per edge type, a dense parameter
// registered on the encoder's module so that it is allreduced, stepped and checkpointed
// with the encoder's weights), the loss (models/kg_loss.h: bce by default) summed over
// positives.
//
// Heterogeneous graphs: the relational encoders (rgcn with its basis or block-diagonal
// decomposition, hetero_sage: models/relational.h) read every edge type as a relation, a
// one-hot input when the graph has no features (R-GCN's featureless entities). With
// model.target_edge (MovieLens' [user, rates, movie]) the positives are that type's
// training edges alone (the epoch's permutation of every edge, filtered: still
// partition-invariant), the held-out edges scored are that type's, and negatives are nodes
// of its destination type (draw_negatives below), so that a negative is a movie, never a
// user. The held-out edges left the graph in their reverse type too (partitioner/splits.h),
// and the step's positives are excluded from its subgraph in both directions of any type.
//
// Determinism: batches are keyed (job seed, epoch, step), the same for every trainer, and
// sampled with hop-independent draws (SamplerConfig::hop_independent), so a node's sampled
// tree does not depend on the other seeds of its batch; the step excludes all of its
// positives in every trainer. So with GraphSAGE or GAT (whose aggregation reads only a
// node's own sampled in-edges; GCN's normalisation reads the degrees of its neighbours in
// the batch), equal fanouts and no dropout (whose masks follow batch positions), a job
// gives the same step losses on 1 or 2 partitions and any number of trainers, up to the
// order of float sums, and exactly the same in one process and on daemons.
//
// Temporal sampling (sampling.temporal): each seed of a step (both ends and the
// negatives) is bounded by its positive edge's time, every seed its own tree (disjoint,
// so the 1-vs-2-partition equality above no longer holds: trees are keyed by position);
// `batches: time` orders the epoch's edges by time instead of permuting them.
//
// History kept (data.holdout.history: keep, a time split whose held-out edges stay in the
// graph: PartitionMeta::held_out_in_graph): the streaming protocol of TGN and TGB. Every
// seed is bounded strictly before its positive's time (training and evaluation alike), so a
// held-out edge at time t is scored with every event before t in reach, earlier held-out
// edges included, and none at t or after, itself and its reverse included (a link's edges
// share one time: partitioner/splits.h). Training positives are the graph's edges less
// those between the ends of a held-out edge (KgTriples::is_training_edge); all of them lie
// before the held-out edges, whose times they therefore never reach.
//
// Rating regression (train.loss: mse; MovieLens' ratings): no negatives; a positive's
// prediction is the decoder's score of its ends plus the mean value (edge feature) of the
// training positives, the loss its squared error against the edge's value. Evaluation
// returns each held-out edge's prediction and value beside two baselines' predictions (that
// training mean, and the destination's training mean: the per-movie mean), and the driver
// reports their RMSEs (training/rating_metrics.h).
//
// Biased matrix factorisation (model.encoder: mf, models/matrix_factorisation.cpp): the
// encoder is a learnt row [p | b] per node and the sampler draws no neighbours (one hop with
// fanout 0 for every edge type), so a step's batch is its seeds; an edge scores
// <p_u, q_i> + b_u + b_i (plus the training mean in a rating regression: Koren's biased MF),
// and train.regularizer: l2 adds regularization * (|p_u|^2 + b_u^2 + |q_i|^2 + b_i^2) per
// positive to the loss. Everything else (steps, allreduce, evaluation, metrics) is the GNN
// encoders', so an mf job is the baseline of a GNN job on the same split.
//
// model.node_bias: true adds a learnt bias per node to a GNN encoder's scores, b_src + b_dst
// (mf's biases without its factors; a parameter of the model's module, allreduced and
// checkpointed with it), with train.regularizer: l2 on the biases each positive reads.
//
// Evaluation: the held-out edges of the split (every partition's, in a canonical order by
// original ids), each against `eval.negatives` sampled destinations keyed by its position;
// each trainer scores those whose destination its partition owns, in batches of
// `train.eval_batch_size` edges, and returns the scores; the driver computes AUC, MRR and
// Hits@k over all of them (training/link_metrics.h).
//
// eval.negatives: all (filtered ranking against every entity, as encoder: none ranks): once
// per evaluation (the weights changed since the last), each trainer encodes the entities of
// its partition (its share) and writes their rows to its partition's embedding shard (the
// table encoder: none learns, here only written: embeddings/embedding_shard.h), so the
// encodings stay sharded by owner; after an allreduce (every trainer wrote) each ranks its
// held-out edges both ways, reading the candidates from their owners a block at a time
// (training/triple_ranking.h). Encodings use the job's sampling fanouts with deterministic
// draws (the evaluation's own key, the batch cut from all entities in original-id order), so
// they do not depend on the partitioning: sampled, not full neighbourhoods, because the
// sampler serves the fanouts the model was trained with, and a full 2-hop neighbourhood of
// a knowledge graph's hubs is most of the graph per batch.
#pragma once

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <string>
#include <vector>

#include "actors/protocol.h"
#include "partitioner/partition_format.h"
#include "runtime/host.h"

namespace partita {

using link_eval_atom = caf::atom_constant<caf::atom("t_leval")>;
using link_table_atom = caf::atom_constant<caf::atom("t_ltable")>;

// trainer_actor's protocol (actors/protocol.h: set-up with its sampler and allreduce member,
// epochs reported as train_step with seeds = positives and correct = positives scored
// above all their negatives, state), with evaluation on edges instead of nodes:
//   (link eval, "valid" | "test") -> its held-out edges' scores: rows of 1 + eval.negatives
//       float32 (the edge's score, then its negatives'), or with train.loss: mse the rows of
//       training/rating_metrics.h, as bytes in native order (the driver runs the same build);
//       with eval.negatives: all, the kRankingSums sums of its share (training/link_metrics.h)
//   (link table, embedding shard actors by part, run key) -> true | error: eval.negatives:
//       all only, after set-up: the tables the entities' encodings are written to
using gnn_link_trainer_actor = caf::typed_actor<
    caf::replies_to<train_setup_atom, caf::actor, caf::actor>::with<bool>,
    caf::replies_to<link_table_atom, std::vector<caf::actor>, std::string>::with<bool>,
    caf::reacts_to<train_epoch_atom, uint64_t, int64_t, int64_t, int64_t, caf::actor>,
    caf::replies_to<link_eval_atom, std::string>::with<std::vector<char>>,
    caf::replies_to<get_state_atom>::with<std::vector<char>>,
    caf::replies_to<set_state_atom, std::vector<char>>::with<bool>>;

struct JobConfig;

// The relation a link job with a GNN encoder trains on (model.target_edge; -1: every edge),
// once its encoder is known to fit the graph in `meta` (the folder `dir`): a relational
// encoder (rgcn, hetero_sage) needs node and edge types, the others node features, and a
// target edge must be one of the graph's types. Throws UsageError naming model.encoder or
// model.target_edge otherwise. The driver checks before it spawns, each trainer again.
int32_t check_link_encoder_fits(const JobConfig& job, const PartitionMeta& meta, const std::string& dir);

// Throws UsageError naming the folder `dir` when it keeps its held-out edges in the graph
// as history (PartitionMeta::held_out_in_graph) and `job` is not a GNN link job with
// sampling.temporal: {time: edge}, the one that hides them from the seeds before them.
void check_held_out_history(const JobConfig& job, const PartitionMeta& meta, const std::string& dir);

// Rating regression (train.loss: mse): throws UsageError naming train.loss unless the
// edges of `meta` have one feature (the value regressed, a MovieLens rating) and, when
// `evaluate`, the held-out edges kept theirs.
void check_rating_target(const JobConfig& job, const PartitionMeta& meta, const std::string& dir, bool evaluate);

// Throws UsageError naming negatives.k or eval.negatives when either exceeds the
// `candidates` its negatives are drawn from (`what`, e.g. "'movie' nodes of
// model.target_edge").
void check_negatives_fit(const JobConfig& job, int64_t candidates, const std::string& what);

// The positives of one epoch: the training edges of the target type, or every edge.
int64_t link_training_edges(const JobConfig& job, const PartitionFolder& folder);

// Registers "gnn_link_trainer" (settings: job, the job as YAML; trainer, its index).
void register_gnn_link_trainer_type(runtime::ActorTypeRegistry& registry);

}  // namespace partita
