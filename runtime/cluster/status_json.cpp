#include "runtime/cluster/status_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace partita::runtime {

namespace {

nlohmann::json job_array(const std::vector<JobStatus>& list) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const JobStatus& j : list) {
    jobs.push_back({{"id", j.id},
                    {"state", j.state},
                    {"nodes", j.nodes},
                    {"actors", j.actors},
                    {"submitted", j.submitted},
                    {"message", j.message},
                    {"output", j.output},
                    {"partitions", j.partitions},
                    {"epoch", j.epoch},
                    {"epochs", j.epochs},
                    {"step", j.step},
                    {"steps", j.steps},
                    {"steps_per_second", j.steps_per_second},
                    {"loss", j.loss},
                    {"accuracy", j.accuracy},
                    {"restarts", j.restarts}});
  }
  return jobs;
}

}  // namespace

std::vector<std::string> jobs_on_node(const ClusterStatus& status, const NodeStatus& n) {
  std::vector<std::string> ids;
  if (!n.alive) return ids;
  for (const JobStatus& j : status.jobs) {
    const bool here = std::find(j.nodes.begin(), j.nodes.end(), n.info.name) != j.nodes.end() ||
                      (!j.finished() && std::find(j.partitions.begin(), j.partitions.end(), n.info.address) != j.partitions.end());
    if (here) ids.push_back(j.id);
  }
  return ids;
}

std::string status_json(const ClusterStatus& status, const std::string& head) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeStatus& n : status.nodes) {
    std::map<std::string, int64_t> actors;
    for (const std::string& type : n.load.actor_types) ++actors[type];
    const nlohmann::json jobs = jobs_on_node(status, n);
    nodes.push_back({{"member", n.member},
                     {"name", n.info.name},
                     {"address", n.info.address},
                     {"version", n.info.version},
                     {"state", n.alive ? "alive" : "dead"},
                     {"lost", n.lost},
                     {"cores", n.info.cores},
                     {"memory_bytes", n.info.memory_bytes},
                     {"memory_available_bytes", n.load.memory_available_bytes},
                     {"disk_free_bytes", n.load.disk_free_bytes},
                     {"cached_units", n.load.cached_units},
                     {"ms_since_heartbeat", n.ms_since_heartbeat},
                     {"actors", actors},
                     {"jobs", jobs}});
  }
  const nlohmann::json jobs = job_array(status.jobs);
  const nlohmann::json out = {{"head", head},
                              {"version", status.version},
                              {"heartbeat_ms", status.heartbeat_ms},
                              {"heartbeat_timeout_ms", status.heartbeat_timeout_ms},
                              {"nodes", nodes},
                              {"jobs", jobs}};
  return out.dump(2);
}

std::string jobs_json(const std::vector<JobStatus>& jobs) { return job_array(jobs).dump(2); }

std::string job_json(const JobStatus& job) { return job_array({job})[0].dump(2); }

}  // namespace partita::runtime
