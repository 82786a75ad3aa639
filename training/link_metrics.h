// The evaluation of a binary link predictor from its scores: each held-out edge's score
// next to the scores of its K sampled negatives (corrupted destinations), as the trainers
// of a GNN link-prediction job return them (training/gnn_link_trainer.h).
//   auc       the area under the ROC curve over every (positive, negative) pair of the
//             split, ties counted half (sklearn's roc_auc_score; what GAE reports)
//   mrr       the mean of 1 / rank of each positive among itself and its own K negatives,
//             a tied negative counting half a place (the mean of the tied ranks)
//   hits@k    the share of positives whose rank is at most k (1, 3, 10)
//   loss      binary cross-entropy per positive: -log sigmoid(s+) - mean_j log sigmoid(-s-_j)
// Torch-free, so that the driver computes the metrics of every trainer's scores at once:
// AUC is not a sum of per-trainer parts. Ranking against every entity instead sums each
// trainer's ranks (kRankingSums below).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/span.h"

namespace partita {

struct LinkMetrics {
  int64_t positives = 0;
  double auc = 0, mrr = 0, hits1 = 0, hits3 = 0, hits10 = 0, loss = 0;
  // ("PREFIX.auc", value), ... in a fixed order: the names metrics.jsonl uses.
  std::vector<std::pair<std::string, double>> named(const std::string& prefix) const;
};

// `rows`: one row of 1 + k floats per positive, its score then its negatives' (k >= 1).
// Throws Error naming the sizes when rows.size() is not a multiple of 1 + k. No
// positives: every metric 0.
LinkMetrics link_metrics(Span<const float> rows, int64_t k);

// Ranking against every entity (eval.negatives: all; training/triple_ranking.h): each
// trainer returns the sums of its share of the split's queries, kRankingSums doubles in
// this order: raw count, reciprocal rank, hits@1, @3, @10, then the same filtered
// (models/kg_ranking.h RankSums); carried as their bytes (native order: the peers run the
// same build), since a std::vector<char> is a type CAF ships without registration.
constexpr size_t kRankingSums = 10;

// Adds one trainer's reply to `sums` (kRankingSums values). Throws Error naming the size
// when `bytes` is not kRankingSums doubles.
void add_ranking_sums(Span<const char> bytes, std::vector<double>& sums);

// The summed sums as metrics.jsonl names them: SPLIT.mrr, hits@1, hits@3, hits@10
// (filtered), raw_mrr, raw_hits@1/3/10, queries, then SPLIT.seconds = `seconds`.
std::vector<std::pair<std::string, double>> ranking_metrics(const std::vector<double>& sums, const std::string& split,
                                                            double seconds);

}  // namespace partita
