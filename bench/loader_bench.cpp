#include "bench/loader_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>

#include "actors/distributed_sampler.h"
#include "actors/partition_actor.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/random.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "messages/codec.h"
#include "partitioner/generators.h"
#include "partitioner/partition.h"
#include "partitioner/partition_stores.h"
#include "runtime/client.h"

namespace partita::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// PyG's distributed loader, 2 ranks, on this machine class (quoted in the issue).
constexpr double kPygDistributedBatchesPerSecond = 4.4;

struct Parts {
  std::vector<std::shared_ptr<const Topology>> topology;
  std::vector<std::shared_ptr<const FeatureStore>> features;
  std::unique_ptr<PartitionFolder> folder;
};

Parts open_parts(const std::string& dir) {
  Parts p;
  p.folder = std::make_unique<PartitionFolder>(dir);
  for (int i = 0; i < p.folder->meta().num_parts; ++i) {
    p.topology.push_back(std::make_shared<const Topology>(load_topology(*p.folder, i)));
    p.features.push_back(std::make_shared<const FeatureStore>(load_features(*p.folder, i)));
  }
  return p;
}

struct Rate {
  double batches_per_second = 0;
  double edges_per_second = 0;
};

// The trainer of partition 0: its own training seeds, as a loader would give them.
Rate measure(DistributedSampler& sampler, const Topology& own, const LoaderBenchOptions& o) {
  std::vector<int64_t> seeds;
  for (int64_t g = own.node_begin(); g < own.node_end(); ++g) seeds.push_back(g);
  Rng rng(o.seed);
  shuffle(seeds, rng);
  auto batch = [&](int b) {
    size_t offset = (static_cast<size_t>(b) * o.batch_size) % (seeds.size() - o.batch_size);
    return Span<const int64_t>(seeds.data() + offset, o.batch_size);
  };
  // The trainer hands its batch back for reuse, as a loop over batches does.
  MiniBatch mb;
  for (int b = 0; b < 2; ++b) sampler.sample_into(batch(b), {o.seed, 0, static_cast<uint64_t>(b)}, mb);
  int64_t edges = 0;
  Stopwatch watch;
  for (int b = 2; b < 2 + o.num_batches; ++b) {
    sampler.sample_into(batch(b), {o.seed, 0, static_cast<uint64_t>(b)}, mb);
    edges += static_cast<int64_t>(mb.row.size());
  }
  double seconds = watch.seconds();
  return {o.num_batches / seconds, static_cast<double>(edges) / seconds};
}

// Moves `bytes` through a loopback TCP connection `rounds` times; returns bytes/s.
double raw_tcp_bytes_per_second(size_t bytes, int rounds) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener, 1) != 0 || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw Error("raw TCP baseline: cannot listen on loopback: " + errno_text());
  }
  ScopedFd listen_fd(listener);
  std::vector<char> out(bytes, 1), in(bytes);
  std::thread sender([&] {
    int fd = ::accept(listen_fd.get(), nullptr, nullptr);
    if (fd < 0) return;
    ScopedFd conn(fd);
    for (int r = 0; r < rounds + 1; ++r) write_all(conn.get(), "raw TCP baseline", out.data(), out.size());
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ScopedFd conn(fd);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    sender.join();
    throw Error("raw TCP baseline: cannot connect on loopback: " + errno_text());
  }
  read_exactly(conn.get(), "raw TCP baseline", in.data(), in.size());  // warm-up
  Stopwatch watch;
  for (int r = 0; r < rounds; ++r) read_exactly(conn.get(), "raw TCP baseline", in.data(), in.size());
  double seconds = watch.seconds();
  sender.join();
  return static_cast<double>(bytes) * rounds / seconds;
}

// Feature replies of `rows` random rows from the remote partition actor; returns bytes/s of
// feature payload received (request, remote gather, encode, transfer, decode).
double remote_feature_bytes_per_second(caf::actor_system& system, const partition_actor& remote,
                                       const Topology& remote_part, int64_t rows, int rounds,
                                       size_t* reply_bytes) {
  std::vector<int64_t> ids(rows);
  Rng rng(7);
  for (auto& id : ids) id = remote_part.node_begin() + static_cast<int64_t>(rng.below(remote_part.num_nodes()));
  Encoder encoder;
  Encoded request;
  encoder.feature_request(1, "node", "x", ids, request.bytes);
  caf::scoped_actor self{system};
  auto ask = [&] {
    size_t got = 0;
    self->request(remote, 30s, feature_atom::value, request)
        .receive([&](const Encoded& reply) { got = decode_feature_reply(Span<const char>(reply.bytes)).values.bytes; },
                 [&](caf::error& e) { throw Error("remote feature request failed: " + system.render(e)); });
    return got;
  };
  *reply_bytes = ask();  // warm-up
  Stopwatch watch;
  size_t total = 0;
  for (int r = 0; r < rounds; ++r) total += ask();
  return static_cast<double>(total) / watch.seconds();
}

