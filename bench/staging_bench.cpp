#include "bench/staging_bench.h"

#include <cstdio>
#include <cstring>
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
  std::printf("%-6s %14s %14s %14s %10s %10s %10s %16s %14s\n", "round", "(t) MB/s", "(a) MB/s", "(b) MB/s",
              "(a)/(t)", "(b)/(t)", "(b)/(a)", "(c) again, s", "(c) copied B");
  std::vector<double> tcp, channel, staging, channel_ratio, tcp_ratio, ratio, again;
  runtime::StageServer server("127.0.0.1", kDeadline);
  for (int r = 0; r < o.repeat; ++r) {
    const double t = mb / raw_tcp_seconds(bytes, runtime::wire::kMaxStageChunkBytes, 0);
    const double a = mb / channel_seconds(bytes);
    const std::string cache_dir = workdir.path() + "/cache-round";
    fs::remove_all(cache_dir);
    runtime::StageCacheOptions options;
    options.dir = cache_dir;
    options.deadline = kDeadline;
    runtime::StageCache cache(options);
    Stopwatch watch;
    const runtime::StageOutcome first = cache.stage(manifest, server.open(served), runtime::StageServer::kServerId);
    const double b = mb / watch.seconds();
    if (first.bytes_copied != bytes) throw Error("staging copied " + std::to_string(first.bytes_copied) + " of " + std::to_string(bytes) + " bytes");
    Stopwatch watch_again;
    const runtime::StageOutcome second = cache.stage(manifest, server.open(served), runtime::StageServer::kServerId);
    const double c = watch_again.seconds();
    fs::remove_all(cache_dir);
    std::printf("%-6d %14.1f %14.1f %14.1f %10.2f %10.2f %10.2f %16.3f %14llu\n", r + 1, t, a, b, a / t, b / t, b / a,
                c, static_cast<unsigned long long>(second.bytes_copied));
    std::fflush(stdout);
    tcp.push_back(t);
    channel_ratio.push_back(a / t);
    tcp_ratio.push_back(b / t);
    channel.push_back(a);
    staging.push_back(b);
    ratio.push_back(b / a);
    again.push_back(c);
  }
  std::printf("median %14.1f %14.1f %14.1f %10.2f %10.2f %10.2f %16.3f\n", median(tcp), median(channel),
              median(staging), median(channel_ratio), median(tcp_ratio), median(ratio), median(again));
}

}  // namespace partita::bench
