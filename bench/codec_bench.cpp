#include "bench/codec_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/stopwatch.h"
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

template <typename Body>
double median_seconds(const CodecBenchOptions& o, Body body) {
  for (int i = 0; i < o.warmup_runs; ++i) body();
  std::vector<double> times;
  for (int i = 0; i < o.runs; ++i) {
    Stopwatch watch;
    body();
    times.push_back(watch.seconds());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Row {
  const char* name;
  size_t payload_bytes;
  size_t message_bytes;
  double encode_s;
  double decode_s;
  double memcpy_s;
};

void print(const Row& r) {
  auto gbs = [&](double s) { return static_cast<double>(r.payload_bytes) / s / 1e9; };
  // Decode is reported in microseconds: it does not touch feature values, so GB/s
  // would only measure the validation's fixed cost.
  std::printf("%-13s | %8.1f | %11.2f | %9.1f | %13.2f | %11.2f | %13.2f\n", r.name,
              static_cast<double>(r.message_bytes) / (1 << 20), gbs(r.encode_s),
              r.decode_s * 1e6, gbs(r.encode_s + r.decode_s), gbs(r.memcpy_s),
              r.memcpy_s / r.encode_s);
}

// A memcpy of `bytes` from `src` into a reused, already touched buffer.
double memcpy_seconds(const CodecBenchOptions& o, const void* src, size_t bytes) {
  std::vector<char> dst(bytes, 1);
  return median_seconds(o, [&] { std::memcpy(dst.data(), src, bytes); });
}

Row feature_reply_row(const CodecBenchOptions& o) {
  std::vector<float> values(static_cast<size_t>(o.feature_rows * o.feature_dim));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.5f;
  TensorView view(DType::kFloat32, {o.feature_rows, o.feature_dim}, values.data(),
                  values.size() * sizeof(float));
  Encoder encoder;
  std::vector<char> bytes;
  Row row{"feature reply", view.bytes, 0, 0, 0, 0};
  row.encode_s = median_seconds(o, [&] { encoder.feature_reply(1, view, bytes); });
  row.message_bytes = bytes.size();
  row.decode_s = median_seconds(o, [&] {
    DecodedFeatureReply reply = decode_feature_reply(bytes, o.feature_rows);
    if (reply.values.bytes != view.bytes) throw Error("bench codec: feature reply mismatch");
  });
  row.memcpy_s = memcpy_seconds(o, values.data(), view.bytes);
  return row;
}

Row hop_reply_row(const CodecBenchOptions& o) {
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
  Row row{"hop reply", payload, 0, 0, 0, 0};
  row.encode_s = median_seconds(o, [&] { encoder.hop_reply(1, out, bytes); });
  row.message_bytes = bytes.size();
  row.decode_s = median_seconds(o, [&] {
    DecodedHopReply reply = decode_hop_reply(bytes, nodes);
    if (reply.neighbors.size() != out.neighbors.size())
      throw Error("bench codec: hop reply mismatch");
  });
  // The same bytes from three sources, as the encoder copies them.
  std::vector<char> dst(payload, 1);
  row.memcpy_s = median_seconds(o, [&] {
    char* p = dst.data();
    for (const auto* v : {&out.offsets, &out.neighbors, &out.edge_ids}) {
      std::memcpy(p, v->data(), v->size() * 8);
      p += v->size() * 8;
    }
  });
  return row;
}

}  // namespace

void run_codec_bench(const CodecBenchOptions& o) {
  check_options(o);
  std::printf("codec: median of %d runs after %d warm-up; GB/s of tensor payload; buffers "
              "reused across runs\n\n",
              o.runs, o.warmup_runs);
  std::printf("%-13s | %8s | %11s | %9s | %13s | %11s | %13s\n", "message", "MiB",
              "encode GB/s", "decode us", "enc+dec GB/s", "memcpy GB/s", "encode/memcpy");
  print(feature_reply_row(o));
  print(hop_reply_row(o));
  std::printf("\nencode copies the payload once into the output buffer; decode is zero-copy "
              "(validation only: offsets are scanned, feature values are not).\n");
}

}  // namespace partita::bench
