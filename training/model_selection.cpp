#include "training/model_selection.h"

#include "training/job_config.h"

namespace partita {

const char* name_of(SelectMode mode) { return mode == SelectMode::kLast ? "last" : "best_val"; }

std::optional<double> SelectionMetric::value(const EpochMetrics& m, const std::string& split) const {
  if (name == "accuracy") {
    // Node classification evaluates val and test together; an unevaluated epoch has
    // neither loss nor accuracy (0, 0).
    const double loss = split == "val" ? m.val_loss : m.test_loss;
    const double accuracy = split == "val" ? m.val_accuracy : m.test_accuracy;
    if (loss == 0 && accuracy == 0) return std::nullopt;
    return accuracy;
  }
  const std::string key = (split == "val" ? "valid." : "test.") + name;
  for (const auto& [metric, value] : m.ranking) {
    if (metric == key) return value;
  }
  return std::nullopt;
}

SelectionMetric selection_metric(const JobConfig& job) {
  if (!job.link_prediction()) return {"accuracy", true};
  if (job.link.regression()) return {"rmse", false};
  if (job.link_gnn() && job.link.eval_negatives > 0) return {"auc", true};
  return {"mrr", true};
}

ModelSelector::ModelSelector(SelectMode mode, bool higher_is_better, EarlyStopping early)
    : mode_(mode), higher_is_better_(higher_is_better), early_(early) {}

ModelSelector::Verdict ModelSelector::observe(int epoch, std::optional<double> val) {
  Verdict verdict;
  if (mode_ == SelectMode::kLast) {
    selected_epoch_ = epoch;
    selected_value_ = val;
    verdict.selected = true;
    return verdict;
  }
  if (!val) return verdict;
  const bool improves = !selected_value_ || (higher_is_better_ ? *val - *selected_value_ > early_.min_delta
                                                               : *selected_value_ - *val > early_.min_delta);
  if (improves) {
    selected_epoch_ = epoch;
    selected_value_ = val;
    stale_ = 0;
    verdict.selected = true;
  } else {
    ++stale_;
    verdict.stop = early_.enabled() && stale_ >= early_.patience;
  }
  return verdict;
}

}  // namespace partita
