// Placement by resources: which live node hosts each partition of a job submitted to a head
// (with the partition's trainers, samplers and allreduce members, as JobConfig places them).
// A partition needs its part's arrays in memory (`features.storage: memory` keeps them
// resident; mapped ones still fill the page cache), so a node takes a partition only while
// the bytes of its partitions fit the memory it reported available at its last heartbeat,
// and at most `cluster.partitions_per_node` of them. Partitions go largest first to the
// node with the fewest partitions so far, then one that has the part cached (a job's data
// is staged to its nodes, training/cluster_job.h), then the most memory left: one partition per node
// while there are nodes enough, the rest where they fit.
//
// A job that cannot be placed is refused with what is missing: how many nodes, or which
// partition needs how much memory next to what each node has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"

namespace partita {

// A live node as the head reports it.
struct NodeOffer {
  std::string name;
  std::string address;  // HOST:PORT of its daemon
  uint64_t member = 0;  // the head's member id (one uninterrupted life of the node)
  int64_t memory_available_bytes = 0;
  int cores = 0;
  std::vector<std::string> cached_units;  // the keys of the data staged there (runtime/staging/)
};

// The job cannot be placed on the nodes offered; the message says what is missing.
class PlacementError : public Error {
 public:
  using Error::Error;
};

// The bytes of each part<i>/ of the partition folder `dir` (its `parts` parts): what hosting
// the partition takes in memory. Throws Error naming a missing part folder.
std::vector<int64_t> partition_bytes(const std::string& dir, int parts);

// The node (index into `nodes`) of each partition, whose sizes are `bytes`. With
// `part_keys` (each partition's staging key, runtime/staging/folder_manifest.h), a node
// that has the partition's part in its cache comes before one with more memory left (but
// not before one with fewer partitions): a job whose data is cached starts without
// copying. Throws PlacementError as above; UsageError for per_node < 1.
std::vector<int> place_partitions(const std::vector<int64_t>& bytes, const std::vector<NodeOffer>& nodes, int per_node,
                                  const std::vector<std::string>& part_keys = {});

}  // namespace partita
