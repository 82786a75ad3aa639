#include "bench/disk_bench.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "base/array_file.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/random.h"
#include "base/stopwatch.h"
#include "bench/harness.h"
#include "bench/input_graph.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "graph/disk_rows.h"
#include "graph/neighbor_sampler.h"
#include "partitioner/generators.h"
#include "partitioner/partition_stores.h"

namespace partita::bench {

namespace {

namespace fs = std::filesystem;

void check_options(const DiskBenchOptions& o) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw UsageError("bench disk: " + message);
  };
  require(o.num_nodes > 0 && o.dim > 0, "nodes and dim must be positive");
  require(o.batch_size > 0 && o.num_batches > 0 && o.runs > 0, "batch size, batches and runs must be positive");
  require(!o.fanouts.empty(), "fanouts must list at least one hop");
  require(o.queue_depth >= 1 && o.queue_depth <= 4096, "queue depth must be in [1, 4096]");
  require(o.memory_limit_mb >= 0, "memory limit must not be negative");
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  if (!out) throw Error("bench disk: cannot write '" + text + "' to " + path + ": " + errno_text());
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The memory budget: this process in a cgroup of its own with a memory limit, for as long as
// it lives (then back in the cgroup it came from). cgroup v2 where it is mounted alone
// (memory.max, memory.peak), else v1's memory controller (memory.limit_in_bytes,
// memory.max_usage_in_bytes). Pages already charged stay with the old cgroup: what is
// counted is what the process takes after it moves (the page cache of its reads among it).
class MemoryCgroup {
 public:
  explicit MemoryCgroup(int64_t limit_mb) {
    const bool v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
    std::string from;  // this process's cgroup, relative to the hierarchy's root
    std::ifstream self("/proc/self/cgroup");
    for (std::string line; std::getline(self, line);) {
      if (v2 ? line.rfind("0::", 0) == 0 : line.find(":memory:") != std::string::npos) from = line.substr(line.rfind(':') + 1);
    }
    const std::string root = v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";
    if (!fs::is_directory(root)) throw UsageError("bench disk: --memory-limit-mb: no memory cgroup at " + root);
    parent_ = root + from;
    dir_ = parent_ + "/partita-bench-disk-" + std::to_string(::getpid());
    std::error_code ec;
    if (!fs::create_directory(dir_, ec) || ec) {
      throw UsageError("bench disk: --memory-limit-mb: cannot make the cgroup " + dir_ + " (" + ec.message() +
                       "; needs root, or 0 for none)");
    }
    peak_file_ = dir_ + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes");
    try {
      write_text(dir_ + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), std::to_string(limit_mb << 20));
      write_text(dir_ + "/cgroup.procs", std::to_string(::getpid()));
    } catch (...) {
      fs::remove(dir_, ec);
      throw;
    }
    spdlog::info("bench disk: in cgroup {} with a memory limit of {} MiB", dir_, limit_mb);
  }
  ~MemoryCgroup() {
    try {
      write_text(parent_ + "/cgroup.procs", std::to_string(::getpid()));
      std::error_code ec;
      fs::remove(dir_, ec);
    } catch (const Error& e) {
      spdlog::warn("{}", e.what());
    }
  }
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // The most memory charged to the cgroup so far.
  int64_t peak_bytes() const {
    const std::string text = read_line(peak_file_);
    return text.empty() ? -1 : std::stoll(text);
  }

 private:
  std::string parent_, dir_, peak_file_;
};

