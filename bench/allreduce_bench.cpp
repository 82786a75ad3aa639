#include "bench/allreduce_bench.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "base/stopwatch.h"
#include "base/subprocess.h"
#include "bench/harness.h"
#include "bench/stats.h"
#include "runtime/actor_system.h"
#include "runtime/client.h"
#include "runtime/tls/caf_gateway.h"
#include "runtime/collective/allreduce_client.h"
#include "runtime/collective/allreduce_group.h"
#include "runtime/collective/allreduce_member.h"
#include "runtime/errors.h"

namespace partita::bench {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using runtime::Allreduce;
using runtime::allreduce_member;
using runtime::AllreduceConfig;
using runtime::connect_allreduce_group;
using runtime::spawn_allreduce_member;

namespace {

// Quoted for this machine class (not rerun here): gloo, 2 processes, 16M floats.
constexpr double kQuotedGloo2x16M = 49.0;

// Every rank's input: small integers, so the check's sum is exact in float32. The measured
// operations sum the previous results again, which costs nothing between operations: the
// values grow by the group size each time (positive, so at worst they reach +inf, never
// NaN), and float additions take the same time whatever the values except denormals, which
// cannot occur.
void fill(std::vector<float>& data, int rank) {
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 7 + rank);
}

// Throws unless data holds the sum of every rank's fill().
void check(const std::vector<float>& data, int size) {
  const float base = static_cast<float>(size * (size - 1) / 2);
  for (size_t i = 0; i < data.size(); ++i) {
    const float want = static_cast<float>(size) * static_cast<float>(i % 7) + base;
    if (data[i] != want) {
      throw Error("allreduce bench: wrong sum at element " + std::to_string(i) + ": " + std::to_string(data[i]) +
                  ", expected " + std::to_string(want));
    }
  }
}

// CPU time of the whole process (every thread), in ms.
double process_cpu_ms() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(usage.ru_utime) + ms(usage.ru_stime);
}

struct RankTimes {
  std::vector<double> ms;  // wall time of each measured operation
  double cpu_ms = 0;       // process CPU time per measured operation
};

// Times `operations` calls of `sum` after `warmup` others; then checks one exact sum.
template <typename Sum>
RankTimes time_operations(const AllreduceRankOptions& o, Sum sum) {
  std::vector<float> data(static_cast<size_t>(o.floats));
  fill(data, o.rank);
  RankTimes times;
  double cpu_start = 0;
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    if (i == o.warmup) cpu_start = process_cpu_ms();
    Stopwatch watch;
    sum(data);
    if (i >= o.warmup) times.ms.push_back(watch.seconds() * 1e3);
  }
  times.cpu_ms = (process_cpu_ms() - cpu_start) / o.iterations;
  fill(data, o.rank);
  sum(data);
  check(data, o.size);
  return times;
}

void print_times(const RankTimes& times) {
  std::ostringstream line;
  line << "allreduce cpu ms: " << times.cpu_ms << "\n";
  line << "allreduce times ms:";
  for (double t : times.ms) line << ' ' << t;
  std::cout << line.str() << std::endl;
}


// Waits for `pattern` in the child's stdout; returns its first group.
std::string wait_for_line(ChildProcess& child, const std::regex& pattern, std::chrono::seconds timeout,
                          const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string out = child.output_so_far();
    if (std::regex_search(out, match, pattern)) return match[1];
    if (!child.running()) break;
    std::this_thread::sleep_for(5ms);
  }
  throw Error("allreduce bench: " + what + ": " + child.errors_so_far());
}

std::vector<double> parse_times(const std::string& text) {
  std::istringstream in(text);
  std::vector<double> ms;
  for (double t; in >> t;) ms.push_back(t);
  return ms;
}

std::vector<std::string> rank_args(const char* command, int rank, int size, int64_t floats, int warmup, int iterations) {
  return {self_executable(), "--log-level", "warn", "bench",  command,
          "--rank",          std::to_string(rank),  "--size", std::to_string(size),
          "--floats",        std::to_string(floats), "--warmup", std::to_string(warmup),
          "--iterations",    std::to_string(iterations)};
}

