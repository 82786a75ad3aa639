#include "bench/network_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/file_util.h"
#include "netns/netns_cluster.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/bench_cluster.h"
#include "bench/input_graph.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "graph/epoch_plan.h"
#include "graph/neighbor_sampler.h"
#include "partitioner/partition_stores.h"
#include "training/metrics_record.h"

namespace partita::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kJobSeconds = 900;         // ends a job that hangs
constexpr int kShapeBatches = 8;            // batches sampled for the per-batch sizes
constexpr int kTrips = 200;                 // TCP round trips timed on the wire

std::string fanouts_text(const std::vector<int64_t>& fanouts) {
  std::string text;
  for (int64_t f : fanouts) text += (text.empty() ? "" : ",") + std::to_string(f);
  return text;
}

struct JobTime {
  double seconds_per_epoch = 0;  // median of the epochs after the first
  int64_t steps = 0;
};

// Submits `job_file` to the cluster's head, follows it to its end (as `partita submit`
// without --detach does), reads its epochs.
JobTime run_job(const BenchCluster& c, const std::string& job_file, int epochs) {
  ProcessResult r = run_process(c.command({self_executable(), "--log-level", "warn", "submit", job_file, "--address",
                                           c.head.address}),
                                kJobSeconds);
  std::smatch id;
  if (r.exit_code != 0 || !std::regex_search(r.out, id, std::regex("job (\\S+) submitted to"))) {
    throw Error("bench network: the job on " + c.head.address + (r.timed_out ? " timed out" : " failed") + ": " +
                r.out + r.err);
  }
  const std::vector<EpochMetrics> got = read_metrics_file(c.runs + "/" + id[1].str() + "/" + kMetricsFileName);
  if (static_cast<int>(got.size()) != epochs) {
    throw Error("bench network: job " + id[1].str() + " recorded " + std::to_string(got.size()) + " epochs, not " +
                std::to_string(epochs));
  }
  std::vector<double> seconds;
  for (size_t e = 1; e < got.size(); ++e) seconds.push_back(got[e].seconds);
  return {median(seconds), got.back().steps};
}

// Medians of nodes and edges per batch: the first batches of an epoch of the graph in one
// part (batches do not depend on the partitioning).
std::pair<double, double> batch_shape(const std::string& one_part, const NetworkBenchOptions& o) {
  const PartitionFolder folder(one_part);
  const PartitionData data = folder.load_part(0);
  const PartitionStores stores = open_partition_stores(one_part, 0);
  SamplerConfig config;
  config.fanouts.assign(static_cast<size_t>(std::max(1, stores.topology->num_edge_types())),
                        std::vector<int>(o.fanouts.begin(), o.fanouts.end()));
  NeighborSampler sampler(*stores.topology, config);
  const EpochPlan plan = plan_epoch(data.train_idx.as<int64_t>(), o.batch_size, o.seed, 0);
  std::vector<double> nodes, edges;
  for (int64_t b = 0; b < std::min<int64_t>(kShapeBatches, plan.num_batches()); ++b) {
    const MiniBatch batch = sampler.sample(plan.batch(b), plan.key(b));
    nodes.push_back(static_cast<double>(batch.node_ids.size()));
    edges.push_back(static_cast<double>(batch.row.size()));
  }
  return {median(nodes), median(edges)};
}

// A socket whose blocking calls give up after 10 s.
int bounded_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error("bench network: cannot make a socket");
  const timeval bound{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  return fd;
}

