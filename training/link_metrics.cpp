#include "training/link_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"

namespace partita {

namespace {

// -log sigmoid(x), stable for large |x|.
double softplus_neg(double x) { return x > 0 ? std::log1p(std::exp(-x)) : -x + std::log1p(std::exp(x)); }

}  // namespace

std::vector<std::pair<std::string, double>> LinkMetrics::named(const std::string& prefix) const {
  return {{prefix + ".auc", auc},         {prefix + ".mrr", mrr},         {prefix + ".hits@1", hits1},
          {prefix + ".hits@3", hits3},    {prefix + ".hits@10", hits10},  {prefix + ".loss", loss},
          {prefix + ".edges", static_cast<double>(positives)}};
}

LinkMetrics link_metrics(Span<const float> rows, int64_t k) {
  if (k < 1) throw Error("link metrics: " + std::to_string(k) + " negatives per positive");
  const size_t width = static_cast<size_t>(k) + 1;
  if (rows.size() % width != 0) {
    throw Error("link metrics: " + std::to_string(rows.size()) + " scores are not rows of 1 + " + std::to_string(k));
  }
  LinkMetrics m;
  const size_t n = rows.size() / width;
  m.positives = static_cast<int64_t>(n);
  if (n == 0) return m;
  // AUC by ranks (Mann-Whitney): sort every score once, ties share their mean rank.
  std::vector<std::pair<float, bool>> all;  // (score, is positive)
  all.reserve(rows.size());
  for (size_t i = 0; i < n; ++i) {
    const float* row = rows.data() + i * width;
    all.push_back({row[0], true});
    for (size_t j = 1; j < width; ++j) all.push_back({row[j], false});
    int64_t greater = 0, tied = 0;
    for (size_t j = 1; j < width; ++j) {
      greater += row[j] > row[0];
      tied += row[j] == row[0];
    }
    const double rank = 1.0 + static_cast<double>(greater) + 0.5 * static_cast<double>(tied);
    m.mrr += 1.0 / rank;
    m.hits1 += rank <= 1;
    m.hits3 += rank <= 3;
    m.hits10 += rank <= 10;
    double negative_loss = 0;
    for (size_t j = 1; j < width; ++j) negative_loss += softplus_neg(-static_cast<double>(row[j]));
    m.loss += softplus_neg(row[0]) + negative_loss / static_cast<double>(k);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double positive_rank_sum = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    int64_t positives = 0;
    while (j < all.size() && all[j].first == all[i].first) positives += all[j++].second;
    const double mean_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
    positive_rank_sum += mean_rank * static_cast<double>(positives);
    i = j;
  }
  const double p = static_cast<double>(n), q = static_cast<double>(n * static_cast<size_t>(k));
  m.auc = (positive_rank_sum - p * (p + 1) / 2) / (p * q);
  m.mrr /= p;
  m.hits1 /= p;
  m.hits3 /= p;
  m.hits10 /= p;
  m.loss /= p;
  return m;
}

void add_ranking_sums(Span<const char> bytes, std::vector<double>& sums) {
  if (bytes.size() != kRankingSums * sizeof(double)) {
    throw Error("a trainer returned " + std::to_string(bytes.size()) + " bytes of ranking sums, expected " +
                std::to_string(kRankingSums * sizeof(double)));
  }
  sums.resize(kRankingSums, 0.0);
  double s[kRankingSums];
  std::memcpy(s, bytes.data(), bytes.size());
  for (size_t i = 0; i < kRankingSums; ++i) sums[i] += s[i];
}

std::vector<std::pair<std::string, double>> ranking_metrics(const std::vector<double>& sums, const std::string& split,
                                                            double seconds) {
  if (sums.size() != kRankingSums) throw Error("ranking metrics of " + std::to_string(sums.size()) + " sums");
  const double raw = sums[0], filtered = sums[5];
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  return {{split + ".mrr", ratio(sums[6], filtered)},    {split + ".hits@1", ratio(sums[7], filtered)},
          {split + ".hits@3", ratio(sums[8], filtered)}, {split + ".hits@10", ratio(sums[9], filtered)},
          {split + ".raw_mrr", ratio(sums[1], raw)},     {split + ".raw_hits@1", ratio(sums[2], raw)},
          {split + ".raw_hits@3", ratio(sums[3], raw)},  {split + ".raw_hits@10", ratio(sums[4], raw)},
          {split + ".queries", filtered},                {split + ".seconds", seconds}};
}

}  // namespace partita