// Per measured operation the slowest rank's time (all ranks end an operation together,
// give or take the last segment), then the median over the operations.
double slowest_rank_median(const std::vector<std::vector<double>>& times, int iterations) {
  std::vector<double> slowest(iterations, 0);
  for (const auto& rank : times) {
    if (static_cast<int>(rank.size()) != iterations) throw Error("allreduce bench: a rank reported too few times");
    for (int i = 0; i < iterations; ++i) slowest[i] = std::max(slowest[i], rank[i]);
  }
  return median(slowest);
}

// One run's figures: the median of the slowest rank's operation times, and the CPU time a
// rank's process spends per operation (the mean over ranks).
struct RunFigures {
  double ms = 0;
  double cpu_ms = 0;
};

// Reads every rank's report (times, then CPU) from its stdout.
RunFigures collect(std::vector<std::unique_ptr<ChildProcess>>& ranks, int iterations, const std::string& what) {
  static const std::regex times_line(R"(allreduce times ms:([0-9. e+-]*)\n)");
  static const std::regex cpu_line(R"(allreduce cpu ms: ([0-9.e+-]+)\n)");
  std::vector<std::vector<double>> times;
  RunFigures figures;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string who = what + " " + std::to_string(r);
    const std::string line = wait_for_line(*ranks[r], times_line, 300s, who);
    spdlog::debug("{} times ms:{}", who, line);
    times.push_back(parse_times(line));
    figures.cpu_ms += std::stod(wait_for_line(*ranks[r], cpu_line, 10s, who)) / static_cast<double>(ranks.size());
  }
  figures.ms = slowest_rank_median(times, iterations);
  return figures;
}

RunFigures run_gloo_group(int size, int64_t floats, const AllreduceBenchOptions& o, const std::string& workdir) {
  const std::string store = workdir + "/gloo-" + std::to_string(size) + "-" + std::to_string(floats);
  fs::remove_all(store);
  fs::create_directories(store);
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < size; ++r) {
    std::vector<std::string> argv = rank_args("allreduce-gloo", r, size, floats, o.warmup, o.iterations);
    argv.insert(argv.end(), {"--store", store});
    ranks.push_back(std::make_unique<ChildProcess>(argv));
  }
  const RunFigures figures = collect(ranks, o.iterations, "gloo rank");
  for (auto& rank : ranks) {
    ProcessResult result = rank->wait(60);
    if (result.exit_code != 0) {
      throw Error("allreduce bench: a gloo rank failed (exit status " + std::to_string(result.exit_code) +
                  "): " + result.err);
    }
  }
  return figures;
}


// The actor a benchmark child published at 127.0.0.1:port.
caf::actor connect_member(caf::actor_system& system, uint16_t port) {
  return caf::actor_cast<caf::actor>(
      runtime::connect_published(system, runtime::Endpoint{"127.0.0.1", port}, 30s, "allreduce bench: cannot reach").actor);
}

// Each run's driver has an actor system of its own, so that nothing a finished run's
// processes left in the middleman (cached connections to ports the system may hand out
// again, proxies of their actors) meets the next run.
// The group's messages are built-in CAF types: nothing to register.
runtime::ActorSystemOptions driver_options() { return runtime::ActorSystemOptions(); }

RunFigures run_partita_group(int size, int64_t floats, const AllreduceBenchOptions& o) {
  runtime::ActorSystem system(driver_options());
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < size; ++r) {
    ranks.push_back(
        std::make_unique<ChildProcess>(rank_args("allreduce-member", r, size, floats, o.warmup, o.iterations)));
  }
  const std::regex ready(R"(allreduce member listening on 127\.0\.0\.1:([0-9]+)\n)");
  std::vector<caf::actor> members;
  for (int r = 0; r < size; ++r) {
    const std::string port = wait_for_line(*ranks[r], ready, 60s, "member " + std::to_string(r) + " did not start");
    members.push_back(connect_member(system, static_cast<uint16_t>(std::stoi(port))));
  }
  // Stops the members (which ends their processes) also when something below throws.
  struct Stop {
    std::vector<caf::actor>& members;
    ~Stop() {
      for (const auto& m : members) caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
    }
  } stop{members};
  connect_allreduce_group(system, members, 60s);
  const RunFigures figures = collect(ranks, o.iterations, "member");
  // Every rank has reported (after its checked sum), so no operation is under way: stop the
  // members, and end a process that does not follow within seconds (its report stands).
  for (const auto& m : members) caf::anon_send_exit(m, caf::exit_reason::user_shutdown);
  for (auto& rank : ranks) {
    ProcessResult result = rank->wait(10);
    if (result.exit_code != 0) {
      spdlog::warn("allreduce bench: a member process ended with status {}{}: {}", result.exit_code,
                   result.timed_out ? " (killed: it did not stop)" : "", result.err);
    }
  }
  return figures;
}

