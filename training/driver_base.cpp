#include "training/driver_base.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <system_error>

#include <spdlog/spdlog.h>

#include "base/file_util.h"
#include "runtime/host.h"
#include "training/metrics_record.h"

namespace partita {

namespace fs = std::filesystem;

int DriverBase::node_of_partition(int part) const {
  if (!options_.placement.empty()) return options_.placement.at(static_cast<size_t>(part));
  return JobConfig::node_of_partition(part, runtime_.num_nodes());
}

const std::string& DriverBase::dir_on(int node) const {
  if (options_.node_partition_dirs.empty()) return folder_.dir();
  return options_.node_partition_dirs.at(static_cast<size_t>(node));
}

std::string DriverBase::describe_trainer(int trainer) const {
  const int node = node_of_partition(job_.part_of_trainer(trainer));
  return "trainer " + std::to_string(trainer) + " (partition " + std::to_string(job_.part_of_trainer(trainer)) +
         ", on " + runtime_.node_name(node) + ")";
}

void DriverBase::announce_owner() const {
  if (options_.on_owner) options_.on_owner(runtime::owner_key(caf::actor_cast<caf::actor_addr>(self_)));
}

void DriverBase::throw_naming_lost_node(const Error& failure) const {
  if (std::optional<Error> lost = runtime_.lost_node_within(kLostNodeGrace)) {
    throw Error(std::string(failure.what()) + "; " + lost->what());
  }
  throw failure;
}

JobProgress DriverBase::step_progress(int epoch, int64_t done, int64_t steps, double loss, double seconds) const {
  JobProgress progress;
  progress.epoch = epoch;
  progress.epochs = job_.epochs;
  progress.step = done;
  progress.steps = steps;
  progress.loss = loss;
  progress.seconds = seconds;
  progress.steps_per_second = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  return progress;
}

namespace {

// Checkpoint files are never changed in place (write_file_atomically replaces them), so a
// hard link keeps the selected epoch's bytes without copying them: a job with large
// embedding shards would otherwise copy them each time validation improves. A copy where
// the file system has no hard links.
void link_or_copy(const fs::path& from, const fs::path& to) {
  std::error_code failed;
  fs::create_hard_link(from, to, failed);
  if (failed) fs::copy_file(from, to);
}

// The folder of `output`'s checkpoint as a run reads it: its pointer, and the state files of
// its checkpoints/ folder (only the latest checkpoint is kept there).
void copy_checkpoint(const fs::path& output, const fs::path& into) {
  const fs::path staging = into.string() + ".new";
  fs::remove_all(staging);
  fs::create_directories(staging / "checkpoints");
  if (fs::exists(output / "checkpoints")) {
    for (const auto& entry : fs::directory_iterator(output / "checkpoints")) {
      if (entry.is_regular_file()) link_or_copy(entry.path(), staging / "checkpoints" / entry.path().filename());
    }
  }
  link_or_copy(output / kCheckpointFileName, staging / kCheckpointFileName);
  // Whole or not at all: a crash leaves the previous selection or the new one.
  const fs::path old = into.string() + ".old";
  fs::remove_all(old);
  if (fs::exists(into)) fs::rename(into, old);
  fs::rename(staging, into);
  fs::remove_all(old);
}

nlohmann::json optional_value(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

}  // namespace

void DriverBase::start_selection(int done_epochs) {
  metric_ = selection_metric(job_);
  const PartitionMeta& meta = folder_.meta();
  int64_t val = 0;
  for (const PartStats& part : meta.parts) val += job_.link_prediction() ? part.num_val_edges : part.num_val;
  const bool has_validation = options_.evaluate && val > 0;
  const std::string why = !options_.evaluate ? std::string("the run does not evaluate")
                          : folder_.dir() + " has no validation " + (job_.link_prediction() ? "edges" : "nodes") +
                                " (data.holdout.val cuts them)";
  if (!has_validation && job_.select == SelectMode::kBestVal) {
    throw UsageError("train.select: best_val selects by the validation " + metric_.name + ", but " + why);
  }
  if (!has_validation && job_.early_stopping.enabled()) {
    throw UsageError("train.early_stopping stops on the validation " + metric_.name + ", but " + why);
  }
  const SelectMode mode = job_.select.value_or(has_validation ? SelectMode::kBestVal : SelectMode::kLast);
  mode_ = mode;
  selector_.emplace(mode, metric_.higher_is_better, job_.early_stopping);
  selected_test_.reset();
  if (done_epochs > 0) {
    const fs::path metrics = fs::path(job_.output) / kMetricsFileName;
    for (const EpochMetrics& m : read_metrics_file(metrics.string())) {
      if (m.epoch > done_epochs) break;
      if (selector_->observe(m.epoch, metric_.value(m, "val")).selected) selected_test_ = metric_.value(m, "test");
    }
  }
  spdlog::info("selecting the {} epoch{}", mode == SelectMode::kBestVal ? "best validation " + metric_.name : "last",
               job_.early_stopping.enabled() ? " (early stopping after " + std::to_string(job_.early_stopping.patience) +
                                                   " evaluation(s) without improvement)"
                                             : "");
}

bool DriverBase::select_epoch(const EpochMetrics& m) {
  const ModelSelector::Verdict verdict = selector_->observe(m.epoch, metric_.value(m, "val"));
  if (verdict.selected) {
    selected_test_ = metric_.value(m, "test");
    copy_checkpoint(job_.output, fs::path(job_.output) / kSelectedDirName);
  }
  if (verdict.stop) {
    spdlog::info("early stopping after epoch {}: no validation {} improvement since epoch {}", m.epoch, metric_.name,
                 selector_->selected_epoch());
  }
  return verdict.stop;
}

void DriverBase::finish_selection(JobReport& report, int last_epoch, bool early_stopped) const {
  report.select = name_of(mode_);
  report.metric = metric_.name;
  report.higher_is_better = metric_.higher_is_better;
  report.selected_epoch = selector_->selected_epoch();
  report.selected_val = selector_->selected_value();
  report.selected_test = selected_test_;
  report.early_stopped = early_stopped;
  const nlohmann::json out = {
      {"select", report.select},
      {"metric", report.metric},
      {"higher_is_better", report.higher_is_better},
      {"selected_epoch", report.selected_epoch},
      {"val", {{report.metric, optional_value(report.selected_val)}}},
      {"test", {{report.metric, optional_value(report.selected_test)}}},
      {"last_epoch", last_epoch},
      {"early_stopped", early_stopped},
      {"checkpoint", std::string(kSelectedDirName) + "/" + kCheckpointFileName}};
  write_file_atomically((fs::path(job_.output) / kReportFileName).string(), out.dump(2) + "\n");
  if (report.selected_epoch > 0) {
    spdlog::info("selected epoch {} of {} ({}): validation {} {}, test {} {}", report.selected_epoch, last_epoch,
                 report.select, report.metric,
                 report.selected_val ? fmt::format("{:.4f}", *report.selected_val) : std::string("-"), report.metric,
                 report.selected_test ? fmt::format("{:.4f}", *report.selected_test) : std::string("-"));
  }
}

void DriverBase::append_metrics(const EpochMetrics& m) const {
  const nlohmann::json line = m;  // training/metrics_record.h
  append_to_file((std::filesystem::path(job_.output) / kMetricsFileName).string(), line.dump() + "\n");
}

}  // namespace partita
