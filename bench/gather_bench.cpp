#include "bench/gather_bench.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "base/array_file.h"
#include "base/array_ref.h"
#include "base/error.h"
#include "base/parallel.h"
#include "base/random.h"
#include "base/resident_array.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "graph/feature_store.h"
#include "graph/row_copy.h"

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
double seconds_of(Body body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// One timed pass: wall seconds, the process's CPU seconds over it (on a loaded machine the
// wall time also counts the time spent waiting for a core; the CPU time does not) and the
// minor page faults it took.
struct Pass {
  double wall = 0, cpu = 0;
  long faults = 0;
};

template <typename Body>
Pass pass_of(Body body) {
  const long faults = minor_faults();
  const double cpu = process_cpu_seconds();
  Pass p;
  p.wall = seconds_of(body);
  p.cpu = process_cpu_seconds() - cpu;
  p.faults = minor_faults() - faults;
  return p;
}

}  // namespace

int run_gather_bench(const GatherBenchOptions& o) {
  check_options(o);
  const size_t row_bytes = static_cast<size_t>(o.dim) * sizeof(float);
  const size_t batch_bytes = static_cast<size_t>(o.batch_nodes) * row_bytes;
  const double run_bytes = static_cast<double>(batch_bytes) * o.num_batches;

  // The matrix as a partition's features are stored: an array file, opened both ways a
  // partition's stores keep it (partitioner/partition_stores.h).
  const Workdir workdir("", "gather-bench");
  const std::string path = workdir.path() + "/x.bin";
  {
    const std::vector<float> x = make_features(o.num_nodes, o.dim, o.seed);
    write_array(path, {o.num_nodes, o.dim}, x.data());
  }
  FeatureStore memory(0, o.num_nodes, 0, 0), mapped(0, o.num_nodes, 0, 0);
  memory.put("node", "x", RowSpace::kNode, load_resident(MappedArray(path)));
  mapped.put("node", "x", RowSpace::kNode, ArrayRef::from_mapped(MappedArray(path)));
  const char* matrix = static_cast<const char*>(memory.get("node", "x")->raw_data());
  const size_t matrix_bytes = static_cast<size_t>(o.num_nodes) * row_bytes;
  {
    // Every page of the mapping read once, so that no timed run reads the disk.
    const auto* m = static_cast<const volatile char*>(mapped.get("node", "x")->raw_data());
    char sum = 0;
    for (size_t at = 0; at < matrix_bytes; at += 4096) sum = static_cast<char>(sum + m[at]);
    (void)sum;
  }
  const std::vector<std::vector<int64_t>> batches = draw_batches(o);
  // One allocation serves the aligned output and the one 16 bytes past alignment.
  AlignedBuffer out(batch_bytes + 64);

  // memcpy's batches are consecutive slices of the feature matrix itself (in memory), so
  // its source comes from memory as the gather's does; one small reused source would sit in
  // the cache and flatter the baseline.
  auto gather_into = [&](const FeatureStore& store, char* dst, int threads) {
    return pass_of([&] {
      for (const auto& batch : batches) store.gather("node", "x", batch, dst, batch_bytes, threads);
    });
  };
  // The row copy kernel with plain stores only, split over the threads as the store splits
  // a gather: what the streaming stores change, in the same runs.
  const char* x_data = static_cast<const char*>(memory.get("node", "x")->raw_data());
  auto gather_plain = [&](int threads) {
    return pass_of([&] {
      for (const auto& batch : batches) {
        parallel_for(static_cast<int64_t>(batch.size()), threads, [&](int64_t lo, int64_t hi) {
          RowSource from;
          from.data = x_data;
          from.row_bytes = row_bytes;
          from.ids = batch.data() + lo;
          from.rows = static_cast<uint64_t>(o.num_nodes);
          from.streaming = false;
          copy_rows(from, nullptr, static_cast<size_t>(hi - lo), out.data() + lo * row_bytes, batch_bytes);
        });
      }
    });
  };
  auto copy_pass = [&](int threads) {
    return pass_of([&] {
      for (int b = 0; b < o.num_batches; ++b) {
        const char* source = matrix + (static_cast<size_t>(b) * batch_bytes) % (matrix_bytes - batch_bytes + 1);
        parallel_for(static_cast<int64_t>(batch_bytes), threads, [&](int64_t begin, int64_t end) {
          std::memcpy(out.data() + begin, source + begin, static_cast<size_t>(end - begin));
        });
      }
    });
  };
  auto copy = [&](int threads) { return copy_pass(threads).wall; };
  // Every run times each way once, so load from elsewhere falls on all of them; ratios are
  // taken within a run and their median reported, by wall time and by CPU time.
  enum Way { kMapped, kMemory, kUnaligned, kPlain, kWays };
  struct Figures {
    double memcpy_gbs = 0;
    double gbs[kWays] = {}, ratio[kWays] = {}, cpu_ratio[kWays] = {};
    double faults_per_batch = 0;  // the memory gather's minor page faults per batch
  };
  auto measure = [&](int threads) {
    std::vector<double> c, gbs[kWays], ratio[kWays], cpu_ratio[kWays], faults;
    for (int i = 0; i < o.warmup_runs + o.runs; ++i) {
      Pass p[kWays];
      const Pass tc = copy_pass(threads);
      p[kMapped] = gather_into(mapped, out.data(), threads);
      p[kMemory] = gather_into(memory, out.data(), threads);
      p[kUnaligned] = gather_into(memory, out.data() + 16, threads);
      p[kPlain] = gather_plain(threads);
      if (i < o.warmup_runs) continue;
      c.push_back(run_bytes / tc.wall / 1e9);
      for (int w = 0; w < kWays; ++w) {
        gbs[w].push_back(run_bytes / p[w].wall / 1e9);
        ratio[w].push_back(tc.wall / p[w].wall);
        cpu_ratio[w].push_back(tc.cpu / p[w].cpu);
      }
      faults.push_back(static_cast<double>(p[kMemory].faults) / o.num_batches);
    }
    Figures f;
    f.memcpy_gbs = median(c);
    for (int w = 0; w < kWays; ++w) {
      f.gbs[w] = median(gbs[w]);
      f.ratio[w] = median(ratio[w]);
      f.cpu_ratio[w] = median(cpu_ratio[w]);
    }
    f.faults_per_batch = median(faults);
    return f;
  };

  std::printf(
      "\nFeature gather: %lld x %lld float32 (%.0f MiB), %d batches x %lld distinct "
      "random ids (%.1f MiB of rows each); medians of %d interleaved runs (each times every way) after %d warm-up; "
      "ratios to memcpy (the floor): medians of the runs\' ratios, by wall time / by CPU time\n\n",
      (long long)o.num_nodes, (long long)o.dim, static_cast<double>(o.num_nodes) * row_bytes / (1 << 20),
      o.num_batches, (long long)o.batch_nodes, static_cast<double>(batch_bytes) / (1 << 20), o.runs, o.warmup_runs);
  std::printf("%7s | %11s | %11s %11s | %11s %11s | %14s %11s | %13s %11s | %12s\n", "threads", "memcpy GB/s",
              "memory GB/s", "ratio", "mapped GB/s", "ratio", "unaligned GB/s", "ratio", "plain st GB/s", "ratio",
              "faults/batch");
  for (int threads : o.threads) {
    const Figures f = measure(threads);
    std::printf("%7d | %11.2f |", threads, f.memcpy_gbs);
    for (Way w : {kMemory, kMapped, kUnaligned, kPlain}) {
      const int width = w == kUnaligned ? 14 : w == kPlain ? 13 : 11;
      std::printf(" %*.2f %5.2f/%5.2f |", width, f.gbs[w], f.ratio[w], f.cpu_ratio[w]);
    }
    std::printf(" %12.1f\n", f.faults_per_batch);
    std::fflush(stdout);
  }
  if (!o.prefetch_sweep.empty()) {
    // The kernel alone on one thread, at each distance, every run timing all of them.
    const ArrayRef& x = *memory.get("node", "x");
    const auto kernel = [&](size_t ahead) {
      return seconds_of([&] {
        for (const auto& batch : batches) {
          RowSource from;
          from.data = static_cast<const char*>(x.raw_data());
          from.row_bytes = row_bytes;
          from.ids = batch.data();
          from.rows = static_cast<uint64_t>(o.num_nodes);
          from.prefetch_rows = ahead;
          copy_rows(from, nullptr, batch.size(), out.data(), batch_bytes);
        }
      });
    };
    std::vector<std::vector<double>> ratios(o.prefetch_sweep.size()), rates(o.prefetch_sweep.size());
    for (int i = 0; i < o.warmup_runs + o.runs; ++i) {
      const double tc = copy(1);
      for (size_t d = 0; d < o.prefetch_sweep.size(); ++d) {
        const double t = kernel(static_cast<size_t>(o.prefetch_sweep[d]));
        if (i < o.warmup_runs) continue;
        ratios[d].push_back(tc / t);
        rates[d].push_back(run_bytes / t / 1e9);
      }
    }
    std::printf("\nrow copy kernel (graph/row_copy.h) from memory, one thread, by prefetch distance (rows ahead; "
                "default %zu):\n%9s | %9s %7s\n", kPrefetchRows, "distance", "GB/s", "ratio");
    for (size_t d = 0; d < o.prefetch_sweep.size(); ++d) {
      std::printf("%9d | %9.2f %7.2f\n", o.prefetch_sweep[d], median(rates[d]), median(ratios[d]));
    }
  }
  std::printf(
      "\nGB/s: bytes of gathered rows per second. memcpy: the same bytes from contiguous slices of the matrix in "
      "memory, split over the same threads. mapped: FeatureStore::gather from the array file mapped (4 KB pages, "
      "every page in the page cache); memory: from the copy in huge-page memory (base/resident_array.h), as a "
      "partition that fits in memory keeps its features; both into a 64-byte aligned buffer (as a torch "
      "tensor's); unaligned: memory into a buffer 16 bytes past that alignment (as a large malloc's); plain st: "
      "memory, aligned, with the row copy kernel's plain stores only (no streaming stores). faults/batch: minor "
      "page faults per batch of the memory gather (its output buffer is reused).\n");
  return 0;
}

}  // namespace partita::bench
