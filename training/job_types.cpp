#include "training/job_types.h"

#include <filesystem>
#include <utility>

#include "base/file_util.h"

namespace partita {

namespace fs = std::filesystem;

double EpochMetrics::ranking_metric(const std::string& name) const {
  for (const auto& [key, value] : ranking) {
    if (key == name) return value;
  }
  throw Error("epoch " + std::to_string(epoch) + " has no metric '" + name + "'");
}

void JobReport::add_epoch(EpochMetrics m) {
  epochs.push_back(std::move(m));
  if (epochs.size() > kStepRecordsKept) {
    EpochMetrics& old = epochs[epochs.size() - 1 - kStepRecordsKept];
    std::vector<double>().swap(old.step_losses);
    std::vector<uint64_t>().swap(old.step_hashes);
  }
}

std::optional<CheckpointPointer> read_checkpoint_pointer(const std::string& output) {
  CheckpointPointer p;
  p.path = (fs::path(output) / kCheckpointFileName).string();
  const std::string text = read_file_if_exists(p.path);
  if (text.empty()) return std::nullopt;
  try {
    p.meta = nlohmann::json::parse(text);
    p.epoch = p.meta.at("epoch").get<int>();
    p.step = p.meta.value("step", int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    throw Error("the checkpoint pointer " + p.path + " is damaged: " + e.what());
  }
  if (p.epoch < 0 || p.step < 0) throw Error("the checkpoint pointer " + p.path + " names a negative epoch or step");
  return p;
}

}  // namespace partita
