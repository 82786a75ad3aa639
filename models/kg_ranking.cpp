#include "models/kg_ranking.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace partita {

void RankSums::add_rank(double rank) {
  count += 1;
  reciprocal_rank += 1.0 / rank;
  hits1 += rank <= 1;
  hits3 += rank <= 3;
  hits10 += rank <= 10;
}

RankSums& RankSums::operator+=(const RankSums& o) {
  count += o.count;
  reciprocal_rank += o.reciprocal_rank;
  hits1 += o.hits1;
  hits3 += o.hits3;
  hits10 += o.hits10;
  return *this;
}

double RankSums::hits(int k) const {
  if (count <= 0) return 0;
  if (k == 1) return hits1 / count;
  if (k == 3) return hits3 / count;
  if (k == 10) return hits10 / count;
  throw Error("hits@" + std::to_string(k) + ": only 1, 3 and 10 are kept");
}

RankAccumulator::RankAccumulator(const at::Tensor& true_scores, std::vector<int64_t> answers,
                                 std::vector<int64_t> filter_offsets, std::vector<int64_t> filter_ids)
    : true_scores_(true_scores.detach().to(at::kFloat).contiguous()),
      answers_(std::move(answers)),
      filter_offsets_(std::move(filter_offsets)),
      filter_ids_(std::move(filter_ids)) {
  const size_t q = answers_.size();
  if (true_scores_.dim() != 1 || static_cast<size_t>(true_scores_.size(0)) != q) {
    throw Error("ranking: " + std::to_string(q) + " answers but true scores of shape " +
                std::to_string(true_scores_.numel()));
  }
  if (!filter_offsets_.empty() &&
      (filter_offsets_.size() != q + 1 || filter_offsets_.back() != static_cast<int64_t>(filter_ids_.size()))) {
    throw Error("ranking: the filter's offsets do not match its " + std::to_string(q) + " queries");
  }
  greater_.assign(q, 0);
  equal_.assign(q, 0);
  filtered_greater_.assign(q, 0);
  filtered_equal_.assign(q, 0);
}

void RankAccumulator::add_block(const at::Tensor& block_scores, int64_t first, Span<const int64_t> candidates) {
  if (block_scores.dim() != 2 || block_scores.size(1) != static_cast<int64_t>(candidates.size()) || first < 0 ||
      first + block_scores.size(0) > static_cast<int64_t>(answers_.size())) {
    throw Error("ranking: a block's scores must be [queries, candidates] of queries the accumulator holds");
  }
  const int64_t q = block_scores.size(0);
  if (q == 0 || candidates.empty()) return;
  const at::Tensor scores = block_scores.detach().to(at::kFloat).contiguous();
  const float* truth = true_scores_.data_ptr<float>() + first;
  const int64_t* answers = answers_.data() + first;
  const float* s = scores.data_ptr<float>();
  const int64_t width = scores.size(1);
  auto column = [&](int64_t entity) -> int64_t {
    auto it = std::lower_bound(candidates.begin(), candidates.end(), entity);
    return it != candidates.end() && *it == entity ? it - candidates.begin() : -1;
  };
  // One pass over each query's row, counting without a copy; the true answer does not
  // compete with itself (its own comparisons are taken back).
  for (int64_t i = 0; i < q; ++i) {
    const float* row = s + i * width;
    const float t = truth[i];
    int64_t greater = 0, equal = 0;
    for (int64_t c = 0; c < width; ++c) {
      greater += row[c] > t;
      equal += row[c] == t;
    }
    const int64_t own = column(answers[i]);
    if (own >= 0) {
      greater -= row[own] > t;
      equal -= row[own] == t;
    }
    greater_[first + i] += greater;
    equal_[first + i] += equal;
  }
  if (filter_offsets_.empty()) return;
  // The filtered entities in this block: their own comparisons, subtracted at the end.
  for (int64_t i = 0; i < q; ++i) {
    for (int64_t f = filter_offsets_[first + i]; f < filter_offsets_[first + i + 1]; ++f) {
      const int64_t c = column(filter_ids_[f]);
      if (c < 0) continue;
      const float v = s[i * width + c];
      filtered_greater_[first + i] += v > truth[i];
      filtered_equal_[first + i] += v == truth[i];
    }
  }
}

namespace {

double rank_of(int64_t greater, int64_t equal) { return 1.0 + static_cast<double>(greater) + equal / 2.0; }

}  // namespace

double RankAccumulator::raw_rank(int64_t q) const { return rank_of(greater_.at(q), equal_.at(q)); }

double RankAccumulator::filtered_rank(int64_t q) const {
  return rank_of(greater_.at(q) - filtered_greater_.at(q), equal_.at(q) - filtered_equal_.at(q));
}

RankSums RankAccumulator::raw() const {
  RankSums sums;
  for (size_t i = 0; i < answers_.size(); ++i) sums.add_rank(raw_rank(static_cast<int64_t>(i)));
  return sums;
}

RankSums RankAccumulator::filtered() const {
  RankSums sums;
  for (size_t i = 0; i < answers_.size(); ++i) sums.add_rank(filtered_rank(static_cast<int64_t>(i)));
  return sums;
}

}  // namespace partita
