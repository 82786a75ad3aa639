#include "training/driver_base.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>

#include "base/file_util.h"
#include "runtime/host.h"
#include "training/metrics_record.h"

namespace partita {

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

void DriverBase::append_metrics(const EpochMetrics& m) const {
  const nlohmann::json line = m;  // training/metrics_record.h
  append_to_file((std::filesystem::path(job_.output) / kMetricsFileName).string(), line.dump() + "\n");
}

}  // namespace partita
