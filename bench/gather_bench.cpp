#include "bench/gather_bench.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "base/array_file.h"
#include "base/array_ref.h"
#include "base/error.h"
#include "base/parallel.h"
#include "base/random.h"
#include "base/resident_array.h"
#include "bench/harness.h"
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

// One timed pass over every batch: wall seconds, the process's CPU seconds over it (on a
// loaded machine the wall time also counts the time spent waiting for a core; the CPU time
// does not) and the minor page faults it took.
struct Pass {
  double wall = 0, cpu = 0;
  long faults = 0;
};

template <typename Body>
Pass pass_of(Body body) {
  const long faults = minor_faults();
  const double cpu = process_cpu_seconds();
  Pass p;
  p.wall = wall_seconds(body);
  p.cpu = process_cpu_seconds() - cpu;
  p.faults = minor_faults() - faults;
  return p;
}

// What every case reads and writes: the matrix as a partition's features are stored (an
// array file, opened both ways a partition's stores keep it: partitioner/partition_stores.h),
// the batches and one output buffer, reused by every pass.
struct Inputs {
  explicit Inputs(const GatherBenchOptions& options);

  const GatherBenchOptions& o;
  const size_t row_bytes, batch_bytes, matrix_bytes;
  const double pass_bytes;  // of gathered rows in one pass over the batches
  const Workdir workdir;
  FeatureStore memory, mapped;
  const std::vector<std::vector<int64_t>> batches;
  // One allocation serves the aligned output and the one 16 bytes past alignment.
  const AlignedBuffer out;
  const char* matrix = nullptr;  // the rows in memory
};

Inputs::Inputs(const GatherBenchOptions& options)
    : o(options),
      row_bytes(static_cast<size_t>(o.dim) * sizeof(float)),
      batch_bytes(static_cast<size_t>(o.batch_nodes) * row_bytes),
      matrix_bytes(static_cast<size_t>(o.num_nodes) * row_bytes),
      pass_bytes(static_cast<double>(batch_bytes) * o.num_batches),
      workdir("", "gather-bench"),
      memory(0, o.num_nodes, 0, 0),
      mapped(0, o.num_nodes, 0, 0),
      batches(draw_batches(o)),
      out(batch_bytes + 64) {
  const std::string path = workdir.path() + "/x.bin";
  {
    const std::vector<float> x = make_features(o.num_nodes, o.dim, o.seed);
    write_array(path, {o.num_nodes, o.dim}, x.data());
  }
  memory.put("node", "x", RowSpace::kNode, load_resident(MappedArray(path)));
  mapped.put("node", "x", RowSpace::kNode, ArrayRef::from_mapped(MappedArray(path)));
  matrix = static_cast<const char*>(memory.get("node", "x")->raw_data());
  // Every page of the mapping read once, so that no timed pass reads the disk.
  const auto* m = static_cast<const volatile char*>(mapped.get("node", "x")->raw_data());
  char sum = 0;
  for (size_t at = 0; at < matrix_bytes; at += 4096) sum = static_cast<char>(sum + m[at]);
  (void)sum;
}

// The floor: memcpy of a batch's bytes from consecutive slices of the matrix itself (in
// memory), split over the threads, so that its source comes from memory as the gather's
// does; one small reused source would sit in the cache and flatter the floor.
Pass copy_pass(const Inputs& in, int threads) {
  return pass_of([&] {
    for (int b = 0; b < in.o.num_batches; ++b) {
      const size_t slice = static_cast<size_t>(b) * in.batch_bytes % (in.matrix_bytes - in.batch_bytes + 1);
      const char* source = in.matrix + slice;
      parallel_for(static_cast<int64_t>(in.batch_bytes), threads, [&](int64_t begin, int64_t end) {
        std::memcpy(in.out.data() + begin, source + begin, static_cast<size_t>(end - begin));
      });
    }
  });
}

Pass gather_pass(const Inputs& in, const FeatureStore& store, char* dst, int threads) {
  return pass_of([&] {
    for (const auto& batch : in.batches) store.gather("node", "x", batch, dst, in.batch_bytes, threads);
  });
}

// The row copy kernel with plain stores only, split over the threads as the store splits a
// gather: what the streaming stores change, in the same rounds.
Pass plain_pass(const Inputs& in, int threads) {
  return pass_of([&] {
    for (const auto& batch : in.batches) {
      parallel_for(static_cast<int64_t>(batch.size()), threads, [&](int64_t lo, int64_t hi) {
        RowSource from;
        from.data = in.matrix;
        from.row_bytes = in.row_bytes;
        from.ids = batch.data() + lo;
        from.rows = static_cast<uint64_t>(in.o.num_nodes);
        from.streaming = false;
        copy_rows(from, nullptr, static_cast<size_t>(hi - lo), in.out.data() + lo * in.row_bytes, in.batch_bytes);
      });
    }
  });
}

// The kernel alone on one thread, prefetching `ahead` rows ahead.
double kernel_seconds(const Inputs& in, size_t ahead) {
  return wall_seconds([&] {
    for (const auto& batch : in.batches) {
      RowSource from;
      from.data = in.matrix;
      from.row_bytes = in.row_bytes;
      from.ids = batch.data();
      from.rows = static_cast<uint64_t>(in.o.num_nodes);
      from.prefetch_rows = ahead;
      copy_rows(from, nullptr, batch.size(), in.out.data(), in.batch_bytes);
    }
  });
}

