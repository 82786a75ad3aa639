// The knowledge-graph operators: decoders (query form equals the triple's score, grouped
// scores equal pairwise ones), losses (by hand; a masked negative counts as undrawn),
// sparse Adagrad against torch's dense Adagrad, SparseAdam against torch's Adam and a dense
// reference of torch's SparseAdam, and filtered vs raw ranks on a toy by hand.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "embeddings/sparse_adagrad.h"
#include "embeddings/sparse_adam.h"
#include "models/kg_decoder.h"
#include "models/kg_loss.h"
#include "models/kg_ranking.h"

namespace partita {
namespace {

// The triple's score written out directly, per decoder.
at::Tensor direct_score(KgDecoder decoder, const at::Tensor& h, const at::Tensor& r, const at::Tensor& t) {
  const int64_t half = h.size(-1) / 2;
  switch (decoder) {
    case KgDecoder::kDot: return (h * t).sum(-1);  // no relation
    case KgDecoder::kDistMult: return (h * r * t).sum(-1);
    case KgDecoder::kComplEx: {
      auto re = [&](const at::Tensor& x) { return x.narrow(-1, 0, half); };
      auto im = [&](const at::Tensor& x) { return x.narrow(-1, half, half); };
      // Re(sum h r conj(t))
      return (re(h) * re(r) * re(t) + im(h) * re(r) * im(t) + re(h) * im(r) * im(t) - im(h) * im(r) * re(t)).sum(-1);
    }
    case KgDecoder::kTransEL1: return -(h + r - t).abs().sum(-1);
    case KgDecoder::kTransEL2: return -(h + r - t).pow(2).sum(-1).sqrt();
  }
  return {};
}

TEST(KgDecoderTest, BothQueryFormsGiveTheTriplesScoreAndGroupsMatchPairs) {
  torch::manual_seed(3);
  for (KgDecoder decoder :
       {KgDecoder::kDot, KgDecoder::kDistMult, KgDecoder::kComplEx, KgDecoder::kTransEL1, KgDecoder::kTransEL2}) {
    SCOPED_TRACE(kg_decoder_name(decoder));
    const at::Tensor h = torch::randn({6, 8}), r = torch::randn({6, 8}), t = torch::randn({6, 8});
    const at::Tensor expected = direct_score(decoder, h, r, t);
    EXPECT_TRUE(torch::allclose(kg_score_pairs(decoder, kg_query(decoder, KgSide::kTail, h, r), t), expected, 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(kg_score_pairs(decoder, kg_query(decoder, KgSide::kHead, t, r), h), expected, 1e-5, 1e-5));
    // Every query of a group against every candidate: [2, 3, d] x [2, 5, d].
    const at::Tensor q = torch::randn({2, 3, 8}), c = torch::randn({2, 5, 8});
    const at::Tensor grouped = kg_score_groups(decoder, q, c);
    ASSERT_EQ(grouped.sizes(), (std::vector<int64_t>{2, 3, 5}));
    for (int64_t g = 0; g < 2; ++g) {
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t j = 0; j < 5; ++j) {
          const float pair = kg_score_pairs(decoder, q[g][i].unsqueeze(0), c[g][j].unsqueeze(0)).item<float>();
          EXPECT_NEAR(grouped[g][i][j].item<float>(), pair, 1e-4);
        }
      }
    }
  }
}

TEST(KgDecoderTest, BadNamesAndDimensionsAreNamed) {
  EXPECT_THROW(parse_kg_decoder("rotate", 1, "model.decoder"), UsageError);
  EXPECT_THROW(parse_kg_decoder("transe", 3, "model.decoder"), UsageError);
  EXPECT_THROW(check_kg_dim(KgDecoder::kComplEx, 7, "model.dim"), UsageError);
  EXPECT_NO_THROW(check_kg_dim(KgDecoder::kDistMult, 7, "model.dim"));
}

TEST(KgLossTest, EachLossMatchesItsFormulaByHand) {
  const at::Tensor pos = torch::tensor({2.0f, -1.0f});
  const at::Tensor neg = torch::tensor({{1.0f, 0.0f, 3.0f}, {-2.0f, 0.5f, -1.0f}});
  double softmax = 0, bce = 0, margin = 0;
  const float p[2] = {2, -1};
  const float n[2][3] = {{1, 0, 3}, {-2, 0.5f, -1}};
  auto log_sigmoid = [](double x) { return -std::log1p(std::exp(-x)); };
  for (int i = 0; i < 2; ++i) {
    double z = std::exp(p[i]);
    double b = 0, m = 0;
    for (int j = 0; j < 3; ++j) {
      z += std::exp(n[i][j]);
      b += -log_sigmoid(-n[i][j]);
      m += std::max(0.0, 1.5 - p[i] + n[i][j]);
    }
    softmax += std::log(z) - p[i];
    bce += -log_sigmoid(p[i]) + b / 3;
    margin += m / 3;
  }
  EXPECT_NEAR(kg_loss_sum(KgLoss::kSoftmax, pos, neg, {}, 0).item<double>(), softmax, 1e-5);
  EXPECT_NEAR(kg_loss_sum(KgLoss::kBce, pos, neg, {}, 0).item<double>(), bce, 1e-5);
  EXPECT_NEAR(kg_loss_sum(KgLoss::kMargin, pos, neg, {}, 1.5).item<double>(), margin, 1e-5);
}

TEST(KgLossTest, AMaskedNegativeCountsAsIfItWereNotDrawn) {
  const at::Tensor pos = torch::tensor({0.5f, 1.0f});
  const at::Tensor neg = torch::tensor({{1.0f, 2.0f, 3.0f}, {0.0f, -1.0f, 4.0f}});
  const at::Tensor keep = torch::tensor({{true, false, true}, {true, true, false}});
  const at::Tensor kept_first = torch::tensor({{1.0f, 3.0f}}), kept_second = torch::tensor({{0.0f, -1.0f}});
  for (KgLoss loss : {KgLoss::kSoftmax, KgLoss::kBce, KgLoss::kMargin}) {
    const double masked = kg_loss_sum(loss, pos, neg, keep, 1.0).item<double>();
    const double dropped = kg_loss_sum(loss, pos.narrow(0, 0, 1), kept_first, {}, 1.0).item<double>() +
                           kg_loss_sum(loss, pos.narrow(0, 1, 1), kept_second, {}, 1.0).item<double>();
    EXPECT_NEAR(masked, dropped, 1e-5) << static_cast<int>(loss);
  }
}

TEST(SparseAdagradTest, SparseUpdatesEqualTorchsDenseAdagrad) {
  torch::manual_seed(5);
  const int64_t rows = 10, dim = 4;
  const at::Tensor initial = torch::randn({rows, dim});
  at::Tensor dense = initial.clone().set_requires_grad(true);
  torch::optim::Adagrad dense_opt({dense}, torch::optim::AdagradOptions(0.3).eps(1e-10));
  std::vector<float> table(initial.data_ptr<float>(), initial.data_ptr<float>() + rows * dim);
  std::vector<float> state(table.size(), 0.0f);
  SparseAdagrad sparse;
  sparse.learning_rate = 0.3;
  // Three steps touching different rows; the dense gradient is zero elsewhere.
  const std::vector<std::vector<int64_t>> touched = {{1, 4, 7}, {4, 0}, {9, 1, 4, 2}};
  for (const auto& ids : touched) {
    const at::Tensor grads = torch::randn({static_cast<int64_t>(ids.size()), dim});
    dense_opt.zero_grad();
    at::Tensor full = torch::zeros({rows, dim});
    for (size_t i = 0; i < ids.size(); ++i) full[ids[i]] = grads[i];
    dense.mutable_grad() = full;
    dense_opt.step();
    sparse.step(Span<float>(table), Span<float>(state), dim, Span<const int64_t>(ids),
                Span<const float>(grads.data_ptr<float>(), ids.size() * dim));
  }
  const at::Tensor result = torch::from_blob(table.data(), {rows, dim});
  EXPECT_TRUE(torch::allclose(result, dense.detach(), 1e-6, 1e-6)) << result - dense.detach();
  // Untouched rows keep their values exactly.
  for (int64_t r : {3, 5, 6, 8}) EXPECT_TRUE(torch::equal(result[r], initial[r])) << r;
}

// SparseAdam touching every row at every step is Adam: torch's own, on the dense table (up
// to where each adds eps: Adam to sqrt(v / (1 - b2^t)), SparseAdam to sqrt(v)).
TEST(SparseAdamTest, EveryRowAtEveryStepIsTorchsAdam) {
  torch::manual_seed(11);
  const int64_t rows = 6, dim = 5;
  const at::Tensor initial = torch::randn({rows, dim});
  at::Tensor dense = initial.clone().set_requires_grad(true);
  torch::optim::Adam dense_opt({dense}, torch::optim::AdamOptions(0.05));
  std::vector<float> table(initial.data_ptr<float>(), initial.data_ptr<float>() + rows * dim);
  std::vector<float> moments(2 * table.size(), 0.0f);
  SparseAdam sparse;
  sparse.learning_rate = 0.05;
  const std::vector<int64_t> all = {0, 1, 2, 3, 4, 5};
  for (uint64_t step = 1; step <= 6; ++step) {
    const at::Tensor grads = torch::randn({rows, dim});
    dense_opt.zero_grad();
    dense.mutable_grad() = grads.clone();
    dense_opt.step();
    sparse.step(Span<float>(table), Span<float>(moments), dim, Span<const int64_t>(all),
                Span<const float>(grads.data_ptr<float>(), rows * dim), step);
  }
  const at::Tensor result = torch::from_blob(table.data(), {rows, dim});
  EXPECT_GT((result - initial).abs().min().item<float>(), 0);
  EXPECT_TRUE(torch::allclose(result, dense.detach(), 1e-5, 1e-6)) << result - dense.detach();
}

// Steps touching a few rows equal torch.optim.SparseAdam's update written densely (its
// _functional.sparse_adam: moments and values change on the gradient's rows only, bias
// correction by the parameter's step count): a row first touched at step 3 is corrected
// as step 3, and rows never touched keep their values and zero moments exactly.
TEST(SparseAdamTest, SparseUpdatesEqualADenseReferenceOfTorchsSparseAdam) {
  torch::manual_seed(7);
  const int64_t rows = 10, dim = 4;
  const double lr = 0.02, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const at::Tensor initial = torch::randn({rows, dim});
  at::Tensor value = initial.clone().to(torch::kDouble);
  at::Tensor m = torch::zeros({rows, dim}, torch::kDouble), v = torch::zeros({rows, dim}, torch::kDouble);
  std::vector<float> table(initial.data_ptr<float>(), initial.data_ptr<float>() + rows * dim);
  std::vector<float> moments(2 * table.size(), 0.0f);
  SparseAdam sparse;
  sparse.learning_rate = lr;
  const std::vector<std::vector<int64_t>> touched = {{1, 4, 7}, {4, 0}, {9, 1, 4, 2}, {7}, {0, 9}};
  for (size_t s = 0; s < touched.size(); ++s) {
    const std::vector<int64_t>& ids = touched[s];
    const at::Tensor grads = torch::randn({static_cast<int64_t>(ids.size()), dim});
    const double t = static_cast<double>(s + 1);
    const double step_size = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (size_t i = 0; i < ids.size(); ++i) {
      const at::Tensor g = grads[i].to(torch::kDouble);
      const int64_t r = ids[i];
      m[r] = m[r] + (g - m[r]) * (1 - b1);
      v[r] = v[r] + (g * g - v[r]) * (1 - b2);
      value[r] = value[r] - step_size * m[r] / (v[r].sqrt() + eps);
    }
    sparse.step(Span<float>(table), Span<float>(moments), dim, Span<const int64_t>(ids),
                Span<const float>(grads.data_ptr<float>(), ids.size() * dim), s + 1);
  }
  const at::Tensor result = torch::from_blob(table.data(), {rows, dim});
  const at::Tensor first = torch::from_blob(moments.data(), {rows, dim});
  const at::Tensor second = torch::from_blob(moments.data() + rows * dim, {rows, dim});
  EXPECT_TRUE(torch::allclose(result.to(torch::kDouble), value, 1e-5, 1e-6)) << result.to(torch::kDouble) - value;
  EXPECT_TRUE(torch::allclose(first.to(torch::kDouble), m, 1e-5, 1e-7));
  EXPECT_TRUE(torch::allclose(second.to(torch::kDouble), v, 1e-5, 1e-9));
  for (int64_t r : {3, 5, 6, 8}) {
    EXPECT_TRUE(torch::equal(result[r], initial[r])) << r;
    EXPECT_EQ(first[r].abs().sum().item<float>(), 0) << r;
    EXPECT_EQ(second[r].abs().sum().item<float>(), 0) << r;
  }
  // Row 2, first touched at step 3, moved as step 3 (not as its own first step): Adam's
  // first step moves every element by lr (m / sqrt(v) = sign(g)); step 3's correction less.
  const float moved = (result[2] - initial[2]).abs().max().item<float>();
  EXPECT_LT(moved, 0.99 * lr);
  EXPECT_GT(moved, 0.0f);
}

// A toy by hand: 6 candidate entities 0..5 in two blocks; query 0's answer is entity 2
// (score 0.5), its other true answers 1 and 4; query 1's answer is 5 (score 0.9), no filter.
TEST(KgRankingTest, FilteredAndRawRanksMatchTheToyByHand) {
  const at::Tensor truth = torch::tensor({0.5f, 0.9f});
  RankAccumulator ranks(truth, {2, 5}, {0, 2, 2}, {1, 4});
  // Scores of entities 0..2, then 3..5.
  ranks.add_block(torch::tensor({{0.7f, 0.8f, 0.5f}, {0.1f, 0.95f, 0.9f}}), 0, std::vector<int64_t>{0, 1, 2});
  ranks.add_block(torch::tensor({{0.5f, 0.6f, 0.2f}, {0.3f, 0.2f, 0.9f}}), 0, std::vector<int64_t>{3, 4, 5});
  // Query 0: greater than 0.5: entities 0, 1, 4 (3 of them); equal: entity 3 (the answer
  // itself does not count). Raw rank 1 + 3 + 1/2 = 4.5; filtered drops 1 and 4: 1 + 1 + 1/2.
  EXPECT_DOUBLE_EQ(ranks.raw_rank(0), 4.5);
  EXPECT_DOUBLE_EQ(ranks.filtered_rank(0), 2.5);
  // Query 1: greater than 0.9: entity 1; equal: entity 2. Raw = filtered = 1 + 1 + 1/2.
  EXPECT_DOUBLE_EQ(ranks.raw_rank(1), 2.5);
  EXPECT_DOUBLE_EQ(ranks.filtered_rank(1), 2.5);
  const RankSums raw = ranks.raw(), filtered = ranks.filtered();
  EXPECT_DOUBLE_EQ(raw.count, 2);
  EXPECT_DOUBLE_EQ(raw.mrr(), (1 / 4.5 + 1 / 2.5) / 2);
  EXPECT_DOUBLE_EQ(filtered.mrr(), (1 / 2.5 + 1 / 2.5) / 2);
  EXPECT_DOUBLE_EQ(raw.hits(3), 0.5);
  EXPECT_DOUBLE_EQ(filtered.hits(3), 1.0);
  EXPECT_DOUBLE_EQ(filtered.hits(1), 0.0);
}

TEST(KgRankingTest, ABlockMayCoverPartOfTheQueries) {
  RankAccumulator ranks(torch::tensor({1.0f, 1.0f, 1.0f}), {0, 0, 0}, {}, {});
  ranks.add_block(torch::tensor({{2.0f, 0.0f}}), 1, std::vector<int64_t>{1, 2});
  EXPECT_DOUBLE_EQ(ranks.raw_rank(0), 1);
  EXPECT_DOUBLE_EQ(ranks.raw_rank(1), 2);
  EXPECT_DOUBLE_EQ(ranks.raw_rank(2), 1);
  EXPECT_THROW(ranks.add_block(torch::tensor({{2.0f, 0.0f}}), 3, std::vector<int64_t>{1, 2}), Error);
}

}  // namespace
}  // namespace partita
