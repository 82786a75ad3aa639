// Model selection: which epoch of a run the run reports and keeps. A job says how it
// selects (train.select: last or best_val, train.early_stopping); the driver feeds a
// ModelSelector each epoch's validation metric as the epoch ends, and the selector says
// whether that epoch is the new selected one (the driver then keeps its checkpoint in
// OUTPUT/selected/) and whether the run should stop. The selector is pure: no files, no
// actors, no clock, so one epoch sequence always selects the same epoch.
//
// The metric is the task's (selection_metric): validation accuracy for node
// classification, MRR for link prediction ranked against every entity (knowledge-graph
// embeddings, or a GNN encoder with eval.negatives: all), AUC for link prediction against
// sampled negatives, RMSE for rating regression, where lower is better.
#pragma once

#include <optional>
#include <string>

#include "training/job_types.h"

namespace partita {

struct JobConfig;

// train.select.
enum class SelectMode { kLast, kBestVal };
const char* name_of(SelectMode mode);

// train.early_stopping: stop once `patience` evaluated epochs in a row have not improved
// the validation metric by more than `min_delta` on the selected epoch's. patience 0: off.
struct EarlyStopping {
  int patience = 0;
  double min_delta = 0.0;
  bool enabled() const { return patience > 0; }
};

// A task's validation metric: its short name ("accuracy", "mrr", "auc", "rmse"), whether
// higher is better, and where EpochMetrics keeps it.
struct SelectionMetric {
  std::string name;
  bool higher_is_better = true;

  // The metric of `split` ("val" or "test") in `m`; none when the epoch was not evaluated
  // (a link job's eval.every, RunOptions::evaluate off).
  std::optional<double> value(const EpochMetrics& m, const std::string& split) const;
};

// The metric `job` selects by.
SelectionMetric selection_metric(const JobConfig& job);

class ModelSelector {
 public:
  ModelSelector(SelectMode mode, bool higher_is_better, EarlyStopping early = {});

  struct Verdict {
    bool selected = false;  // this epoch is now the selected one
    bool stop = false;      // early stopping: the run should end after this epoch
  };
  // Epoch `epoch`'s validation metric (none: not evaluated). Epochs come in increasing
  // order. kLast selects every epoch and never stops. kBestVal selects the first evaluated
  // epoch, then any that beats the selected value by more than min_delta; epochs without
  // a value neither select nor count towards patience.
  Verdict observe(int epoch, std::optional<double> val);

  int selected_epoch() const { return selected_epoch_; }  // 0: none yet
  std::optional<double> selected_value() const { return selected_value_; }
  // Evaluated epochs since the selected one that did not improve on it.
  int stale() const { return stale_; }

 private:
  SelectMode mode_;
  bool higher_is_better_;
  EarlyStopping early_;
  int selected_epoch_ = 0;
  std::optional<double> selected_value_;
  int stale_ = 0;
};

}  // namespace partita
