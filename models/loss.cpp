#include "models/loss.h"

#include <ATen/ATen.h>

#include <string>

#include "base/error.h"

namespace partita {

namespace {

// The seeds' labels, checked against the logits' shape.
at::Tensor seed_labels(const at::Tensor& logits, const at::Tensor& labels) {
  if (logits.dim() != 2 || !labels.defined() || labels.dim() != 1 ||
      labels.size(0) < logits.size(0) || labels.scalar_type() != at::kLong) {
    throw Error("loss: need int64 labels for each of the " +
                std::to_string(logits.dim() == 2 ? logits.size(0) : 0) + " seeds' logits");
  }
  at::Tensor seeds = labels.narrow(0, 0, logits.size(0));
  if (seeds.numel() > 0) {
    const int64_t min = seeds.min().item<int64_t>(), max = seeds.max().item<int64_t>();
    if (min < -1 || max >= logits.size(1)) {
      throw Error("loss: label " + std::to_string(min < -1 ? min : max) + " is outside [-1, " +
                  std::to_string(logits.size(1)) + ") (-1 = unlabelled)");
    }
  }
  return seeds;
}

}  // namespace

at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& labels) {
  return at::nll_loss(at::log_softmax(logits, 1), seed_labels(logits, labels), {},
                      at::Reduction::Sum, /*ignore_index=*/-1);
}

int64_t count_labelled(const at::Tensor& logits, const at::Tensor& labels) {
  return seed_labels(logits, labels).ge(0).sum().item<int64_t>();
}

int64_t count_correct(const at::Tensor& logits, const at::Tensor& labels) {
  const at::Tensor seeds = seed_labels(logits, labels);
  return logits.argmax(1).eq(seeds).logical_and(seeds.ge(0)).sum().item<int64_t>();
}

}  // namespace partita