// The device's rate: `requests` read with O_DIRECT by a bare io_uring loop at `depth` reads
// in flight, with no copy and no bookkeeping beyond refilling the queue. Returns seconds.
double device_reads(const std::string& path, const std::vector<DiskRequest>& requests, int depth) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT));
  if (fd.get() < 0) throw file_error(path, "cannot open with O_DIRECT: " + errno_text());
  io_uring ring{};
  if (int rc = io_uring_queue_init(static_cast<unsigned>(depth), &ring, 0); rc < 0) {
    throw Error(std::string("bench disk: io_uring_queue_init: ") + std::strerror(-rc));
  }
  size_t span = 4096;
  for (const DiskRequest& r : requests) span = std::max<size_t>(span, r.length);
  void* memory = nullptr;
  if (::posix_memalign(&memory, 4096, span * static_cast<size_t>(depth)) != 0) throw Error("bench disk: out of memory");
  std::unique_ptr<char, decltype(&std::free)> buffers(static_cast<char*>(memory), &std::free);
  Stopwatch watch;
  size_t issued = 0, done = 0;
  std::vector<int> free_slots;
  for (int s = 0; s < depth; ++s) free_slots.push_back(s);
  while (done < requests.size()) {
    int queued = 0;
    while (issued < requests.size() && !free_slots.empty()) {
      const int slot = free_slots.back();
      free_slots.pop_back();
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_read(sqe, fd.get(), buffers.get() + static_cast<size_t>(slot) * span, requests[issued].length,
                         requests[issued].offset);
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
      ++issued;
      ++queued;
    }
    if (queued > 0) {
      const int submitted = io_uring_submit(&ring);
      if (submitted < 0) throw Error(std::string("bench disk: io_uring_submit: ") + std::strerror(-submitted));
    }
    io_uring_cqe* cqe = nullptr;
    if (int rc = io_uring_wait_cqe(&ring, &cqe); rc < 0) throw Error(std::string("bench disk: ") + std::strerror(-rc));
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      if (cqe->res < 0) throw file_error(path, std::string("device read failed: ") + std::strerror(-cqe->res));
      free_slots.push_back(static_cast<int>(cqe->user_data));
      ++seen;
    }
    io_uring_cq_advance(&ring, seen);
    done += seen;
  }
  const double seconds = watch.seconds();
  io_uring_queue_exit(&ring);
  return seconds;
}

uint64_t total_bytes(const std::vector<DiskRequest>& requests) {
  uint64_t bytes = 0;
  for (const DiskRequest& r : requests) bytes += r.length;
  return bytes;
}

// Drops the file's pages from the page cache: a buffered reader starts cold every round.
void drop_cached(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() >= 0) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
}

}  // namespace

