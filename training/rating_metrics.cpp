#include "training/rating_metrics.h"

#include <cmath>

#include "base/error.h"

namespace partita {

std::vector<std::pair<std::string, double>> RatingMetrics::named(const std::string& prefix) const {
  return {{prefix + ".rmse", rmse},
          {prefix + ".mae", mae},
          {prefix + ".rmse_global_mean", rmse_global_mean},
          {prefix + ".rmse_destination_mean", rmse_destination_mean},
          {prefix + ".edges", static_cast<double>(edges)}};
}

RatingMetrics rating_metrics(Span<const float> rows) {
  if (rows.size() % kRatingRowWidth != 0) {
    throw Error("rating metrics: " + std::to_string(rows.size()) + " floats are not rows of " +
                std::to_string(kRatingRowWidth));
  }
  RatingMetrics m;
  m.edges = static_cast<int64_t>(rows.size() / kRatingRowWidth);
  if (m.edges == 0) return m;
  double squared = 0, absolute = 0, global = 0, destination = 0;
  for (int64_t i = 0; i < m.edges; ++i) {
    const float* row = rows.data() + i * kRatingRowWidth;
    const double value = row[1];
    squared += (row[0] - value) * (row[0] - value);
    absolute += std::abs(row[0] - value);
    global += (row[2] - value) * (row[2] - value);
    destination += (row[3] - value) * (row[3] - value);
  }
  const double n = static_cast<double>(m.edges);
  m.rmse = std::sqrt(squared / n);
  m.mae = absolute / n;
  m.rmse_global_mean = std::sqrt(global / n);
  m.rmse_destination_mean = std::sqrt(destination / n);
  return m;
}

}  // namespace partita
