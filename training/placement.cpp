#include "training/placement.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>

namespace partita {

namespace fs = std::filesystem;

namespace {

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

}  // namespace

std::vector<int64_t> partition_bytes(const std::string& dir, int parts) {
  std::vector<int64_t> bytes;
  for (int p = 0; p < parts; ++p) {
    const fs::path part = fs::path(dir) / ("part" + std::to_string(p));
    std::error_code ec;
    if (!fs::is_directory(part, ec)) throw Error(part.string() + ": missing (the job has " + std::to_string(parts) + " partitions)");
    int64_t total = 0;
    for (const auto& entry : fs::recursive_directory_iterator(part)) {
      if (entry.is_regular_file()) total += static_cast<int64_t>(entry.file_size());
    }
    bytes.push_back(total);
  }
  return bytes;
}

std::vector<int> place_partitions(const std::vector<int64_t>& bytes, const std::vector<NodeOffer>& nodes, int per_node,
                                  const std::vector<std::string>& part_keys) {
  if (per_node < 1) throw UsageError("cluster.partitions_per_node must be at least 1, got " + std::to_string(per_node));
  const int parts = static_cast<int>(bytes.size());
  const int live = static_cast<int>(nodes.size());
  if (live == 0) throw PlacementError("no live node in the cluster: join one (partita daemon --join HEAD:PORT)");
  if (parts > static_cast<int64_t>(live) * per_node) {
    const int needed = (parts + per_node - 1) / per_node;
    throw PlacementError("the job has " + std::to_string(parts) + " partition(s), at most " + std::to_string(per_node) +
                         " per node (cluster.partitions_per_node), and the cluster has " + std::to_string(live) +
                         " live node(s): it needs " + std::to_string(needed - live) +
                         " more node(s), or a higher cluster.partitions_per_node");
  }
  std::vector<int> order(parts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bytes[a] > bytes[b]; });
  std::vector<int64_t> left(live);
  std::vector<int> count(live, 0);
  for (int n = 0; n < live; ++n) left[n] = nodes[n].memory_available_bytes;
  std::vector<int> placement(parts, -1);
  for (int p : order) {
    const auto cached = [&](int n) {
      if (part_keys.empty()) return false;
      const auto& units = nodes[n].cached_units;
      return std::find(units.begin(), units.end(), part_keys.at(static_cast<size_t>(p))) != units.end();
    };
    int best = -1;
    for (int n = 0; n < live; ++n) {
      if (count[n] >= per_node || left[n] < bytes[p]) continue;
      const bool better = best < 0 || count[n] < count[best] ||
                          (count[n] == count[best] &&
                           (cached(n) != cached(best) ? cached(n) : left[n] > left[best]));
      if (better) best = n;
    }
    if (best < 0) {
      std::string offers;
      for (int n = 0; n < live; ++n) {
        offers += (offers.empty() ? "" : ", ") + nodes[n].name + " (" + nodes[n].address + ") " + mib(left[n]) + " left" +
                  (count[n] >= per_node ? " but full" : "") + " after " + std::to_string(count[n]) + " partition(s)";
      }
      throw PlacementError("partition " + std::to_string(p) + " needs " + mib(bytes[p]) +
                           " of memory and no live node has that much available with room for it (" + offers +
                           "): it needs a node with " + mib(bytes[p]) + " free");
    }
    placement[p] = best;
    left[best] -= bytes[p];
    ++count[best];
  }
  return placement;
}

}  // namespace partita
