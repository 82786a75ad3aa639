#include "training/metrics_record.h"

#include <fstream>

#include "base/error.h"

namespace partita {

void to_json(nlohmann::json& line, const EpochMetrics& m) {
  if (!m.ranking.empty()) {  // a link-prediction epoch: its ranking metrics by name
    line = {{"epoch", m.epoch}, {"steps", m.steps}, {"seconds", m.seconds}, {"train_loss", m.train_loss}};
    for (const auto& [name, value] : m.ranking) line[name] = value;
    return;
  }
  line = {{"epoch", m.epoch},
          {"steps", m.steps},
          {"seconds", m.seconds},
          {"batches_per_second", m.batches_per_second},
          {"train_loss", m.train_loss},
          {"train_accuracy", m.train_accuracy},
          {"val_loss", m.val_loss},
          {"val_accuracy", m.val_accuracy},
          {"test_loss", m.test_loss},
          {"test_accuracy", m.test_accuracy}};
}

EpochMetrics epoch_metrics_from_json(const nlohmann::json& line) {
  if (!line.is_object()) throw Error("expected a JSON object, found " + std::string(line.type_name()));
  auto number = [&](const char* field) {
    auto it = line.find(field);
    if (it == line.end()) throw Error(std::string("missing field '") + field + "'");
    if (!it->is_number()) throw Error(std::string("field '") + field + "': expected a number, found " + it->type_name());
    return it->get<double>();
  };
  auto integer = [&](const char* field) {
    auto it = line.find(field);
    if (it == line.end()) throw Error(std::string("missing field '") + field + "'");
    if (!it->is_number_integer()) throw Error(std::string("field '") + field + "': expected an integer");
    return it->get<int64_t>();
  };
  EpochMetrics m;
  m.epoch = static_cast<int>(integer("epoch"));
  m.steps = integer("steps");
  m.seconds = number("seconds");
  if (!line.contains("batches_per_second")) {  // a link-prediction epoch
    m.train_loss = number("train_loss");
    for (const auto& [name, value] : line.items()) {
      if (name != "epoch" && name != "steps" && name != "seconds" && name != "train_loss") {
        if (!value.is_number()) throw Error("field '" + name + "': expected a number, found " + value.type_name());
        m.ranking.emplace_back(name, value.get<double>());
      }
    }
    return m;
  }
  m.batches_per_second = number("batches_per_second");
  m.train_loss = number("train_loss");
  m.train_accuracy = number("train_accuracy");
  m.val_loss = number("val_loss");
  m.val_accuracy = number("val_accuracy");
  m.test_loss = number("test_loss");
  m.test_accuracy = number("test_accuracy");
  return m;
}

std::vector<EpochMetrics> read_metrics_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw file_error(path, "cannot read");
  std::vector<EpochMetrics> epochs;
  std::string text;
  for (long number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      epochs.push_back(epoch_metrics_from_json(nlohmann::json::parse(text)));
    } catch (const nlohmann::json::exception& e) {
      throw file_error(path, number, std::string("not a JSON line: ") + e.what());
    } catch (const Error& e) {
      throw file_error(path, number, e.what());
    }
  }
  if (in.bad()) throw file_error(path, "read failed");
  return epochs;
}

}  // namespace partita
