// A curve of bounded size: the points of a per-step series (loss, accuracy, rate) that a
// job of any length feeds, kept in at most `capacity` points.
//
// It downsamples rather than keeping the last N: a status page shows the whole run (how
// the loss fell from the start), and a job of a million steps needs a few hundred points
// on a chart a few hundred pixels wide. Points are buckets of `stride` consecutive samples
// (the bucket's last x, the mean of its y); when the kept points reach `capacity`,
// neighbouring pairs merge into one and the stride doubles. So every kept point covers
// the same number of samples, the memory is capacity points whatever the run's length,
// and adding a sample costs O(1) amortised (a merge of n points happens once every n
// samples). The bucket being filled is shown as a last point, so the newest sample is
// always on the curve.
//
// Not thread-safe: its owner (StatusBoard) locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace partita::dashboard {

struct Point {
  double x = 0;
  double y = 0;
};

class Series {
 public:
  // capacity: the most points kept; at least 2 (UsageError otherwise).
  explicit Series(size_t capacity);

  void add(double x, double y);
  // The kept points, then the bucket being filled (if it holds any sample), in x order as
  // added. At most capacity + 1 points.
  std::vector<Point> points() const;
  // Samples per kept point: 1 until the first merge, then 2, 4, ...
  int64_t stride() const { return stride_; }
  int64_t samples() const { return samples_; }  // added in all
  bool empty() const { return samples_ == 0; }
  Point last() const { return last_; }  // the newest sample; {0, 0} when empty

 private:
  size_t capacity_;
  std::vector<Point> kept_;  // size < capacity_ between calls
  int64_t stride_ = 1;
  // The bucket being filled: how many samples, their y sum, the newest x.
  int64_t pending_ = 0;
  double pending_sum_ = 0;
  double pending_x_ = 0;
  int64_t samples_ = 0;
  Point last_;
};

}  // namespace partita::dashboard
