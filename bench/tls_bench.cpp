#include "bench/tls_bench.h"

#include <sys/resource.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/stopwatch.h"
#include "bench/stats.h"
#include "runtime/collective/ring.h"
#include "runtime/tls/credentials.h"
#include "runtime/transport/connection.h"

namespace partita::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(120);

struct Transfer {
  double seconds = 0;       // wall time, the receiver's first byte asked for to its last got
  double user_seconds = 0;  // the process's CPU time over the same span (both ends), in user
  double system_seconds = 0;  // and in the kernel (system calls, TCP, the loopback's copies)
};

struct CpuSeconds {
  double user = 0, system = 0;
};

CpuSeconds process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {seconds(u.ru_utime), seconds(u.ru_stime)};
}

// Streams `bytes` from one thread to another over one transport connection.
Transfer transfer(int64_t bytes) {
  runtime::Listener listener("127.0.0.1");
  const uint64_t token = 42;
  constexpr size_t kChunk = 1 << 20;
  std::vector<char> out(kChunk, 7), in(kChunk);
  std::string error;
  std::thread sender([&] {
    try {
      const auto until = Clock::now() + kDeadline;
      runtime::Connection c = runtime::Connection::connect(listener.endpoint(), token, 1, "receiver", until, nullptr);
      c.confirm(token, 0, until, nullptr);
      for (int64_t left = bytes; left > 0; left -= static_cast<int64_t>(kChunk)) {
        c.send_all(out.data(), static_cast<size_t>(std::min<int64_t>(left, kChunk)), until, nullptr, "sending");
      }
      char done;
      c.recv_all(&done, 1, until, nullptr, "waiting for the receiver");
    } catch (const Error& e) {
      error = e.what();
    }
  });
  const auto until = Clock::now() + kDeadline;
  runtime::Connection c = listener.accept(token, 1, 0, "sender", until, nullptr);
  const CpuSeconds cpu_start = process_cpu_seconds();
  Stopwatch watch;
  for (int64_t left = bytes; left > 0; left -= static_cast<int64_t>(kChunk)) {
    c.recv_all(in.data(), static_cast<size_t>(std::min<int64_t>(left, kChunk)), until, nullptr, "receiving");
  }
  const double seconds = watch.seconds();
  const CpuSeconds cpu_end = process_cpu_seconds();
  const Transfer result{seconds, cpu_end.user - cpu_start.user, cpu_end.system - cpu_start.system};
  const char done = 1;
  c.send_all(&done, 1, until, nullptr, "acknowledging");
  sender.join();
  if (!error.empty()) throw Error("bench tls: " + error);
  return result;
}

// Milliseconds per allreduce of `floats` among `members` rings on threads of this process.
double allreduce_ms(int64_t floats, int members, int operations) {
  std::vector<std::unique_ptr<runtime::Listener>> listeners;
  std::vector<std::unique_ptr<runtime::Ring>> rings;
  for (int r = 0; r < members; ++r) {
    listeners.push_back(std::make_unique<runtime::Listener>("127.0.0.1"));
    rings.push_back(std::make_unique<runtime::Ring>(r, members));
  }
  std::vector<std::vector<float>> data(members, std::vector<float>(static_cast<size_t>(floats), 1.0f));
  std::vector<double> ms(members);
  std::vector<std::string> errors(members);
  std::vector<std::thread> threads;
  for (int r = 0; r < members; ++r) {
    threads.emplace_back([&, r] {
      try {
        const auto until = Clock::now() + kDeadline;
        rings[r]->wire(*listeners[r], listeners[(r + 1) % members]->endpoint(), 99, until);
        rings[r]->run(data[r].data(), data[r].size(), 0, until);  // warm-up
        Stopwatch watch;
        for (int op = 1; op <= operations; ++op) {
          rings[r]->run(data[r].data(), data[r].size(), static_cast<uint64_t>(op), Clock::now() + kDeadline);
        }
        ms[r] = 1e3 * watch.seconds() / operations;
      } catch (const Error& e) {
        errors[r] = e.what();
        for (auto& ring : rings) ring->abort(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) throw Error("bench tls: allreduce: " + e);
  }
  return *std::max_element(ms.begin(), ms.end());
}

}  // namespace

void run_tls_bench(const TlsBenchOptions& o) {
  const std::shared_ptr<const runtime::tls::Credentials> tls = runtime::tls::process_credentials();
  if (!tls) throw UsageError("bench tls compares TLS with plaintext: run it without --insecure");
  std::printf("transport: %lld MiB per round over one connection; allreduce: %d x %lld floats among %d members; "
              "%d rounds per mode, alternating (TLS 1.3, TLS_AES_128_GCM_SHA256)\n",
              static_cast<long long>(o.transfer_mb), o.operations, static_cast<long long>(o.floats), o.members,
              o.rounds);
  std::printf("%-6s %-6s %12s %12s %12s %12s %14s %12s\n", "round", "mode", "GB/s", "CPU s/GB", "user s/GB",
              "system s/GB", "ms/allreduce", "TLS/plain");
  std::vector<double> plain_rate, tls_rate, plain_cpu, tls_cpu, plain_user, tls_user, plain_system, tls_system,
      plain_ms, tls_ms, ratio;
  const int64_t bytes = o.transfer_mb << 20;
  for (int round = 1; round <= o.rounds; ++round) {
    for (bool secure : {false, true}) {
      runtime::tls::set_process_credentials(secure ? tls : nullptr);
      const Transfer t = transfer(bytes);
      const double rate = static_cast<double>(bytes) / t.seconds / 1e9;
      const double gb = static_cast<double>(bytes) / 1e9;
      const double user = t.user_seconds / gb, system = t.system_seconds / gb, cpu = user + system;
      const double ms = allreduce_ms(o.floats, o.members, o.operations);
      (secure ? tls_rate : plain_rate).push_back(rate);
      (secure ? tls_cpu : plain_cpu).push_back(cpu);
      (secure ? tls_user : plain_user).push_back(user);
      (secure ? tls_system : plain_system).push_back(system);
      (secure ? tls_ms : plain_ms).push_back(ms);
      if (secure) ratio.push_back(rate / plain_rate.back());
      std::printf("%-6d %-6s %12.2f %12.3f %12.3f %12.3f %14.1f", round, secure ? "TLS" : "plain", rate, cpu, user,
                  system, ms);
      if (secure) std::printf(" %12.2f", ratio.back());
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  runtime::tls::set_process_credentials(tls);
  // The ratio column is each round's TLS rate over the plaintext rate of the same round; its
  // median is the figure to read on a shared machine.
  std::printf("\nmedians         %12s %12s %12s %12s %14s\n", "GB/s", "CPU s/GB", "user s/GB", "system s/GB",
              "ms/allreduce");
  std::printf("plaintext       %12.2f %12.3f %12.3f %12.3f %14.1f\n", median(plain_rate), median(plain_cpu),
              median(plain_user), median(plain_system), median(plain_ms));
  std::printf("TLS             %12.2f %12.3f %12.3f %12.3f %14.1f\n", median(tls_rate), median(tls_cpu),
              median(tls_user), median(tls_system), median(tls_ms));
  std::printf("TLS / plaintext %12.2f %12.2f %12s %12.2f %14.2f   (transport: median of the rounds' ratios)\n",
              median(ratio), median(tls_cpu) / median(plain_cpu), "", median(tls_system) / median(plain_system),
              median(tls_ms) / median(plain_ms));
}

}  // namespace partita::bench
