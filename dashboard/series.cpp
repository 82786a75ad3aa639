#include "dashboard/series.h"

#include <string>

#include "base/error.h"

namespace partita::dashboard {

Series::Series(size_t capacity) : capacity_(capacity) {
  if (capacity < 2) throw UsageError("a series keeps at least 2 points, not " + std::to_string(capacity));
  kept_.reserve(capacity);
}

void Series::add(double x, double y) {
  ++samples_;
  last_ = {x, y};
  ++pending_;
  pending_sum_ += y;
  pending_x_ = x;
  if (pending_ < stride_) return;
  kept_.push_back({pending_x_, pending_sum_ / static_cast<double>(pending_)});
  pending_ = 0;
  pending_sum_ = 0;
  if (kept_.size() < capacity_) return;
  // Full: merge neighbouring pairs (each covers `stride_` samples, so the mean of the two
  // means is the mean of the merged bucket). An odd last point waits as the pending bucket.
  const size_t pairs = kept_.size() / 2;
  for (size_t i = 0; i < pairs; ++i) {
    kept_[i] = {kept_[2 * i + 1].x, (kept_[2 * i].y + kept_[2 * i + 1].y) / 2};
  }
  if (kept_.size() % 2 == 1) {
    pending_ = stride_;
    pending_sum_ = kept_.back().y * static_cast<double>(stride_);
    pending_x_ = kept_.back().x;
  }
  kept_.resize(pairs);
  stride_ *= 2;
}

std::vector<Point> Series::points() const {
  std::vector<Point> out = kept_;
  if (pending_ > 0) out.push_back({pending_x_, pending_sum_ / static_cast<double>(pending_)});
  return out;
}

}  // namespace partita::dashboard
