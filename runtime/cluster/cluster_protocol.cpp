#include "runtime/cluster/cluster_protocol.h"

#include <caf/actor_system_config.hpp>

namespace partita::runtime {

void add_cluster_types(caf::actor_system_config& config) {
  config.add_message_type<NodeInfo>("partita.NodeInfo");
  config.add_message_type<NodeLoad>("partita.NodeLoad");
  config.add_message_type<NodeStatus>("partita.NodeStatus");
  config.add_message_type<StepSample>("partita.StepSample");
  config.add_message_type<JobStatus>("partita.JobStatus");
  config.add_message_type<ClusterStatus>("partita.ClusterStatus");
}

}  // namespace partita::runtime
