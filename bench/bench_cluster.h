// A cluster for the benchmarks that submit jobs to a head: the head and its nodes as
// `partita daemon` children (TLS with the bench's CA, as a cluster runs), either all on
// loopback or on separate hosts (network namespaces, netns/netns_cluster.h), the head and
// node 0 on host 0 and node i on host i % hosts. `bench network` compares the two;
// `bench chaos` injects faults into one on hosts and starts nodes in place of killed ones.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "netns/netns_cluster.h"
#include "runtime/daemon_child.h"

namespace partita::bench {

struct BenchCluster {
  const NetnsCluster* hosts = nullptr;  // nullptr: loopback
  std::string dir;                      // the nodes' caches; the head's runs folder, `runs`
  std::string runs;
  runtime::DaemonChild head;
  std::vector<runtime::DaemonChild> nodes;
  std::vector<int> node_hosts;  // the host of each of `nodes`

  // argv run where the head is (its host, or here): `partita status`, `submit`, ...
  std::vector<std::string> command(const std::vector<std::string>& argv) const;
};

// Starts `partita --log-level LEVEL daemon --listen LISTEN ARGS...` in host `host` (here
// when `hosts` is nullptr) and waits for its ready line; throws Error with its stderr if it
// fails.
runtime::DaemonChild start_member(const NetnsCluster* hosts, int host, const std::vector<std::string>& args,
                                  const std::string& listen, const std::string& level = "warn");

// Starts the head (on hosts: at host 0's address and `head_port`) with `head_args` and `n`
// nodes named node-0 ... node-(n-1), each with a staging cache of its own under `dir`, and
// waits (at most `bound`) until the head lists them all alive; throws Error naming how
// many were. The head logs at `head_level`, and so do its jobs' drivers (their driver.log).
std::unique_ptr<BenchCluster> start_cluster(const NetnsCluster* hosts, int n, const std::string& dir,
                                            int head_port = 7070, const std::string& head_level = "warn",
                                            std::chrono::seconds bound = std::chrono::seconds(60));

// Starts one more node, named `name`, in host `host` (ignored on loopback), with a cache of
// its own under the cluster's folder, joined to its head; appends it to `nodes`. Does not
// wait for the head to list it.
runtime::DaemonChild& add_node(BenchCluster& cluster, int host, const std::string& name);

// The nodes the head lists alive, asked with `partita status --json` where the head is; -1
// when the head does not answer within `timeout_seconds`.
int alive_nodes(const BenchCluster& cluster, double timeout_seconds);

}  // namespace partita::bench
