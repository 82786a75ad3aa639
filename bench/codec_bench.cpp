#include "bench/codec_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/harness.h"
#include "bench/stats.h"
#include "messages/codec.h"

namespace partita::bench {

namespace {

void check_options(const CodecBenchOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw UsageError("bench codec: " + message);
  };
  require(o.feature_rows > 0 && o.feature_dim > 0, "feature rows and dim must be positive");
  require(o.hop_neighbors > 0, "hop_neighbors must be positive");
  require(o.fanout > 0, "fanout must be positive");
  require(o.warmup_runs >= 0 && o.runs > 0, "runs must be positive, warmup_runs not negative");
}

// One message's table: memcpy of the payload (the floor), encode, and encode + decode, in
// interleaved rounds, as payload GB/s. The decode's own time (it touches no feature value:
// GB/s would only measure validation's fixed cost) is printed below it in microseconds.
void measure(const CodecBenchOptions& o, const std::string& title, size_t payload,
             const std::function<void()>& copy, const std::function<void()>& encode,
             const std::function<void()>& decode) {
  const auto gbs = [payload](double seconds) { return static_cast<double>(payload) / seconds / 1e9; };
  std::vector<double> decode_seconds;
  RoundsOptions rounds;
  rounds.title = title;
  rounds.unit = "GB/s";
  rounds.warmup = o.warmup_runs;
  rounds.rounds = o.runs;
  run_cases(rounds, {
      {"memcpy", Role::kFloor, [&] { return gbs(wall_seconds(copy)); }},
      {"encode", Role::kKernel, [&] { return gbs(wall_seconds(encode)); }},
      {"encode+decode", Role::kKernel,
       [&] {
         const double e = wall_seconds(encode);
         const double d = wall_seconds(decode);
         if (recording()) decode_seconds.push_back(d);
         return gbs(e + d);
       }},
  });
  std::printf("decode (zero-copy: validation only): median %.1f us\n", median(decode_seconds) * 1e6);
}

std::string mib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

void feature_reply(const CodecBenchOptions& o) {
  std::vector<float> values(static_cast<size_t>(o.feature_rows * o.feature_dim));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.5f;
  TensorView view(DType::kFloat32, {o.feature_rows, o.feature_dim}, values.data(),
                  values.size() * sizeof(float));
  Encoder encoder;
  std::vector<char> bytes;
  encoder.feature_reply(1, view, bytes);
  std::vector<char> dst(view.bytes, 1);  // a reused, already touched buffer
  measure(
      o,
      "feature reply, " + std::to_string(o.feature_rows) + " x " + std::to_string(o.feature_dim) +
          " float32: " + mib(bytes.size()),
      view.bytes, [&] { std::memcpy(dst.data(), values.data(), view.bytes); },
      [&] { encoder.feature_reply(1, view, bytes); },
      [&] {
        DecodedFeatureReply reply = decode_feature_reply(bytes, o.feature_rows);
        if (reply.values.bytes != view.bytes) throw Error("bench codec: feature reply mismatch");
      });
}

void hop_reply(const CodecBenchOptions& o) {
  HopOutput out;
  int64_t nodes = (o.hop_neighbors + o.fanout - 1) / o.fanout;
  out.offsets.resize(static_cast<size_t>(nodes) + 1);
  for (int64_t i = 0; i <= nodes; ++i) out.offsets[i] = std::min(i * o.fanout, o.hop_neighbors);
  out.neighbors.resize(static_cast<size_t>(o.hop_neighbors));
  out.edge_ids.resize(static_cast<size_t>(o.hop_neighbors));
  for (int64_t i = 0; i < o.hop_neighbors; ++i) {
    out.neighbors[i] = (i * 2654435761) % (1 << 20);
    out.edge_ids[i] = i * 20;
  }
  size_t payload = (out.offsets.size() + out.neighbors.size() + out.edge_ids.size()) * 8;
  Encoder encoder;
  std::vector<char> bytes;
  encoder.hop_reply(1, out, bytes);
  std::vector<char> dst(payload, 1);
  measure(
      o, "hop reply, " + std::to_string(o.hop_neighbors) + " neighbours + edge ids: " + mib(bytes.size()), payload,
      [&] {  // the same bytes from three sources, as the encoder copies them
        char* p = dst.data();
        for (const auto* v : {&out.offsets, &out.neighbors, &out.edge_ids}) {
          std::memcpy(p, v->data(), v->size() * 8);
          p += v->size() * 8;
        }
      },
      [&] { encoder.hop_reply(1, out, bytes); },
      [&] {
        DecodedHopReply reply = decode_hop_reply(bytes, nodes);
        if (reply.neighbors.size() != out.neighbors.size()) throw Error("bench codec: hop reply mismatch");
      });
}

}  // namespace

void run_codec_bench(const CodecBenchOptions& o) {
  check_options(o);
  std::printf("codec: GB/s of tensor payload, buffers reused across rounds; encode copies the payload once into "
              "the output buffer, decode is zero-copy (validation only: offsets are scanned, feature values are "
              "not)\n");
  feature_reply(o);
  hop_reply(o);
}

}  // namespace partita::bench
