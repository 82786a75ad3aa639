#include "partitioner/generator_util.h"

#include <cmath>

#include "base/error.h"
#include "base/progress.h"

namespace partita::gen {

namespace {

// Values per feature chunk: big enough to amortise a thread's start, small enough to balance.
constexpr int64_t kFeatureChunkValues = int64_t{1} << 16;

// Box-Muller keeping both outputs of each pair: the log, sqrt and trig dominate feature
// generation, and Rng::normal() spends them on one value.
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : rng_(seed) {}

  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 1.0 - rng_.uniform();  // (0, 1]: log stays finite
    double u2 = rng_.uniform();
    double radius = std::sqrt(-2.0 * std::log(u1));
    double angle = 6.283185307179586 * u2;
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  Rng rng_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// Fills x[rows, dim] chunk by chunk; row_fn(row, value_out, normals) writes one row.
template <typename RowFn>
std::vector<float> fill_rows(int64_t rows, int64_t dim, uint64_t seed, int threads, RowFn row_fn) {
  std::vector<float> x(static_cast<size_t>(rows * dim));
  if (dim == 0) return x;
  Progress progress("features", rows, "rows");
  const int64_t rows_per_chunk = std::max<int64_t>(1, kFeatureChunkValues / dim);
  for_each_chunk(rows, rows_per_chunk, threads, [&](int64_t chunk, int64_t begin, int64_t end) {
    NormalStream normals(mix64(seed, kFeatureStream, static_cast<uint64_t>(chunk)));
    for (int64_t row = begin; row < end; ++row) row_fn(row, x.data() + row * dim, normals);
    progress.advance(end - begin);
  });
  progress.done();
  return x;
}

}  // namespace

void require(bool ok, const char* flag, const std::string& message) {
  if (!ok) throw UsageError(std::string(flag) + ": " + message);
}

void check_threads(int threads) {
  require(threads >= 0, "--threads", "must not be negative (0 means all cores)");
}

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  Rng rng(seed);
  shuffle(p, rng);
  return p;
}

BalancedClasses::BalancedClasses(int64_t num_nodes, int64_t num_classes, uint64_t seed)
    : num_classes_(num_classes), order_(random_permutation(num_nodes, seed)) {
  rank_.resize(order_.size());
  for (int64_t i = 0; i < num_nodes; ++i) rank_[order_[i]] = i;
}

int64_t BalancedClasses::classmate(int64_t node, Rng& rng) const {
  const int64_t c = class_of(node);
  const int64_t position = rank_[node] / num_classes_;
  // Draw among the class_size - 1 others and step over `node`: no redraw loop.
  int64_t k = static_cast<int64_t>(rng.below(static_cast<uint64_t>(class_size(c) - 1)));
  if (k >= position) ++k;
  return order_[c + k * num_classes_];
}

int64_t BalancedClasses::outsider(int64_t c, Rng& rng) const {
  // Ranks come in blocks of C consecutive ranks, one per class; the r-th rank outside class
  // c is in block r / (C - 1), at offset r % (C - 1), shifted past c. A short last block
  // works too: its valid offsets are exactly the ones the count below allows.
  const int64_t others = num_nodes() - class_size(c);
  const int64_t r = static_cast<int64_t>(rng.below(static_cast<uint64_t>(others)));
  const int64_t block = r / (num_classes_ - 1);
  int64_t offset = r % (num_classes_ - 1);
  if (offset >= c) ++offset;
  return order_[block * num_classes_ + offset];
}

std::vector<int64_t> BalancedClasses::labels() const {
  std::vector<int64_t> y(order_.size());
  for (int64_t node = 0; node < num_nodes(); ++node) y[node] = class_of(node);
  return y;
}

std::vector<float> normal_features(int64_t rows, int64_t dim, uint64_t seed, int threads) {
  return fill_rows(rows, dim, seed, threads, [dim](int64_t, float* out, NormalStream& normals) {
    for (int64_t j = 0; j < dim; ++j) out[j] = static_cast<float>(normals.next());
  });
}

std::vector<float> class_features(const std::vector<int64_t>& labels, int64_t num_classes,
                                  int64_t dim, double noise, uint64_t seed, int threads) {
  std::vector<double> means(static_cast<size_t>(num_classes * dim));
  NormalStream mean_normals(mix64(seed, kClassMeanStream));
  for (int64_t c = 0; c < num_classes; ++c) {
    double* mean = means.data() + c * dim;
    double norm2 = 0;
    for (int64_t j = 0; j < dim; ++j) {
      mean[j] = mean_normals.next();
      norm2 += mean[j] * mean[j];
    }
    const double scale = norm2 > 0 ? 1.0 / std::sqrt(norm2) : 0.0;
    for (int64_t j = 0; j < dim; ++j) mean[j] *= scale;
  }

  const double sigma = noise / 2;
  const int64_t rows = static_cast<int64_t>(labels.size());
  return fill_rows(rows, dim, seed, threads, [&](int64_t row, float* out, NormalStream& normals) {
    if (labels[row] < 0) return;  // unlabelled rows (other node types) stay zero
    const double* mean = means.data() + labels[row] * dim;
    for (int64_t j = 0; j < dim; ++j) out[j] = static_cast<float>(mean[j] + sigma * normals.next());
  });
}

}  // namespace partita::gen