int run_disk_bench(const DiskBenchOptions& o) {
  check_options(o);
  Workdir work(o.workdir, "partita-bench-disk");
  const std::string x_path = work.path() + "/x.arr";
  std::vector<std::vector<int64_t>> batches;
  {
    RmatOptions rmat;
    rmat.num_nodes = o.num_nodes;
    rmat.feature_dim = o.dim;
    rmat.undirected = true;
    rmat.a = 0.45;
    rmat.b = 0.22;
    rmat.c = 0.22;
    rmat.seed = o.seed;
    if (!o.input.empty()) check_input_graph(o.input, {"x.npy"});
    Dataset d = input_or_rmat(o.input, rmat);
    if (d.feature_dim <= 0) throw UsageError("bench disk: the graph has no node features");
    write_array(x_path, {d.num_nodes, d.feature_dim}, d.x.data());
    std::vector<float>().swap(d.x);
    Topology topology = topology_from_dataset(d);
    SamplerConfig config;
    config.fanouts = {o.fanouts};
    NeighborSampler sampler(topology, config);
    std::vector<int64_t> seeds(static_cast<size_t>(d.num_nodes));
    for (int64_t v = 0; v < d.num_nodes; ++v) seeds[v] = v;
    Rng rng(o.seed);
    shuffle(seeds, rng);
    for (int b = 0; b < o.num_batches; ++b) {
      const size_t offset = static_cast<size_t>(b * o.batch_size) % (seeds.size() - static_cast<size_t>(std::min<int64_t>(o.batch_size, d.num_nodes - 1)));
      Span<const int64_t> batch(seeds.data() + offset, static_cast<size_t>(std::min<int64_t>(o.batch_size, d.num_nodes)));
      batches.push_back(sampler.sample(batch, {1, 0, static_cast<uint64_t>(b)}).node_ids);
    }
  }  // the graph and its topology go: what remains is the feature file and the batches
  DiskReadOptions read_options;
  read_options.queue_depth = o.queue_depth;
  // One reader per merge gap; each gap's reads for the batches, in the store's order, are
  // what the bare reader replays.
  struct Gap {
    uint64_t bytes;
    std::unique_ptr<const DiskRows> rows;
    std::vector<DiskRequest> reads;
  };
  std::vector<Gap> gaps;
  for (uint64_t g : o.merge_gaps) {
    DiskReadOptions options = read_options;
    options.merge_gap_bytes = g;
    Gap gap{g, std::make_unique<const DiskRows>(MappedArray(x_path), options), {}};
    for (const auto& b : batches) {
      const std::vector<DiskRequest> r = gap.rows->requests(b, 0);
      gap.reads.insert(gap.reads.end(), r.begin(), r.end());
    }
    gaps.push_back(std::move(gap));
  }
  const DiskRows& rows = *gaps.back().rows;
  const uint64_t feature_bytes = static_cast<uint64_t>(rows.rows()) * rows.row_bytes();
  size_t total_rows = 0, largest = 0;
  for (const auto& b : batches) {
    total_rows += b.size();
    largest = std::max(largest, b.size());
  }
  // The device's plain random-read rate: one row's span for as many uniformly random rows.
  std::vector<DiskRequest> single_reads;
  Rng rng(o.seed);
  const uint64_t align = rows.alignment();
  for (size_t i = 0; i < total_rows; ++i) {
    const uint64_t at = sizeof(ArrayHeader) + rng.below(static_cast<uint64_t>(rows.rows())) * rows.row_bytes();
    const uint64_t start = at / align * align;
    single_reads.push_back({start, static_cast<uint32_t>((at + rows.row_bytes() + align - 1) / align * align - start)});
  }
  // pread reads one merged read at a time: a slice of the first batch tells its rate.
  const Span<const int64_t> pread_slice(batches[0].data(), std::min<size_t>(batches[0].size(), 20000));
  // Output buffers, touched before the cgroup: the limit counts what the reads take.
  std::vector<char> out(largest * rows.row_bytes(), 1);
  std::vector<char> expected(batches[0].size() * rows.row_bytes());
  {
    // The first batch's rows read the plainest way (buffered pread): every reader is checked
    // against them.
    DiskReadOptions plain;
    plain.direct = false;
    ::setenv("PARTITA_NO_IO_URING", "1", 1);
    const DiskRows check(MappedArray(x_path), plain);
    ::unsetenv("PARTITA_NO_IO_URING");
    check.read(batches[0], 0, expected.data());
  }

  std::printf("\nfeatures on disk: %lld rows x %zu bytes = %llu MiB in %s; %s, %s, one row alone a %zu-byte read, queue depth %d\n",
              (long long)rows.rows(), rows.row_bytes(), (unsigned long long)(feature_bytes >> 20), x_path.c_str(),
              disk_backend_name(rows.backend()), rows.direct() ? "O_DIRECT" : "buffered (no O_DIRECT here)",
              rows.request_bytes(), o.queue_depth);
  std::printf("batches: %zu of %lld seeds, fanouts", batches.size(), (long long)o.batch_size);
  for (int f : o.fanouts) std::printf(" %d", f);
  std::printf(": %.0f nodes per batch on average\n", static_cast<double>(total_rows) / static_cast<double>(batches.size()));
  const double n = static_cast<double>(total_rows), mb = 1e6;
  for (const Gap& gap : gaps) {
    const double bytes = static_cast<double>(total_bytes(gap.reads));
    std::printf("merge gap %llu: %zu reads for the batches' %zu rows (%.1f rows, %.1f KB a read; %.0f%% of the bytes read are rows)\n",
                (unsigned long long)gap.bytes, gap.reads.size(), total_rows, n / static_cast<double>(gap.reads.size()),
                bytes / static_cast<double>(gap.reads.size()) / 1e3, 100 * n * static_cast<double>(rows.row_bytes()) / bytes);
  }

  std::unique_ptr<MemoryCgroup> cgroup;
  if (o.memory_limit_mb > 0) {
    cgroup = std::make_unique<MemoryCgroup>(o.memory_limit_mb);
    std::printf("memory budget: %lld MiB (a cgroup), %.2fx of the features\n", (long long)o.memory_limit_mb,
                static_cast<double>(o.memory_limit_mb << 20) / static_cast<double>(feature_bytes));
  }
  std::fflush(stdout);
  // Each case's figure is rows/s; the file's cached pages are dropped before each.
  const double slice = static_cast<double>(pread_slice.size());
  const auto cold = [&x_path] { drop_cached(x_path); };
  const std::string single_name = "device: one read per random row";
  const auto device_name = [](const Gap& gap) { return "device: the store's reads, gap " + std::to_string(gap.bytes); };
  const auto store_name = [](const Gap& gap) { return "disk store gather (io_uring), gap " + std::to_string(gap.bytes); };
  const std::string pread_name = "disk store gather (pread), gap " + std::to_string(read_options.merge_gap_bytes) +
                                 ", " + std::to_string(pread_slice.size()) + " rows";
  std::vector<Case> cases;
  cases.emplace_back(single_name, Role::kBaseline,
                     [&] { return n / device_reads(x_path, single_reads, o.queue_depth); }, cold);
  for (Gap& gap : gaps) {
    cases.emplace_back(device_name(gap), Role::kKernel,
                       [&] { return n / device_reads(x_path, gap.reads, o.queue_depth); }, cold);
    cases.emplace_back(store_name(gap), Role::kKernel,
                       [&] {
                         const double seconds = wall_seconds([&] {  // the first batch last
                           for (size_t b = batches.size(); b-- > 0;) gap.rows->read(batches[b], 0, out.data());
                         });
                         if (std::memcmp(out.data(), expected.data(), expected.size()) != 0) {
                           throw Error("bench disk: rows differ");
                         }
                         return n / seconds;
                       },
                       cold);
  }
  std::unique_ptr<DiskRows> fallback;
  cases.emplace_back(pread_name, Role::kKernel,
                     [&] {
                       const double seconds = wall_seconds([&] { fallback->read(pread_slice, 0, out.data()); });
                       if (std::memcmp(out.data(), expected.data(), pread_slice.size() * rows.row_bytes()) != 0) {
                         throw Error("bench disk: pread rows differ");
                       }
                       return slice / seconds;
                     },
                     [&] {
                       drop_cached(x_path);
                       ::setenv("PARTITA_NO_IO_URING", "1", 1);
                       fallback = std::make_unique<DiskRows>(MappedArray(x_path), read_options);
                       ::unsetenv("PARTITA_NO_IO_URING");
                     });
  RoundsOptions rounds;
  rounds.title = "rows/s of each reader";
  rounds.unit = "rows/s";
  rounds.warmup = 0;  // every reader starts from a cold page cache anyway
  rounds.rounds = o.runs;
  const Results results = run_cases(rounds, cases);

  std::printf("\n%-48s | %10s | %10s | %10s | %10s\n", "reader", "reads/s", "rows/s", "row MB/s", "read MB/s");
  const auto line = [&](const std::string& name, double reads, double rows_done, double bytes, double seconds) {
    std::printf("%-48s | %10.0f | %10.0f | %10.1f | %10.1f\n", name.c_str(), reads / seconds, rows_done / seconds,
                rows_done * static_cast<double>(rows.row_bytes()) / mb / seconds, bytes / mb / seconds);
  };
  // The same medians as reads/s and MB/s: each reader's seconds for its rows at its median rate.
  line(single_name, n, n, static_cast<double>(total_bytes(single_reads)), n / results.median(single_name));
  for (const Gap& gap : gaps) {
    const double reads = static_cast<double>(gap.reads.size()), bytes = static_cast<double>(total_bytes(gap.reads));
    line(device_name(gap), reads, n, bytes, n / results.median(device_name(gap)));
    line(store_name(gap), reads, n, bytes, n / results.median(store_name(gap)));
  }
  const std::vector<DiskRequest> pread_reads = DiskRows(MappedArray(x_path), read_options).requests(pread_slice, 0);
  line(pread_name, static_cast<double>(pread_reads.size()), slice, static_cast<double>(total_bytes(pread_reads)),
       slice / results.median(pread_name));
  std::printf("\n");
  for (const Gap& gap : gaps) {
    std::printf("gap %llu: store / device on the same reads %.2f (goal >= 0.7); rows/s / one-read-per-row rows/s %.2f\n",
                (unsigned long long)gap.bytes, results.ratio_between(store_name(gap), device_name(gap)),
                results.ratio(store_name(gap)));
  }
  std::printf("medians of %d interleaved rounds; ratios: medians of the rounds' ratios\n", o.runs);
  if (cgroup) {
    std::printf("cgroup peak memory during the rounds: %.1f MiB of a %lld MiB budget (features: %llu MiB)\n",
                static_cast<double>(cgroup->peak_bytes()) / (1 << 20), (long long)o.memory_limit_mb,
                (unsigned long long)(feature_bytes >> 20));
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace partita::bench
