// The training objectives of knowledge-graph embeddings: each positive triple's score
// against the scores of its negatives (corrupted triples).
//   softmax  cross-entropy of the positive among itself and its negatives:
//            logsumexp(s+, s-_1..k) - s+ (Marius's default; with many negatives it
//            approaches the 1-vs-all loss that tuned models use)
//   bce      -log sigmoid(s+) - mean_j log sigmoid(-s-_j) (binary cross-entropy, the
//            negatives averaged so that k does not change the positive's weight)
//   margin   mean_j max(0, margin - s+ + s-_j) (margin ranking, TransE's loss)
// Negatives may be masked out (strict mode, or padding): a masked negative contributes
// nothing, as if it had not been drawn.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace partita {

enum class KgLoss { kSoftmax, kBce, kMargin };

// "softmax", "bce", "margin"; throws UsageError naming `field`.
KgLoss parse_kg_loss(const std::string& name, const std::string& field);

// The loss summed over the positives: a differentiable scalar. positive [n], negative
// [n, k]; keep: bool [n, k] (false drops that negative) or undefined (keep all).
at::Tensor kg_loss_sum(KgLoss loss, const at::Tensor& positive, const at::Tensor& negative, const at::Tensor& keep,
                       double margin);

// Regularisation of the embeddings a batch used, summed: "l2" sum e^2, "n3" sum |e|^3
// (Lacroix et al.'s nuclear 3-norm, for ComplEx and DistMult), "none".
enum class KgRegularizer { kNone, kL2, kN3 };
KgRegularizer parse_kg_regularizer(const std::string& name, const std::string& field);
at::Tensor kg_regularizer_sum(KgRegularizer regularizer, const at::Tensor& rows);

}  // namespace partita
