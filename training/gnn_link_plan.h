// The plans of a link-prediction trainer with a GNN encoder (training/gnn_link_trainer.h): which
// positive edges and negatives each step scores, and the seeds, time bounds and left-out
// edges its sampler builds their subgraphs from. Torch-free, apart from the trainer, so that
// tests can run a job's own plans through the sampler actors and check every batch (what a
// seed may see is decided here: tests/training/history_split_test.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "embeddings/kg_triples.h"
#include "graph/epoch_plan.h"
#include "graph/partition_book.h"
#include "training/job_config.h"

namespace partita {

// One batch of a trainer: its positive edges (global ids, with their relation) and each
// positive's negative destinations.
struct LinkStep {
  std::vector<int64_t> src, dst;
  std::vector<int32_t> relation;
  std::vector<int64_t> time;       // temporal sampling: each positive's seeds' time bound
  std::vector<float> value;        // rating regression: each positive's value
  std::vector<int64_t> negatives;  // [positives, k] row-major
  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

// What a trainer plans from: its job, its place among the trainers, the folder's triples.
struct LinkPlanner {
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
  // Every node's type by global id (relational encoders, target edges); empty otherwise.
  std::vector<int32_t> node_type;
  // model.target_edge: its relation (-1: every edge) and its training edges by original id;
  // the nodes its negatives are drawn from, global ids in original-id order (empty: every
  // node, as KgTriples draws them).
  int32_t target = -1;
  std::vector<int64_t> target_edges;
  std::vector<int64_t> candidates;
  // The training negatives' candidates: `candidates`, or (negatives.candidates: trained)
  // those a target training edge ends in. Evaluation draws from `candidates` either way.
  std::vector<int64_t> training_candidates;
  // train.loss: mse (rating regression): no negatives; an edge's prediction is the decoder's
  // score plus the mean value of the training positives. Evaluation returns it beside two
  // baselines: that mean, and the mean of the destination's training positives (the
  // per-movie mean; the global mean for a destination with none).
  bool regression = false;
  double mean_value = 0;
  std::unordered_map<int64_t, double> destination_mean;
  // The folder keeps its held-out edges in the graph as history (PartitionMeta::
  // held_out_in_graph): every seed is bounded strictly before its positive's time.
  bool history = false;
  std::vector<LinkStep> steps;  // of the plan made last
};

// Fills `p` for trainer `index` of `job` from the job's partition folder. Throws UsageError
// as the trainer's set-up checks do (training/gnn_link_trainer.h: encoder, target edge,
// negatives, rating target, held-out history).
void open_link_plan(LinkPlanner& p, JobConfig job, int index);

// Evaluation batches and negatives are keyed by this epoch less a code (valid 1, test 2,
// encoding every entity for ranking 3), the same every time: a metric moves only when the
// weights do.
constexpr uint64_t kLinkEvalEpoch = ~uint64_t{0};

// A seed's time bound for a positive at `time`: the time itself (temporal sampling keeps
// edges at or before it), or with history kept the time before it, so that the positive's
// own edges (one time per link: partitioner/splits.h) and every later or simultaneous edge,
// held-out ones included, stay out of its neighbourhood. (A split that keeps history has no
// edge at the earliest int64 time.)
int64_t seed_time_bound(const LinkPlanner& p, int64_t time);

// The epoch's `steps` batches (embeddings/kg_triples.h: which positives and negatives), each
// leaving out all of the step's positives, whichever trainer holds them; p.steps gets this
// trainer's share.
EpochPlan plan_training(LinkPlanner& p, uint64_t epoch, int64_t steps);

// The split's ("valid", "test") held-out edges this trainer scores, p.steps its batches.
// Each edge's eval.negatives destinations are drawn among p.candidates (every node when
// empty) and are non-edges: none is linked to its source by an edge of the positive's
// relation, either way, in any split (filtered, as PyG's negative_sampling draws evaluation
// negatives), unless the source is linked to nearly every candidate (100 redraws failed;
// logged).
EpochPlan plan_evaluation(LinkPlanner& p, const std::string& split);

}  // namespace partita