// Moves the bytes one member of a 2-member group sends and receives in an operation (n
// floats each way) through CAF messages to a process that echoes them; the median time.
double caf_transfer_ms(int64_t floats, const AllreduceBenchOptions& o) {
  runtime::ActorSystem system(driver_options());
  ChildProcess child({self_executable(), "--log-level", "warn", "bench", "allreduce-echo"});
  const std::regex ready(R"(allreduce echo listening on 127\.0\.0\.1:([0-9]+)\n)");
  const caf::actor echo =
      connect_member(system, static_cast<uint16_t>(std::stoi(wait_for_line(child, ready, 60s, "no echo process"))));
  struct Stop {
    caf::actor echo;
    ~Stop() { caf::anon_send_exit(echo, caf::exit_reason::user_shutdown); }
  } stop{echo};
  constexpr size_t kMessageBytes = size_t{4} << 20;
  const size_t total = static_cast<size_t>(floats) * sizeof(float);
  const std::vector<char> source(std::min(total, kMessageBytes), 1);
  caf::scoped_actor self{system};
  std::vector<double> ms;
  for (int i = 0; i < o.warmup + o.iterations; ++i) {
    Stopwatch watch;
    size_t messages = 0;
    for (size_t at = 0; at < total; at += kMessageBytes, ++messages) {
      // A ring over messages copies each segment of the caller's buffer into a message.
      self->send(echo, std::vector<char>(source.begin(), source.begin() + std::min(kMessageBytes, total - at)));
    }
    size_t back = 0;
    bool silent = false;
    for (size_t m = 0; m < messages && !silent; ++m) {
      self->receive([&](std::vector<char>& bytes) { back += bytes.size(); },
                    caf::after(std::chrono::seconds(60)) >> [&] { silent = true; });
    }
    if (back != total) throw Error("allreduce bench: the echo process stopped answering");
    if (i >= o.warmup) ms.push_back(watch.seconds() * 1e3);
  }
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  child.wait(30);
  return median(ms);
}

std::string floats_text(int64_t floats) {
  if (floats % (1 << 20) == 0) return std::to_string(floats >> 20) + "M";
  return std::to_string(floats);
}

}  // namespace

void run_allreduce_bench(const AllreduceBenchOptions& o) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string workdir =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/partita-allreduce-bench-" + std::to_string(::getpid());
  fs::create_directories(workdir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{workdir};
  std::printf("\nallreduce of float32 buffers, one rank per process over loopback; %d warm-up + %d measured "
              "operations per run, %d runs per row; per run the median of the slowest rank's times\n",
              o.warmup, o.iterations, o.runs);
  for (int64_t floats : o.floats) {
    for (int size : o.members) {
      std::vector<double> gloo_cpu, our_cpu;
      RoundsOptions rounds;
      rounds.title = floats_text(floats) + " floats, " + std::to_string(size) + " members: ms per operation";
      rounds.unit = "ms";
      rounds.warmup = 0;  // every run starts fresh processes, which warm up with `--warmup` operations
      rounds.rounds = o.runs;
      const Results results = run_cases(rounds, {{"gloo", Role::kBaseline,
                                                  [&] {
                                                    const RunFigures g = run_gloo_group(size, floats, o, workdir);
                                                    gloo_cpu.push_back(g.cpu_ms);
                                                    return g.ms;
                                                  }},
                                                 {"partita", Role::kKernel, [&] {
                                                    const RunFigures p = run_partita_group(size, floats, o);
                                                    our_cpu.push_back(p.cpu_ms);
                                                    return p.ms;
                                                  }}});
      std::printf("partita/gloo %.2f; cpu ms per operation and rank: gloo %.1f, partita %.1f\n",
                  results.ratio("partita"), median(gloo_cpu), median(our_cpu));
      std::fflush(stdout);
    }
  }
  std::printf("\n(cpu: CPU ms one rank's process spends per operation, all its threads)\n");
  std::printf("\ngloo, 2 processes, 16M floats, quoted for this machine class: %.0f ms\n", kQuotedGloo2x16M);
  if (std::find(o.members.begin(), o.members.end(), 2) != o.members.end()) {
    std::printf("\nCAF messages (4 MiB each) moving one 2-member operation's bytes to and from another process:\n");
    for (int64_t floats : o.floats) {
      std::printf("%8s %8d %14s %14.1f ms (transport alone)\n", floats_text(floats).c_str(), 2, "",
                  caf_transfer_ms(floats, o));
    }
  }
}