RoundsOptions rounds_of(const GatherBenchOptions& o, std::string title) {
  RoundsOptions rounds;
  rounds.title = std::move(title);
  rounds.unit = "GB/s";
  rounds.warmup = o.warmup_runs;
  rounds.rounds = o.runs;
  return rounds;
}

// One table for `threads`: memcpy (the floor) and each way of gathering, in GB/s by wall
// time. Below it, what the harness's table does not hold: the ratios to memcpy by CPU time
// (medians of the rounds' ratios) and the memory gather's minor page faults per batch.
void measure_threads(const Inputs& in, int threads) {
  struct Way {
    const char* name;
    std::function<Pass()> pass;
    std::vector<Pass> passes;  // the recorded rounds' (harness recording())
  };
  char* out = in.out.data();
  std::vector<Way> ways{
      {"memcpy", [&] { return copy_pass(in, threads); }, {}},
      {"mapped", [&] { return gather_pass(in, in.mapped, out, threads); }, {}},
      {"memory", [&] { return gather_pass(in, in.memory, out, threads); }, {}},
      {"unaligned", [&] { return gather_pass(in, in.memory, out + 16, threads); }, {}},
      {"plain st", [&] { return plain_pass(in, threads); }, {}},
  };
  std::vector<Case> cases;
  for (Way& way : ways) {
    cases.emplace_back(way.name, cases.empty() ? Role::kFloor : Role::kKernel, [&in, &way] {
      const Pass pass = way.pass();
      if (recording()) way.passes.push_back(pass);
      return in.pass_bytes / pass.wall / 1e9;
    });
  }
  run_cases(rounds_of(in.o, std::to_string(threads) + (threads == 1 ? " thread" : " threads")), cases);

  const auto recorded = [&](const Way& way, auto figure) {
    std::vector<double> values;
    for (size_t r = 0; r < way.passes.size(); ++r) values.push_back(figure(r));
    return median(std::move(values));
  };
  std::printf("by CPU time, / memcpy (median of the rounds' ratios):");
  for (size_t w = 1; w < ways.size(); ++w) {
    const double ratio = recorded(ways[w], [&](size_t r) { return ways[0].passes[r].cpu / ways[w].passes[r].cpu; });
    std::printf("%s %s %.2f", w == 1 ? "" : ",", ways[w].name, ratio);
  }
  const Way& memory = ways[2];
  const double faults = recorded(memory, [&](size_t r) {
    return static_cast<double>(memory.passes[r].faults) / in.o.num_batches;
  });
  std::printf("\nmemory: median %.1f minor page faults per batch\n", faults);
  std::fflush(stdout);
}

// The kernel alone on one thread at each prefetch distance, next to memcpy on one thread.
void sweep_prefetch(const Inputs& in) {
  std::vector<Case> cases{{"memcpy", Role::kFloor, [&in] { return in.pass_bytes / copy_pass(in, 1).wall / 1e9; }}};
  for (int ahead : in.o.prefetch_sweep) {
    cases.emplace_back("distance " + std::to_string(ahead), Role::kKernel, [&in, ahead] {
      return in.pass_bytes / kernel_seconds(in, static_cast<size_t>(ahead)) / 1e9;
    });
  }
  run_cases(rounds_of(in.o, "row copy kernel (graph/row_copy.h) from memory, one thread, by prefetch distance (rows "
                            "ahead; default " + std::to_string(kPrefetchRows) + ")"),
            cases);
}

}  // namespace

int run_gather_bench(const GatherBenchOptions& o) {
  check_options(o);
  const Inputs in(o);
  std::printf(
      "\nFeature gather: %lld x %lld float32 (%.0f MiB), %d batches x %lld distinct random ids (%.1f MiB of rows "
      "each); every case passes over all batches once a round; ratios to memcpy by wall time in the tables, by "
      "CPU time below them\n",
      (long long)o.num_nodes, (long long)o.dim, static_cast<double>(in.matrix_bytes) / (1 << 20), o.num_batches,
      (long long)o.batch_nodes, static_cast<double>(in.batch_bytes) / (1 << 20));
  for (int threads : o.threads) measure_threads(in, threads);
  if (!o.prefetch_sweep.empty()) sweep_prefetch(in);
  std::printf(
      "\nGB/s: bytes of gathered rows per second. memcpy: the same bytes from contiguous slices of the matrix in "
      "memory, split over the same threads. mapped: FeatureStore::gather from the array file mapped (4 KB pages, "
      "every page in the page cache); memory: from the copy in huge-page memory (base/resident_array.h), as a "
      "partition that fits in memory keeps its features; both into a 64-byte aligned buffer (as a torch "
      "tensor's); unaligned: memory into a buffer 16 bytes past that alignment (as a large malloc's); plain st: "
      "memory, aligned, with the row copy kernel's plain stores only (no streaming stores). Page faults: minor "
      "faults per batch of the memory gather (its output buffer is reused).\n");
  return 0;
}

}  // namespace partita::bench
