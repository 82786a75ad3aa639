#include "bench/gather_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "base/array_ref.h"
#include "base/error.h"
#include "base/parallel.h"
#include "base/random.h"
#include "graph/feature_store.h"

namespace partita::bench {

namespace {

void check_options(const GatherBenchOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw UsageError("bench gather: " + message);
  };
  require(o.num_nodes > 0, "num_nodes must be positive");
  require(o.dim > 0, "dim must be positive");
  require(o.batch_nodes > 0 && o.batch_nodes <= o.num_nodes,
          "batch_nodes must be in [1, num_nodes]");
  require(o.num_batches > 0, "num_batches must be positive");
  require(o.warmup_runs >= 0 && o.runs > 0, "runs must be positive, warmup_runs not negative");
  require(!o.threads.empty(), "threads must list at least one thread count");
  for (int t : o.threads) require(t > 0, "thread counts must be positive");
}

// 64-byte aligned memory, so a buffer can be placed at a chosen offset from alignment.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes)
      : memory_(static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)), &std::free) {
    if (memory_ == nullptr)
      throw Error("bench gather: out of memory for " + std::to_string(bytes) + " bytes");
    // Touch every page now, so no page fault lands in a timed run.
    std::memset(memory_.get(), 1, bytes);
  }
  char* data() const { return memory_.get(); }

 private:
  std::unique_ptr<char, decltype(&std::free)> memory_;
};

// Deterministic values from a counter-based mix, so the fill can use every core.
std::vector<float> make_features(int64_t rows, int64_t dim, uint64_t seed) {
  std::vector<float> x(static_cast<size_t>(rows * dim));
  parallel_for(static_cast<int64_t>(x.size()), 0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      x[i] = static_cast<float>(mix64(seed, static_cast<uint64_t>(i)) >> 40) * 0x1.0p-24f;
    }
  });
  return x;
}

// Each batch is a uniformly random set of distinct ids in random order, as the deduplicated
// node ids of a sampled mini-batch look to the feature store: a partial Fisher-Yates over
// one permutation that carries over from batch to batch.
std::vector<std::vector<int64_t>> draw_batches(const GatherBenchOptions& o) {
  std::vector<int64_t> perm(static_cast<size_t>(o.num_nodes));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  Rng rng(mix64(o.seed, 0x6761746865720000ull));
  std::vector<std::vector<int64_t>> batches(o.num_batches);
  for (auto& batch : batches) {
    for (int64_t i = 0; i < o.batch_nodes; ++i) {
      std::swap(perm[i], perm[i + rng.below(o.num_nodes - i)]);
    }
    batch.assign(perm.begin(), perm.begin() + o.batch_nodes);
  }
  return batches;
}

template <typename Body>
double median_seconds(const GatherBenchOptions& o, Body body) {
  for (int i = 0; i < o.warmup_runs; ++i) body();
  std::vector<double> seconds;
  for (int i = 0; i < o.runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

int run_gather_bench(const GatherBenchOptions& o) {
  check_options(o);
  const size_t row_bytes = static_cast<size_t>(o.dim) * sizeof(float);
  const size_t batch_bytes = static_cast<size_t>(o.batch_nodes) * row_bytes;
  const double run_bytes = static_cast<double>(batch_bytes) * o.num_batches;

  FeatureStore store(0, o.num_nodes, 0, 0);
  store.put("node", "x", RowSpace::kNode,
            ArrayRef::from_vector(make_features(o.num_nodes, o.dim, o.seed), {o.num_nodes, o.dim}));
  const std::vector<std::vector<int64_t>> batches = draw_batches(o);
  // One allocation serves the aligned output and the one 16 bytes past alignment.
  AlignedBuffer out(batch_bytes + 64);
  // memcpy's batches are consecutive slices of the feature matrix itself, so its source
  // comes from memory as the gather's does; one small reused source would sit in the cache
  // and flatter the baseline.
  const char* matrix = static_cast<const char*>(store.get("node", "x")->raw_data());
  const size_t matrix_bytes = static_cast<size_t>(o.num_nodes) * row_bytes;

  auto gather_into = [&](char* dst, int threads) {
    return median_seconds(o, [&] {
      for (const auto& batch : batches) store.gather("node", "x", batch, dst, batch_bytes, threads);
    });
  };
  auto copy = [&](int threads) {
    return median_seconds(o, [&] {
      for (int b = 0; b < o.num_batches; ++b) {
        const char* source = matrix + (static_cast<size_t>(b) * batch_bytes) % (matrix_bytes - batch_bytes + 1);
        parallel_for(static_cast<int64_t>(batch_bytes), threads, [&](int64_t begin, int64_t end) {
          std::memcpy(out.data() + begin, source + begin, static_cast<size_t>(end - begin));
        });
      }
    });
  };

  std::printf(
      "\nFeature gather: %lld x %lld float32 (%.0f MiB), %d batches x %lld distinct "
      "random ids (%.1f MiB of rows each); median of %d runs after %d warm-up\n\n",
      (long long)o.num_nodes, (long long)o.dim,
      static_cast<double>(o.num_nodes) * row_bytes / (1 << 20), o.num_batches,
      (long long)o.batch_nodes, static_cast<double>(batch_bytes) / (1 << 20), o.runs,
      o.warmup_runs);
  std::printf("%7s | %11s | %11s %7s | %15s %7s\n", "threads", "memcpy GB/s", "gather GB/s",
              "ratio", "unaligned GB/s", "ratio");
  for (int threads : o.threads) {
    double memcpy_gbs = run_bytes / copy(threads) / 1e9;
    double gather_gbs = run_bytes / gather_into(out.data(), threads) / 1e9;
    double unaligned_gbs = run_bytes / gather_into(out.data() + 16, threads) / 1e9;
    std::printf("%7d | %11.2f | %11.2f %7.2f | %15.2f %7.2f\n", threads, memcpy_gbs, gather_gbs,
                gather_gbs / memcpy_gbs, unaligned_gbs, unaligned_gbs / memcpy_gbs);
    std::fflush(stdout);
  }
  std::printf(
      "\nGB/s: bytes of gathered rows per second. memcpy: the same bytes from contiguous "
      "slices of the same matrix, split over the same threads. gather: FeatureStore::gather into "
      "a 64-byte aligned buffer (as a torch tensor's); unaligned: into a buffer 16 bytes "
      "past that alignment (as a large malloc's).\n");
  return 0;
}

}  // namespace partita::bench
