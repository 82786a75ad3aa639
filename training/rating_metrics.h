// The evaluation of a rating regressor (a link job with train.loss: mse, MovieLens' ratings)
// from its predictions, next to two baselines measured on the same held-out edges, as the
// trainers return them (training/gnn_link_trainer.h): one row of 4 floats per held-out edge,
//   prediction, value (the true rating), the training mean value, the mean value of the
//   edge's destination in training (the per-movie mean; the training mean without one)
// and the metrics
//   rmse                      sqrt(mean squared error) of the predictions
//   mae                       mean absolute error of the predictions
//   rmse_global_mean          rmse of always predicting the training mean
//   rmse_destination_mean     rmse of predicting the destination's training mean
// A model worth its training beats both baselines' rmse.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/span.h"

namespace partita {

struct RatingMetrics {
  int64_t edges = 0;
  double rmse = 0, mae = 0, rmse_global_mean = 0, rmse_destination_mean = 0;
  // ("PREFIX.rmse", value), ... in a fixed order: the names metrics.jsonl uses.
  std::vector<std::pair<std::string, double>> named(const std::string& prefix) const;
};

constexpr int64_t kRatingRowWidth = 4;

// Throws Error naming the size when rows.size() is not a multiple of 4. No rows: every
// metric 0.
RatingMetrics rating_metrics(Span<const float> rows);

}  // namespace partita
