#include "bench/transfer_bench.h"

#include <algorithm>
#include <caf/all.hpp>
#include <cstdio>
#include <cstring>

#include "actors/feature_channel.h"
#include "actors/partition_actor.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/random.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/harness.h"
#include "bench/input_graph.h"
#include "bench/raw_tcp.h"
#include "bench/workdir.h"
#include "messages/codec.h"
#include "partitioner/partition_stores.h"
#include "runtime/client.h"
#include "runtime/daemon_child.h"
#include "runtime/errors.h"
#include "runtime/transport/request_channel.h"

namespace partita::bench {

using namespace std::chrono_literals;

namespace {

constexpr auto kDeadline = 120s;


// Asks `ask` (which returns the payload bytes it received) once to warm up, then
// `requests` times; returns bytes/s.
template <typename Ask>
double bytes_per_second(int requests, Ask ask) {
  ask();
  Stopwatch watch;
  size_t total = 0;
  for (int r = 0; r < requests; ++r) total += ask();
  return static_cast<double>(total) / watch.seconds();
}

// (b) The request channel between two threads, its body filled from a contiguous buffer.
double channel_bytes_per_second(size_t bytes, int requests) {
  std::vector<char> rows(bytes, 1);
  runtime::RequestServer server(
      "127.0.0.1", 1,
      [&rows] {
        runtime::ChannelService service;
        service.answer = [&rows](Span<const char>, runtime::ChannelReply& reply) {
          reply.head_length = 0;
          reply.body_bytes = rows.size();
          reply.fill = [&rows](char* piece, uint64_t offset, uint64_t n) { std::memcpy(piece, rows.data() + offset, n); };
        };
        service.refuse = [](const std::string&, runtime::ChannelReply& reply) { reply.head_length = 0; };
        return service;
      },
      kDeadline, "transfer bench");
  runtime::RequestClient client("transfer bench");
  client.open(server.open(), 1, kDeadline);
  std::vector<char> head, body;
  const char request = 0;
  return bytes_per_second(requests, [&] {
    client.send(Span<const char>(&request, 1), kDeadline);
    uint64_t body_bytes = 0;
    client.receive_head(head, body_bytes, kDeadline);
    client.receive_body(body, kDeadline);
    return body_bytes;
  });
}

// A feature request for `rows` rows of partition `part`: random ones, or its first rows
// in order (`contiguous`: the gather becomes a plain copy).
Encoded rows_request(const std::string& dir, int part, int64_t rows, bool contiguous) {
  const auto topology = open_partition_stores(dir, part).topology;
  if (rows > topology->num_nodes()) {
    throw UsageError("--rows: partition " + std::to_string(part) + " has only " +
                     std::to_string(topology->num_nodes()) + " nodes");
  }
  std::vector<int64_t> ids(rows);
  Rng rng(7);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = topology->node_begin() +
             (contiguous ? static_cast<int64_t>(i) : static_cast<int64_t>(rng.below(topology->num_nodes())));
  }
  Encoder encoder;
  Encoded request;
  encoder.feature_request(1, "node", "x", ids, request.bytes);
  return request;
}

// (c) One feature request over the remote partition's feature channel, its rows received
// into `rows`; returns their bytes.
size_t ask_feature_channel(ChannelClient& channel, const Encoded& request, std::vector<char>& head,
                           std::vector<char>& rows) {
  channel.send(Span<const char>(request.bytes), kDeadline);
  uint64_t body_bytes = 0;
  const size_t length = channel.receive_head(head, body_bytes, kDeadline);
  const DecodedFeatureRowsHeader h = decode_feature_rows_header(Span<const char>(head.data(), length));
  if (h.bytes != body_bytes) throw Error("feature channel: a header for " + std::to_string(h.bytes) + " bytes");
  channel.receive_body(rows, kDeadline);
  return h.bytes;
}

// (d) Feature replies from the remote partition actor by CAF message (request, remote
// gather, encode, transfer, decode).
double caf_bytes_per_second(caf::actor_system& system, const partition_actor& remote, const Encoded& request,
                            int requests) {
  caf::scoped_actor self{system};
  return bytes_per_second(requests, [&] {
    size_t got = 0;
    self->request(remote, kDeadline, feature_atom::value, request)
        .receive([&](const Encoded& reply) { got = decode_feature_reply(Span<const char>(reply.bytes)).values.bytes; },
                 [&](caf::error& e) { throw Error("remote feature request failed: " + runtime::describe(system, e)); });
    return got;
  });
}

}  // namespace

