// Model selection: the selector's rule (best validation value, ties to the earlier epoch,
// min_delta, patience, epochs without evaluation), the task's metric, a job's selected
// epoch as its report, report.json, OUTPUT/selected/ and a loaded run all give it, early
// stopping ending a job, and train.select / train.early_stopping errors naming the field.
#include "training/model_selection.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "expect_error.h"
#include "job_runs.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/metrics_record.h"
#include "training/trained_run.h"

namespace partita {
namespace {

namespace fs = std::filesystem;

// Feeds `values` (epochs 1, 2, ...) and returns the selected epoch and the epoch that said
// stop (0: none).
std::pair<int, int> feed(ModelSelector& selector, const std::vector<std::optional<double>>& values) {
  int stop = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (selector.observe(static_cast<int>(i) + 1, values[i]).stop && stop == 0) stop = static_cast<int>(i) + 1;
  }
  return {selector.selected_epoch(), stop};
}

TEST(ModelSelectorTest, BestValPicksTheBestValidationValueAndTheEarlierOfTies) {
  ModelSelector higher(SelectMode::kBestVal, true);
  EXPECT_EQ(feed(higher, {0.5, 0.7, 0.6, 0.7, 0.65}), std::make_pair(2, 0));
  EXPECT_EQ(higher.selected_value(), 0.7);
  EXPECT_EQ(higher.stale(), 3);
  ModelSelector lower(SelectMode::kBestVal, false);  // RMSE
  EXPECT_EQ(feed(lower, {1.2, 1.0, 0.9, 0.95}), std::make_pair(3, 0));
  EXPECT_EQ(lower.selected_value(), 0.9);
}

TEST(ModelSelectorTest, EachObservationSaysWhetherItIsTheNewSelection) {
  ModelSelector selector(SelectMode::kBestVal, true);
  EXPECT_TRUE(selector.observe(1, 0.5).selected);
  EXPECT_FALSE(selector.observe(2, 0.4).selected);
  EXPECT_TRUE(selector.observe(3, 0.6).selected);
  EXPECT_FALSE(selector.observe(4, 0.6).selected);
}

TEST(ModelSelectorTest, EpochsWithoutEvaluationNeitherSelectNorCount) {
  ModelSelector selector(SelectMode::kBestVal, true, {2, 0.0});
  EXPECT_EQ(feed(selector, {std::nullopt, 0.3, std::nullopt, 0.2, std::nullopt, std::nullopt}), std::make_pair(2, 0));
  EXPECT_EQ(selector.stale(), 1);
  EXPECT_TRUE(selector.observe(7, 0.1).stop);
  ModelSelector none(SelectMode::kBestVal, true);
  EXPECT_EQ(feed(none, {std::nullopt, std::nullopt}), std::make_pair(0, 0));
}

TEST(ModelSelectorTest, LastSelectsEveryEpochAndNeverStops) {
  ModelSelector selector(SelectMode::kLast, true, {1, 0.0});
  EXPECT_EQ(feed(selector, {0.9, 0.1, 0.2}), std::make_pair(3, 0));
  EXPECT_EQ(selector.selected_value(), 0.2);
}

TEST(ModelSelectorTest, EarlyStoppingStopsAfterPatienceEvaluationsWithoutImprovement) {
  ModelSelector selector(SelectMode::kBestVal, true, {2, 0.0});
  EXPECT_EQ(feed(selector, {0.5, 0.6, 0.55, 0.58, 0.9}), std::make_pair(5, 4));
  // An improvement resets the count.
  ModelSelector reset(SelectMode::kBestVal, true, {2, 0.0});
  EXPECT_EQ(feed(reset, {0.5, 0.4, 0.6, 0.4, 0.3}), std::make_pair(3, 5));
}

TEST(ModelSelectorTest, MinDeltaIsTheImprovementThatCounts) {
  ModelSelector selector(SelectMode::kBestVal, true, {2, 0.05});
  // 0.52 and 0.54 are within 0.05 of 0.5: neither selected, and the second stops.
  EXPECT_EQ(feed(selector, {0.5, 0.52, 0.54}), std::make_pair(1, 3));
  ModelSelector lower(SelectMode::kBestVal, false, {1, 0.1});
  EXPECT_EQ(feed(lower, {1.0, 0.85, 0.8}), std::make_pair(2, 3));
}

TEST(SelectionMetricTest, EachTaskNamesItsMetric) {
  const auto metric_of = [](const std::string& yaml) {
    return selection_metric(parse_job("data: {generate: {nodes: 100, classes: 2}}\n" + yaml, "/", "job"));
  };
  EXPECT_EQ(metric_of("").name, "accuracy");
  EXPECT_TRUE(metric_of("").higher_is_better);
  EXPECT_EQ(metric_of("task: link_prediction\n").name, "mrr");
  EXPECT_EQ(metric_of("task: link_prediction\nmodel: {encoder: graphsage}\neval: {negatives: 1}\n").name, "auc");
  EXPECT_EQ(metric_of("task: link_prediction\nmodel: {encoder: graphsage}\neval: {negatives: all}\n").name, "mrr");

  EpochMetrics m;
  m.val_loss = 1.2;
  m.val_accuracy = 0.7;
  m.test_loss = 1.3;
  m.test_accuracy = 0.6;
  m.ranking = {{"valid.rmse", 0.9}, {"test.rmse", 0.95}};
  const SelectionMetric accuracy{"accuracy", true}, rmse{"rmse", false}, mrr{"mrr", true};
  EXPECT_EQ(accuracy.value(m, "val"), 0.7);
  EXPECT_EQ(accuracy.value(m, "test"), 0.6);
  EXPECT_EQ(rmse.value(m, "val"), 0.9);
  EXPECT_EQ(rmse.value(m, "test"), 0.95);
  EXPECT_EQ(mrr.value(m, "val"), std::nullopt);
  EXPECT_EQ(accuracy.value(EpochMetrics{}, "val"), std::nullopt);  // not evaluated
}

TEST(SelectionConfigTest, ErrorsNameTheField) {
  const auto parse = [](const std::string& train) {
    parse_job("data: {generate: {nodes: 100, classes: 2}}\ntrain: " + train + "\n", "/", "job.yaml");
  };
  testing::expect_usage_error([&] { parse("{select: best}"); }, "job.yaml: train.select: 'best' is not one of: last, best_val");
  testing::expect_usage_error([&] { parse("{early_stopping: {patience: -1}}"); },
                              "train.early_stopping.patience: must be at least 1, got -1");
  testing::expect_usage_error([&] { parse("{early_stopping: {patience: 0}}"); },
                              "train.early_stopping.patience: must be at least 1, got 0");
  testing::expect_usage_error([&] { parse("{early_stopping: {min_delta: 0.1}}"); },
                              "train.early_stopping.patience: missing");
  testing::expect_usage_error([&] { parse("{early_stopping: {patience: 2, min_delta: -0.1}}"); },
                              "train.early_stopping.min_delta: must be in [0, 1e+09], got -0.1");
  testing::expect_usage_error([&] { parse("{early_stopping: {patience: 2, delta: 0.1}}"); },
                              "train.early_stopping.delta: unknown field");
  testing::expect_usage_error([&] { parse("{select: last, early_stopping: {patience: 2}}"); },
                              "train.early_stopping: stops on the validation metric; it needs select: best_val");
  // Both are read, and written into the form the trainers are given.
  const JobConfig job = parse_job("data: {generate: {nodes: 100, classes: 2}}\ntrain: {select: best_val, "
                                  "early_stopping: {patience: 3, min_delta: 0.01}}\n", "/", "job.yaml");
  EXPECT_EQ(job.select, SelectMode::kBestVal);
  EXPECT_EQ(job.early_stopping.patience, 3);
  EXPECT_EQ(job.early_stopping.min_delta, 0.01);
  const std::string yaml = job_to_yaml(job);
  EXPECT_CONTAINS(yaml, "select: best_val");
  EXPECT_CONTAINS(yaml, "early_stopping: {patience: 3, min_delta: 0.01");
  EXPECT_FALSE(parse_job("data: {generate: {nodes: 100, classes: 2}}\n", "/", "job").select.has_value());
}

class SelectionJobTest : public ::testing::Test {
 protected:
  // Cora (2 parts, a small GraphSAGE) for `epochs`, with `train` added to its train section.
  JobConfig cora(int epochs, const std::string& train, const std::string& output) {
    return parse_job("data: {dataset: " + testing::dataset_path("cora") + ", format: linqs, num_partitions: 2}\n"
                     "model: {kind: graphsage, hidden: 16, layers: 2, dropout: 0.5}\n"
                     "sampling: {fanouts: [10, 5], batch_size: 64}\n"
                     "train: {epochs: " + std::to_string(epochs) + ", learning_rate: 0.01" +
                         (train.empty() ? "" : ", " + train) + "}\n"
                     "output: " + output + "\n",
                     tmp_.path(), "selection job");
  }
  testing::TempDir tmp_;
};

TEST_F(SelectionJobTest, BestValReportsKeepsAndLoadsTheEpochOfBestValidationAccuracy) {
  const JobConfig job = cora(8, "", "best");  // best_val: the default, Cora has validation nodes
  const JobReport report = testing::run_in_process(job);
  ASSERT_EQ(report.epochs.size(), 8u);
  size_t best = 0;
  for (size_t i = 1; i < report.epochs.size(); ++i) {
    if (report.epochs[i].val_accuracy > report.epochs[best].val_accuracy) best = i;
  }
  EXPECT_EQ(report.select, "best_val");
  EXPECT_EQ(report.metric, "accuracy");
  EXPECT_EQ(report.selected_epoch, report.epochs[best].epoch);
  EXPECT_EQ(report.selected_val, report.epochs[best].val_accuracy);
  EXPECT_EQ(report.selected_test, report.epochs[best].test_accuracy);
  EXPECT_FALSE(report.early_stopped);

  const nlohmann::json file = nlohmann::json::parse(read_file((fs::path(job.output) / kReportFileName).string()));
  EXPECT_EQ(file.at("select"), "best_val");
  EXPECT_EQ(file.at("selected_epoch").get<int>(), report.selected_epoch);
  EXPECT_EQ(file.at("val").at("accuracy").get<double>(), *report.selected_val);
  EXPECT_EQ(file.at("test").at("accuracy").get<double>(), *report.selected_test);
  EXPECT_EQ(file.at("last_epoch").get<int>(), 8);

  const std::optional<CheckpointPointer> selected = read_checkpoint_pointer((fs::path(job.output) / kSelectedDirName).string());
  ASSERT_TRUE(selected.has_value());
  EXPECT_EQ(selected->epoch, report.selected_epoch);
  EXPECT_EQ(read_checkpoint_pointer(job.output)->epoch, 8);  // the last, to resume from
  const TrainedRun run = load_trained_run(job.output);
  EXPECT_TRUE(run.selected);
  EXPECT_EQ(run.epoch, report.selected_epoch);
}

TEST_F(SelectionJobTest, LastKeepsTheLastEpoch) {
  const JobConfig job = cora(3, "select: last", "last");
  const JobReport report = testing::run_in_process(job);
  EXPECT_EQ(report.select, "last");
  EXPECT_EQ(report.selected_epoch, 3);
  EXPECT_EQ(report.selected_test, report.epochs.back().test_accuracy);
  EXPECT_EQ(load_trained_run(job.output).epoch, 3);
}

TEST_F(SelectionJobTest, EarlyStoppingEndsTheRun) {
  // No epoch after the first improves validation accuracy by half: the second stops.
  const JobConfig job = cora(30, "early_stopping: {patience: 1, min_delta: 0.5}", "early");
  const JobReport report = testing::run_in_process(job);
  ASSERT_EQ(report.epochs.size(), 2u);
  EXPECT_TRUE(report.early_stopped);
  EXPECT_EQ(report.selected_epoch, 1);
  EXPECT_EQ(read_metrics_file((fs::path(job.output) / kMetricsFileName).string()).size(), 2u);
  const nlohmann::json file = nlohmann::json::parse(read_file((fs::path(job.output) / kReportFileName).string()));
  EXPECT_TRUE(file.at("early_stopped").get<bool>());
  EXPECT_EQ(file.at("last_epoch").get<int>(), 2);
}

TEST_F(SelectionJobTest, ResumingKeepsTheSelectionOfTheEpochsBefore) {
  const JobConfig job = cora(6, "", "resumed");
  RunOptions first;
  first.stop_after_epoch = 3;
  const JobReport before = testing::run_in_process(job, first);
  RunOptions resume;
  resume.resume = true;
  const JobReport after = testing::run_in_process(job, resume);
  std::vector<EpochMetrics> epochs = read_metrics_file((fs::path(job.output) / kMetricsFileName).string());
  ASSERT_EQ(epochs.size(), 6u);
  size_t best = 0;
  for (size_t i = 1; i < epochs.size(); ++i) {
    if (epochs[i].val_accuracy > epochs[best].val_accuracy) best = i;
  }
  EXPECT_EQ(after.selected_epoch, epochs[best].epoch);
  EXPECT_EQ(after.selected_test, epochs[best].test_accuracy);
  EXPECT_EQ(load_trained_run(job.output).epoch, epochs[best].epoch);
  EXPECT_GE(before.selected_epoch, 1);
}

TEST_F(SelectionJobTest, BestValWithoutValidationIsRefused) {
  // AIFB trains on its whole training set: no validation nodes unless data.holdout.val.
  const JobConfig job = parse_job("data: {dataset: " + testing::dataset_path("aifb") +
                                      ", format: ntriples, num_partitions: 1}\n"
                                      "model: {kind: rgcn, hidden: 4, layers: 1, target_type: entity}\n"
                                      "sampling: {fanouts: [-1]}\ntrain: {epochs: 1, select: best_val}\noutput: aifb\n",
                                  tmp_.path(), "aifb job");
  testing::expect_usage_error([&] { testing::run_in_process(job); },
                              "train.select: best_val selects by the validation accuracy, but");
}

}  // namespace
}  // namespace partita
