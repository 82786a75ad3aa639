#include "bench/staging_bench.h"

#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "base/error.h"
#include "base/stopwatch.h"
#include "bench/input_graph.h"
#include "bench/raw_tcp.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "partitioner/partition_format.h"
#include "runtime/staging/stage_cache.h"
#include "runtime/staging/stage_server.h"
#include "runtime/tls/credentials.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace partita::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr auto kDeadline = 120s;

// The process's CPU seconds so far (every thread: both ends of a transfer). On a shared
// machine a rate follows the CPU share the process gets; the CPU per byte is the steadier
// figure, and says what a faster machine would gain.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Runs `what`, returning its seconds and adding its CPU seconds per GB of `bytes` to `cpu`.
template <typename F>
double measured(F&& what, uint64_t bytes, std::vector<double>& cpu) {
  const double start = process_cpu_seconds();
  const double seconds = what();
  cpu.push_back((process_cpu_seconds() - start) / (static_cast<double>(bytes) / 1e9));
  return seconds;
}

// (a) `bytes` over a request channel in replies of at most the staging chunk, from memory.
double channel_seconds(uint64_t bytes) {
  const uint64_t chunk = runtime::wire::kMaxStageChunkBytes;
  std::vector<char> source(static_cast<size_t>(std::min(bytes, chunk)), 1);
  runtime::RequestServer server(
      "127.0.0.1", 1,
      [&source] {
        runtime::ChannelService service;
        service.answer = [&source](Span<const char> request, runtime::ChannelReply& reply) {
          uint64_t n = 0;
          std::memcpy(&n, request.data(), sizeof(n));
          reply.head_length = 0;
          reply.body_bytes = n;
          reply.fill = [&source](char* piece, uint64_t offset, uint64_t size) {
            std::memcpy(piece, source.data() + offset, size);
          };
        };
        service.refuse = [](const std::string&, runtime::ChannelReply& reply) { reply.head_length = 0; };
        return service;
      },
      kDeadline, "staging bench");
  runtime::RequestClient client("staging bench");
  Stopwatch watch;  // connecting is part of a staging too
  client.open(server.open(), 1, kDeadline);
  std::vector<char> head, buffer(4 << 20);
  for (uint64_t left = bytes; left > 0;) {
    const uint64_t n = std::min(left, chunk);
    client.send(Span<const char>(reinterpret_cast<const char*>(&n), sizeof(n)), kDeadline);
    uint64_t body = 0;
    client.receive_head(head, body, kDeadline);
    for (uint64_t got = 0; got < body;) {
      const uint64_t piece = std::min<uint64_t>(body - got, buffer.size());
      client.receive_body(buffer.data(), piece, kDeadline);
      got += piece;
    }
    left -= n;
  }
  return watch.seconds();
}

}  // namespace

void run_staging_bench(const StagingBenchOptions& o) {
  Workdir workdir(o.workdir, "staging-bench");
  const std::string dir = rmat_in_two_random_parts(workdir, o.num_nodes, o.avg_degree, o.feature_dim, o.seed);
  const int parts = read_partition_meta(dir).num_parts;
  std::vector<runtime::ServedUnit> served{
      {dir, runtime::describe_unit(dir, "", {kMetaFile, "partition_book.bin"})}};
  for (int p = 0; p < parts; ++p) {
    const std::string name = "part" + std::to_string(p);
    served.push_back({dir + "/" + name, runtime::describe_unit(dir + "/" + name, name)});
  }
  std::vector<runtime::StagedUnit> manifest;
  uint64_t bytes = 0;
  for (const auto& s : served) {
    manifest.push_back(s.unit);
    bytes += s.unit.bytes();
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("staging %s (%d parts, %.1f MB) over loopback, %s, %d interleaved rounds\n", dir.c_str(), parts, mb,
              runtime::tls::process_credentials() ? "TLS" : "plaintext", o.repeat);
  std::printf("%-6s %9s %9s %9s %9s %8s %8s %8s %10s %10s %10s %13s %13s\n", "round", "in flight", "(t) MB/s",
              "(a) MB/s", "(b) MB/s", "(a)/(t)", "(b)/(t)", "(b)/(a)", "(t) CPU/GB", "(a) CPU/GB", "(b) CPU/GB",
              "(c) again, s", "(c) copied B");
  // (t) and (a) once per round; (b) and (c) once per number of requests in flight.
  struct Series {
    std::vector<double> rate, tcp_ratio, channel_ratio, cpu, again;
  };
  std::vector<Series> series(o.in_flight.size());
  std::vector<double> tcp, channel, channel_ratio, tcp_cpu, channel_cpu;
  runtime::StageServer server("127.0.0.1", kDeadline);
  for (int r = 0; r < o.repeat; ++r) {
    const double t =
        mb / measured([&] { return raw_tcp_seconds(bytes, runtime::wire::kMaxStageChunkBytes, 0); }, bytes, tcp_cpu);
    const double a = mb / measured([&] { return channel_seconds(bytes); }, bytes, channel_cpu);
    tcp.push_back(t);
    channel.push_back(a);
    channel_ratio.push_back(a / t);
    for (size_t i = 0; i < o.in_flight.size(); ++i) {
      // Every other round in the reverse order: none of the values always follows (t) and (a).
      const size_t k = r % 2 == 0 ? i : o.in_flight.size() - 1 - i;
      Series& out = series[k];
      const std::string cache_dir = workdir.path() + "/cache-round";
      fs::remove_all(cache_dir);
      runtime::StageCacheOptions options;
      options.dir = cache_dir;
      options.deadline = kDeadline;
      options.requests_in_flight = static_cast<size_t>(o.in_flight[k]);
      runtime::StageCache cache(options);
      runtime::StageOutcome first;
      const double b = mb / measured(
                                [&] {
                                  Stopwatch watch;
                                  first = cache.stage(manifest, server.open(served), runtime::StageServer::kServerId);
                                  return watch.seconds();
                                },
                                bytes, out.cpu);
      if (first.bytes_copied != bytes) {
        throw Error("staging copied " + std::to_string(first.bytes_copied) + " of " + std::to_string(bytes) + " bytes");
      }
      Stopwatch watch_again;
      const runtime::StageOutcome second = cache.stage(manifest, server.open(served), runtime::StageServer::kServerId);
      const double c = watch_again.seconds();
      fs::remove_all(cache_dir);
      out.rate.push_back(b);
      out.tcp_ratio.push_back(b / t);
      out.channel_ratio.push_back(b / a);
      out.again.push_back(c);
      std::printf("%-6d %9d %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f %10.3f %10.3f %10.3f %13.3f %13llu\n", r + 1,
                  o.in_flight[k], t, a, b, a / t, b / t, b / a, tcp_cpu.back(), channel_cpu.back(), out.cpu.back(), c,
                  static_cast<unsigned long long>(second.bytes_copied));
      std::fflush(stdout);
    }
  }
  for (size_t k = 0; k < o.in_flight.size(); ++k) {
    const Series& out = series[k];
    std::printf("median %9d %9.1f %9.1f %9.1f %8.2f %8.2f %8.2f %10.3f %10.3f %10.3f %13.3f\n", o.in_flight[k],
                median(tcp), median(channel), median(out.rate), median(channel_ratio), median(out.tcp_ratio),
                median(out.channel_ratio), median(tcp_cpu), median(channel_cpu), median(out.cpu), median(out.again));
  }
}

}  // namespace partita::bench
