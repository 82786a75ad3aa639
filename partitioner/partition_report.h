// What `partita inspect` shows: per-part sizes, edge cut, balance and feature shapes.
#pragma once

#include <string>

#include "partitioner/partition_format.h"

namespace partita {

struct BalanceFigures {
  double nodes = 0;  // largest part / mean part; 1.0 is perfect
  double edges = 0;
  double train = 0;
};

BalanceFigures balance_of(const PartitionMeta& meta);

// A fixed-width table for terminals.
std::string format_report_table(const PartitionMeta& meta);
// The same figures as one JSON document.
std::string format_report_json(const PartitionMeta& meta);

}  // namespace partita
