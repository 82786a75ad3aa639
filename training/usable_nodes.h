// Which live nodes a job's next attempt may place work on. A node lost by an earlier
// attempt stays out until it comes back as a new member of the cluster (a member number
// above the one it was lost with): a node that answers again under its old membership may
// still hold the lost attempt's actors or processes. Shared by the YAML and Python job
// drivers (training/cluster_job.cpp, training/python_job.cpp). Internal to training/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "training/placement.h"

namespace partita {

// `live` without the nodes of `lost` (address -> member number when lost) that have not
// rejoined since, in `live`'s order.
inline std::vector<NodeOffer> usable_nodes(const std::vector<NodeOffer>& live,
                                           const std::map<std::string, uint64_t>& lost) {
  std::vector<NodeOffer> nodes;
  for (const NodeOffer& n : live) {
    auto it = lost.find(n.address);
    if (it == lost.end() || n.member > it->second) nodes.push_back(n);
  }
  return nodes;
}

}  // namespace partita
