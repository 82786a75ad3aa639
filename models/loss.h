// The training objective and accuracy on a batch's seeds. Losses are sums, not means:
// replicas hold different numbers of labelled seeds, so the trainer divides the
// allreduced sum by the allreduced count.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace partita {

// The cross-entropy summed over the labelled seeds (0 if none): a differentiable scalar.
// logits [B, classes]; labels int64 with at least B entries, of which the first B are the
// seeds' (a batch's y, per node or per seed), -1 = unlabelled. Throws Error on a label
// outside [-1, classes).
at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& labels);

// The seeds the sum covers: those with a label >= 0 (all of them in a node split).
int64_t count_labelled(const at::Tensor& logits, const at::Tensor& labels);

// The labelled seeds whose largest logit is at their label (ties go to the lowest class).
int64_t count_correct(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace partita