void run_transfer_bench(const TransferBenchOptions& o) {
  const Workdir workdir(o.workdir, "transfer-bench");
  // Random parts: only partition 1's features matter.
  const std::string dir = rmat_in_two_random_parts(workdir, o.num_nodes, o.avg_degree, o.feature_dim, o.seed);

  runtime::ActorSystemOptions system_options;
  add_protocol_types(system_options);
  runtime::ActorSystem system(system_options);
  runtime::DaemonChild daemon = runtime::start_daemon_child(self_executable(), {"--name", "transfer-bench"});
  runtime::DaemonConnection connection = runtime::DaemonConnection::connect(system, daemon.address, 30s);
  const auto remote = caf::actor_cast<partition_actor>(
      connection.spawn("partition", {{"dir", dir}, {"part", "1"}, {"fanouts", "1"}}, kDeadline));
  Encoded offer;
  {
    caf::scoped_actor self{system};
    self->request(remote, kDeadline, channel_atom::value)
        .receive([&](Encoded& reply) { offer = std::move(reply); },
                 [&](caf::error& e) { throw Error("channel request failed: " + runtime::describe(system, e)); });
  }
  ChannelClient channel("partition 1");
  channel.open(decode_channel_offer(Span<const char>(offer.bytes)), 1, kDeadline);
  const Encoded request = rows_request(dir, 1, o.rows, o.contiguous);

  std::vector<char> head, rows;
  const auto ask_features = [&] { return ask_feature_channel(channel, request, head, rows); };
  const size_t reply_bytes = ask_features();
  const double total = static_cast<double>(reply_bytes) * o.requests;

  char title[256];
  std::snprintf(title, sizeof title,
                "%lld %s rows of %lld float32 per request (%.1f MB) from partition 1 of RMAT %lld nodes, on a "
                "daemon; each case %d requests after one untimed",
                static_cast<long long>(o.rows), o.contiguous ? "contiguous" : "random",
                static_cast<long long>(o.feature_dim), reply_bytes / 1e6, static_cast<long long>(o.num_nodes),
                o.requests);
  RoundsOptions rounds;
  rounds.title = title;
  rounds.unit = "GB/s";
  rounds.rounds = o.repeat;
  // (a) moves the same bytes as the others through a loopback TCP connection, a reply's
  // worth at a time.
  const Results results = run_cases(
      rounds, {
                  {"(a) raw loopback TCP", Role::kBaseline,
                   [&] { return total / raw_tcp_seconds(static_cast<uint64_t>(total), reply_bytes, 1) / 1e9; }},
                  {"(b) request channel", Role::kKernel,
                   [&] { return channel_bytes_per_second(reply_bytes, o.requests) / 1e9; }},
                  {"(c) feature channel", Role::kKernel,
                   [&] { return bytes_per_second(o.requests, ask_features) / 1e9; }},
                  {"(d) CAF message", Role::kKernel,
                   [&] { return caf_bytes_per_second(system, remote, request, o.requests) / 1e9; }},
              });
  std::printf("goal: remote feature transfer >= 0.8x raw TCP: %s\n",
              results.ratio("(c) feature channel") >= 0.8 ? "met" : "not met");
  caf::anon_send_exit(remote, caf::exit_reason::user_shutdown);
  connection.request_shutdown();
  daemon.process->wait(30);
}

}  // namespace partita::bench
