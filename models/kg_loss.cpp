#include "models/kg_loss.h"

#include <ATen/ATen.h>

#include <limits>

#include "base/error.h"

namespace partita {

KgLoss parse_kg_loss(const std::string& name, const std::string& field) {
  if (name == "softmax") return KgLoss::kSoftmax;
  if (name == "bce") return KgLoss::kBce;
  if (name == "margin") return KgLoss::kMargin;
  throw UsageError(field + ": '" + name + "' is not one of: softmax, bce, margin");
}

at::Tensor kg_loss_sum(KgLoss loss, const at::Tensor& positive, const at::Tensor& negative, const at::Tensor& keep,
                       double margin) {
  if (positive.dim() != 1 || negative.dim() != 2 || negative.size(0) != positive.size(0)) {
    throw Error("kg_loss_sum: expected positive [n] and negative [n, k]");
  }
  if (positive.size(0) == 0) return (positive.sum() + negative.sum()) * 0;
  switch (loss) {
    case KgLoss::kSoftmax: {
      at::Tensor neg = keep.defined() ? negative.masked_fill(keep.logical_not(), -std::numeric_limits<float>::infinity())
                                      : negative;
      at::Tensor all = at::cat({positive.unsqueeze(1), neg}, 1);
      return (at::logsumexp(all, 1) - positive).sum();
    }
    case KgLoss::kBce: {
      at::Tensor per_negative = -at::log_sigmoid(-negative);
      at::Tensor count;
      if (keep.defined()) {
        per_negative = per_negative * keep;
        count = keep.sum(1).clamp_min(1);
      } else {
        count = at::full({negative.size(0)}, static_cast<double>(negative.size(1)), negative.options());
      }
      return (-at::log_sigmoid(positive)).sum() + (per_negative.sum(1) / count).sum();
    }
    case KgLoss::kMargin: {
      at::Tensor hinge = (margin - positive.unsqueeze(1) + negative).clamp_min(0);
      at::Tensor count;
      if (keep.defined()) {
        hinge = hinge * keep;
        count = keep.sum(1).clamp_min(1);
      } else {
        count = at::full({negative.size(0)}, static_cast<double>(negative.size(1)), negative.options());
      }
      return (hinge.sum(1) / count).sum();
    }
  }
  throw Error("unknown loss");
}

KgRegularizer parse_kg_regularizer(const std::string& name, const std::string& field) {
  if (name == "none") return KgRegularizer::kNone;
  if (name == "l2") return KgRegularizer::kL2;
  if (name == "n3") return KgRegularizer::kN3;
  throw UsageError(field + ": '" + name + "' is not one of: none, l2, n3");
}

at::Tensor kg_regularizer_sum(KgRegularizer regularizer, const at::Tensor& rows) {
  switch (regularizer) {
    case KgRegularizer::kNone: return rows.sum() * 0;
    case KgRegularizer::kL2: return rows.pow(2).sum();
    case KgRegularizer::kN3: return rows.abs().pow(3).sum();
  }
  throw Error("unknown regulariser");
}

}  // namespace partita
