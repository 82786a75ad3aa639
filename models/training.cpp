#include "models/training.h"

#include <ATen/ATen.h>

#include "base/stopwatch.h"

namespace partita {

BatchResult forward_backward(GnnModel& model, const GraphBatch& batch, uint64_t dropout_key, BatchTimes* times) {
  Stopwatch watch;
  model.train();
  const at::Tensor logits = model.forward(batch, true, dropout_key);
  const at::Tensor y = batch.y.slice(0, 0, batch.batch_size);
  at::Tensor loss = cross_entropy_sum(logits, y);
  if (times != nullptr) times->forward = watch.seconds();
  watch.restart();
  loss.backward();
  BatchResult result;
  result.loss_sum = loss.item<double>();
  result.seeds = count_labelled(logits, y);
  result.correct = count_correct(logits, y);
  if (times != nullptr) times->backward = watch.seconds();
  return result;
}

}  // namespace partita
