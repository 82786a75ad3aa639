// An epoch's record as metrics.jsonl holds it: one JSON object per line, one line per
// epoch, written by the job driver after the epoch's checkpoint. The one serialisation of
// EpochMetrics: the driver writes it, the status page (dashboard/) serves it, and
// `partita plot` reads it back, so the three never disagree on a field.
//
//   {"epoch":1,"steps":40,"seconds":2.1,"batches_per_second":38.1,"train_loss":1.2,
//    "train_accuracy":0.61,"val_loss":1.1,"val_accuracy":0.66,"test_loss":1.1,"test_accuracy":0.65}
//
// A link-prediction epoch (EpochMetrics::ranking not empty) has epoch, steps, seconds and
// train_loss, then its ranking metrics by name ("test.mrr", "test.hits@10", ...).
//
// Per-step losses and hashes are not part of the line (EpochMetrics keeps them for the
// driver's callers); the file stays one short line per epoch.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "training/job_types.h"

namespace partita {

// The metrics file's name inside a job's OUTPUT folder.
inline constexpr const char* kMetricsFileName = "metrics.jsonl";

// The line's object (what nlohmann's `json j = metrics;` calls).
void to_json(nlohmann::json& line, const EpochMetrics& m);

// Reads one line's object back. Throws Error naming the missing or mistyped field.
EpochMetrics epoch_metrics_from_json(const nlohmann::json& line);

// Every epoch of a metrics file, in file order. Throws Error "PATH: cannot read" for a
// missing file, and "PATH:LINE: ..." for a line that is not JSON or lacks a field (blank
// lines are skipped; a run that holds no epoch yet gives an empty vector).
std::vector<EpochMetrics> read_metrics_file(const std::string& path);

}  // namespace partita
