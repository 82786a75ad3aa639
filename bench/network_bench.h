// `partita bench network`: what the network costs a training epoch. The same job,
// submitted to a head, on partitions = N hosts (N = 2, then 3), over loopback and over
// separate hosts (network namespaces, netns/netns_cluster.h) joined by a wire of 10 Gbit/s,
// with and without 1 ms of delay on every host's way out (2 ms round trips, as
// `tc qdisc add dev eth0 root netem delay 1ms rate 10gbit` on each host gives).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace partita::bench {

struct NetworkBenchOptions {
  std::vector<int> hosts{2, 3};  // cluster sizes: partitions = nodes = hosts
  int64_t num_nodes = 1 << 18;   // RMAT (a,b,c = .57,.19,.19, directed), as `bench train --nodes`
  double avg_degree = 20;
  int64_t feature_dim = 128;
  int64_t num_classes = 16;
  int64_t train_nodes = 20480;
  int64_t hidden = 256;
  std::vector<int64_t> fanouts{15, 10, 5};
  int64_t batch_size = 1024;
  int epochs = 3;           // per job; the first is a warm-up, the rest are measured
  int rounds = 3;           // interleaved rounds of every network; medians are reported
  double delay_ms = 1;      // one way, on every host's way out
  std::string rate = "10gbit";
  std::string work_dir;     // keeps the partitions; default: a temporary folder
  uint64_t seed = 1;
};

// For each N in `hosts`: partitions the graph into N parts (kept in work_dir), then starts
// two clusters of a head and N nodes (`partita daemon` children, TLS with the bench's CA,
// each node with a staging cache of its own):
//   loopback  the head and the nodes on 127.0.0.1;
//   hosts     N network namespaces joined by the wire (NetnsLink::kWire): the head and node
//             0 on host 0, node i on host i; the commands run in host 0.
// Each round submits the job (`partita submit`, followed to its end: GraphSAGE, partitions_per_node 1,
// `epochs` epochs) to (a) loopback, (b) the hosts with the wire at `rate` and no delay,
// (c) the hosts with `delay_ms` and `rate`; its epoch time is the median of the epochs after
// the first, from the run's metrics.jsonl (training only, evaluation excluded). The data is
// staged to the nodes by their first job and reused by the rest. Prints nodes and edges per
// batch (sampled from the graph in one part, as an epoch's first batches), each job, the
// wire's measured TCP round trip, and per N the medians and the medians of the rounds'
// (b)/(a) and (c)/(a).
//
// Needs root, iproute2 and /dev/net/tun (the hosts); without them, throws Error saying why.
// Every child process and namespace is gone when this returns or throws.
void run_network_bench(const NetworkBenchOptions& options);

}  // namespace partita::bench