std::string start_daemon(ChildProcess& daemon) {
  const std::regex ready(R"(partita daemon listening on (127\.0\.0\.1:[0-9]+)\n)");
  for (int i = 0; i < 3000; ++i) {
    std::smatch match;
    std::string out = daemon.output_so_far();
    if (std::regex_search(out, match, ready)) return match[1];
    if (!daemon.running()) break;
    std::this_thread::sleep_for(10ms);
  }
  throw Error("the benchmark's daemon did not start: " + daemon.errors_so_far());
}

}  // namespace

void run_loader_bench(const LoaderBenchOptions& o) {
  const char* tmp = std::getenv("TMPDIR");
  std::string workdir = std::string(tmp != nullptr ? tmp : "/tmp") + "/partita-loader-bench-" + std::to_string(::getpid());
  fs::create_directories(workdir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{workdir};

  {
    RmatOptions rmat;
    rmat.num_nodes = o.num_nodes;
    rmat.avg_degree = o.avg_degree;
    rmat.feature_dim = o.feature_dim;
    rmat.num_classes = 16;
    rmat.seed = o.seed;
    Dataset d = generate_rmat(rmat);
    for (int k : {1, 2}) {
      PartitionOptions options;
      options.num_parts = k;
      options.seed = o.seed;
      partition_dataset(d, options, workdir + "/parts" + std::to_string(k));
    }
  }
  SamplerConfig config;
  config.fanouts = {o.fanouts};
  runtime::ActorSystemOptions system_options;
  add_protocol_types(system_options);
  runtime::ActorSystem system(system_options);

  Parts one = open_parts(workdir + "/parts1");
  Parts two = open_parts(workdir + "/parts2");
  std::printf("\nRMAT %lld nodes, %.0f directed edges, %lld float32 features; fanouts [%d,%d,%d], batch %lld; "
              "%d batches per row, one sampler thread (features and labels included)\n\n",
              (long long)o.num_nodes, o.num_nodes * o.avg_degree, (long long)o.feature_dim, o.fanouts[0],
              o.fanouts.size() > 1 ? o.fanouts[1] : 0, o.fanouts.size() > 2 ? o.fanouts[2] : 0,
              (long long)o.batch_size, o.num_batches);
  std::printf("%-58s %10s %14s %10s\n", "configuration", "batches/s", "edges/s", "vs (a)");

  DistributedSampler single(system, one.folder->book(), {PartitionRef::local(one.topology[0], one.features[0])},
                            config, 60s);
  Rate a = measure(single, *one.topology[0], o);
  std::printf("%-58s %10.1f %13.2fM %10.2f\n", "(a) 1 partition, in-process", a.batches_per_second,
              a.edges_per_second / 1e6, 1.0);

  partition_actor local_actor = spawn_partition_actor(system, two.topology[1], two.features[1], config);
  DistributedSampler in_process(system, two.folder->book(),
                                {PartitionRef::local(two.topology[0], two.features[0]), PartitionRef::remote(local_actor)},
                                config, 60s);
  Rate b = measure(in_process, *two.topology[0], o);
  std::printf("%-58s %10.1f %13.2fM %10.2f\n", "(b) 2 partitions in-process (partition 1 an actor)",
              b.batches_per_second, b.edges_per_second / 1e6, b.batches_per_second / a.batches_per_second);
  caf::anon_send_exit(local_actor, caf::exit_reason::user_shutdown);

  ChildProcess daemon({self_executable(), "--log-level", "warn", "daemon", "--listen", "127.0.0.1:0"});
  std::string address = start_daemon(daemon);
  runtime::DaemonConnection connection = runtime::DaemonConnection::connect(system, address, 30s);
  std::string fanouts;
  for (int f : o.fanouts) fanouts += (fanouts.empty() ? "" : ",") + std::to_string(f);
  partition_actor remote = caf::actor_cast<partition_actor>(connection.spawn(
      "partition", {{"dir", workdir + "/parts2"}, {"part", "1"}, {"fanouts", fanouts}}, 120s));
  DistributedSampler across(system, two.folder->book(),
                            {PartitionRef::local(two.topology[0], two.features[0]), PartitionRef::remote(remote)},
                            config, 60s);
  Rate c = measure(across, *two.topology[0], o);
  std::printf("%-58s %10.1f %13.2fM %10.2f\n", "(c) 2 partitions, partition 1 on a daemon over loopback",
              c.batches_per_second, c.edges_per_second / 1e6, c.batches_per_second / a.batches_per_second);
  std::printf("%-58s %10.1f %14s %10s   (c) / PyG: %.1fx\n", "    PyG distributed loader, 2 ranks (quoted)",
              kPygDistributedBatchesPerSecond, "", "", c.batches_per_second / kPygDistributedBatchesPerSecond);

  size_t reply_bytes = 0;
  double remote_rate = remote_feature_bytes_per_second(system, remote, *two.topology[1], 56000, 10, &reply_bytes);
  double tcp_rate = raw_tcp_bytes_per_second(reply_bytes, 10);
  std::printf("\nremote feature transfer (%.1f MB replies from the daemon): %.2f GB/s; raw loopback TCP, "
              "same bytes: %.2f GB/s; ratio %.2f\n",
              reply_bytes / 1e6, remote_rate / 1e9, tcp_rate / 1e9, remote_rate / tcp_rate);
  connection.request_shutdown();
  daemon.wait(30);
}

}  // namespace partita::bench