sockaddr_in socket_address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// The median of kTrips TCP round trips (a byte each way, TCP_NODELAY) from host 0 to host
// 1, each end on a thread of this process that entered its host.
double wire_round_trip_ms(const NetnsCluster& hosts) {
  constexpr int kPort = 7171;
  std::string echo_failure, ping_failure;
  std::atomic<int> listener{-1};
  std::thread echo([&] {
    try {
      hosts.enter(1);
      const int fd = bounded_socket();
      listener = fd;
      const sockaddr_in a = socket_address(hosts.address(1), kPort);
      if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) {
        throw Error("bench network: cannot listen on " + hosts.address(1));
      }
      const int peer = ::accept(fd, nullptr, nullptr);  // bounded by SO_RCVTIMEO
      if (peer < 0) throw Error("bench network: no round-trip connection within 10 s");
      char byte = 0;
      while (::recv(peer, &byte, 1, 0) == 1 && ::send(peer, &byte, 1, MSG_NOSIGNAL) == 1) {
      }
      ::close(peer);
    } catch (const Error& e) {
      echo_failure = e.what();
    }
  });
  std::vector<double> trips;
  std::thread ping([&] {
    try {
      hosts.enter(0);
      const ScopedFd socket(bounded_socket());  // closed also when a trip fails: ends the echo loop
      const int fd = socket.get();
      const sockaddr_in a = socket_address(hosts.address(1), kPort);
      const auto until = Clock::now() + std::chrono::seconds(10);
      while (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
        if (Clock::now() > until) throw Error("bench network: cannot connect to " + hosts.address(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      char byte = 1;
      for (int t = 0; t < kTrips; ++t) {
        Stopwatch watch;
        if (::send(fd, &byte, 1, MSG_NOSIGNAL) != 1 || ::recv(fd, &byte, 1, 0) != 1) {
          throw Error("bench network: a round trip on the wire failed");
        }
        trips.push_back(watch.seconds() * 1e3);
      }
    } catch (const Error& e) {
      ping_failure = e.what();
      if (listener >= 0) ::shutdown(listener, SHUT_RDWR);  // ends a wait in accept
    }
  });
  ping.join();
  echo.join();
  if (listener >= 0) ::close(listener);
  if (!ping_failure.empty()) throw Error(ping_failure);
  if (!echo_failure.empty()) throw Error(echo_failure);
  return median(trips);
}

std::string write_job(const std::string& dir, const std::string& parts, const NetworkBenchOptions& o) {
  const std::string file = dir + "/network.yaml";
  std::ofstream job(file);
  job << "data: {partitions: " << parts << "}\n"
      << "model: {kind: graphsage, hidden: " << o.hidden << ", layers: " << o.fanouts.size() << ", dropout: 0.5}\n"
      << "sampling: {fanouts: [" << fanouts_text(o.fanouts) << "], batch_size: " << o.batch_size << "}\n"
      << "train: {epochs: " << o.epochs << ", seed: " << o.seed << "}\n"
      << "cluster: {partitions_per_node: 1}\n"
      << "output: " << dir << "/unused\n";
  if (!job) throw Error("bench network: cannot write " + file);
  return file;
}

}  // namespace

void run_network_bench(const NetworkBenchOptions& o) {
  if (o.epochs < 2) throw UsageError("--epochs must be at least 2: the first is a warm-up");
  for (int n : o.hosts) {
    if (n < 2) throw UsageError("--hosts: a cluster of " + std::to_string(n) + " host(s); at least 2");
  }
  {  // before the graphs are generated and partitioned (minutes): can this process make hosts?
    const NetnsCluster probe(2, NetnsLink::kWire);
    if (!probe.unavailable().empty()) throw Error("bench network: no separate hosts: " + probe.unavailable());
  }
  Workdir workdir(o.work_dir, "network-bench");
  std::ostringstream params;
  params << "rmat nodes " << o.num_nodes << " degree " << o.avg_degree << " features " << o.feature_dim << " classes "
         << o.num_classes << " train " << o.train_nodes << " seed " << o.seed << "\n";
  auto graph = [&] {
    RmatOptions rmat;
    rmat.num_nodes = o.num_nodes;
    rmat.avg_degree = o.avg_degree;
    rmat.feature_dim = o.feature_dim;
    rmat.num_classes = o.num_classes;
    rmat.split.num_train = o.train_nodes;
    rmat.split.val_fraction = 0.01;  // random labels: evaluation is not what is measured
    rmat.split.test_fraction = 0.01;
    rmat.seed = o.seed;
    return generate_rmat(rmat);
  };
  auto partitioned = [&](int parts) {
    PartitionOptions options;
    options.num_parts = parts;
    options.seed = o.seed;
    return partitioned_graph(workdir, "parts-" + std::to_string(parts), params.str(), options, graph);
  };
  const std::string one_part = partitioned(1);
  const auto [nodes, edges] = batch_shape(one_part, o);
  const PartitionMeta meta = PartitionFolder(one_part).meta();
  std::printf("RMAT %lld nodes, %lld directed edges, %lld float32 features; %zu-layer GraphSAGE hidden %lld, fanouts "
              "[%s], batch %lld: %.0f nodes, %.0f edges per batch (medians of %d); %d epochs per job, the first a "
              "warm-up; %d interleaved rounds\n",
              static_cast<long long>(meta.num_nodes), static_cast<long long>(meta.num_edges),
              static_cast<long long>(meta.feature_dim), o.fanouts.size(), static_cast<long long>(o.hidden), fanouts_text(o.fanouts).c_str(),
              static_cast<long long>(o.batch_size), nodes, edges, kShapeBatches, o.epochs, o.rounds);
  const std::string paced = o.rate.empty() ? "no rate limit" : o.rate;
  char delayed[64];
  std::snprintf(delayed, sizeof delayed, "%g ms, %s", o.delay_ms, paced.c_str());

  struct Summary {
    int hosts;
    double loopback, rate, delay;
    double rate_ratio, delay_ratio;  // medians of the rounds' ratios to (a)
  };
  std::vector<Summary> summaries;
  for (int n : o.hosts) {
    const std::string parts = partitioned(n);
    const std::string dir = workdir.path() + "/hosts-" + std::to_string(n);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string job = write_job(dir, parts, o);
    NetnsCluster hosts(n, NetnsLink::kWire);
    if (!hosts.unavailable().empty()) throw Error("bench network: no separate hosts: " + hosts.unavailable());
    std::unique_ptr<BenchCluster> loopback = start_cluster(nullptr, n, dir + "/loopback");
    std::unique_ptr<BenchCluster> separate = start_cluster(&hosts, n, dir + "/hosts");

    hosts.set_wire(0, o.rate);
    const double rate_trip = wire_round_trip_ms(hosts);
    hosts.set_wire(o.delay_ms, o.rate);
    const double delay_trip = wire_round_trip_ms(hosts);
    std::printf("\n%d hosts (head and node 0 on host 0); the wire's TCP round trip, median of %d: %.3f ms (%s), "
                "%.3f ms (%s)\n",
                n, kTrips, rate_trip, paced.c_str(), delay_trip, delayed);
    std::printf("%-6s %-28s %10s %7s\n", "round", "network", "s/epoch", "steps");
    std::vector<double> a, b, c;
    for (int round = 1; round <= o.rounds; ++round) {
      const struct {
        const char* name;
        BenchCluster* cluster;
        double delay;
        std::vector<double>* into;
      } modes[] = {{"(a) loopback", loopback.get(), 0, &a},
                   {"(b) hosts", separate.get(), 0, &b},
                   {"(c) hosts", separate.get(), o.delay_ms, &c}};
      for (const auto& mode : modes) {
        if (mode.cluster == separate.get()) hosts.set_wire(mode.delay, o.rate);
        const JobTime t = run_job(*mode.cluster, job, o.epochs);
        mode.into->push_back(t.seconds_per_epoch);
        char name[96];
        std::snprintf(name, sizeof name, "%s%s%s", mode.name,
                      mode.cluster == separate.get() ? ", " : "",
                      mode.cluster == separate.get() ? (mode.delay > 0 ? delayed : paced.c_str()) : "");
        std::printf("%-6d %-28s %10.2f %7lld\n", round, name, t.seconds_per_epoch, static_cast<long long>(t.steps));
        std::fflush(stdout);
      }
    }
    std::vector<double> b_ratio, c_ratio;
    for (size_t r = 0; r < a.size(); ++r) {
      b_ratio.push_back(b[r] / a[r]);
      c_ratio.push_back(c[r] / a[r]);
    }
    summaries.push_back({n, median(a), median(b), median(c), median(b_ratio), median(c_ratio)});
  }
  std::printf("\nmedians; (x)/(a): the median of the rounds' ratios\n%-6s %12s %12s %8s %12s %8s\n", "hosts",
              "(a) s/epoch", "(b) s/epoch", "(b)/(a)", "(c) s/epoch", "(c)/(a)");
  for (const Summary& s : summaries) {
    std::printf("%-6d %12.2f %12.2f %8.2f %12.2f %8.2f\n", s.hosts, s.loopback, s.rate, s.rate_ratio, s.delay,
                s.delay_ratio);
  }
  std::printf("(a) loopback; (b) the hosts, the wire at %s; (c) the same with %g ms one way\n", paced.c_str(),
              o.delay_ms);
}

}  // namespace partita::bench