void run_allreduce_member_rank(const AllreduceRankOptions& o) {
  runtime::ActorSystem system{runtime::ActorSystemOptions()};
  allreduce_member member = spawn_allreduce_member(system, AllreduceConfig{o.rank, o.size, "127.0.0.1"});
  struct StopOnUnwind {
    allreduce_member member;
    ~StopOnUnwind() { caf::anon_send_exit(member, caf::exit_reason::user_shutdown); }
  } stop{member};
  auto port = runtime::tls::publish(system.get(), caf::actor_cast<caf::actor>(member), runtime::Endpoint{"127.0.0.1", 0}, false);
  if (!port) throw Error("allreduce member: cannot publish: " + runtime::describe(system, port.error()));
  std::cout << "allreduce member listening on 127.0.0.1:" << *port << std::endl;
  // The first sum waits until the benchmark has wired the group.
  Allreduce client(system, caf::actor_cast<caf::actor>(member), 120s);
  print_times(time_operations(o, [&](std::vector<float>& data) { client.sum(data.data(), data.size()); }));
  // Stay until the benchmark stops the member: leaving earlier would fail the operations
  // other ranks may still be finishing.
  caf::scoped_actor self{system};
  self->monitor(member);
  self->receive([](caf::down_msg&) {}, caf::after(120s) >> [] { spdlog::warn("allreduce member: never stopped"); });
}

void run_echo_process() {
  runtime::ActorSystemOptions system_options;
  runtime::ActorSystem system(system_options);
  caf::actor echo = system.get().spawn([]() -> caf::behavior {
    return {[](std::vector<char>& bytes) { return std::move(bytes); }};
  });
  struct StopOnUnwind {
    caf::actor echo;
    ~StopOnUnwind() { caf::anon_send_exit(echo, caf::exit_reason::user_shutdown); }
  } stop{echo};
  auto port = runtime::tls::publish(system.get(), echo, runtime::Endpoint{"127.0.0.1", 0}, false);
  if (!port) throw Error("allreduce echo: cannot publish: " + runtime::describe(system, port.error()));
  std::cout << "allreduce echo listening on 127.0.0.1:" << *port << std::endl;
  caf::scoped_actor self{system};
  self->monitor(echo);
  self->receive([](caf::down_msg&) {}, caf::after(std::chrono::seconds(600)) >> [] {});
}

void run_gloo_rank(const AllreduceRankOptions& o) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(o.store);
  auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
  context->setTimeout(120s);
  context->connectFullMesh(store, device);
  uint32_t tag = 0;
  const RankTimes times = time_operations(o, [&](std::vector<float>& data) {
    // As PyTorch's gloo process group does for a dense CPU tensor.
    gloo::AllreduceOptions options(context);
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    options.setOutput(data.data(), data.size());
    options.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    options.setTag(tag++);
    gloo::allreduce(options);
  });
  print_times(times);
  // Nobody leaves while another rank may still be reading.
  gloo::BarrierOptions barrier(context);
  barrier.setTag(tag++);
  gloo::barrier(barrier);
}

}  // namespace partita::bench
