#include "bench/tls_bench.h"

#include <cstdio>
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

// Seconds to stream `bytes` from one thread to another over one transport connection.
double transfer_seconds(int64_t bytes) {
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
  Stopwatch watch;
  for (int64_t left = bytes; left > 0; left -= static_cast<int64_t>(kChunk)) {
    c.recv_all(in.data(), static_cast<size_t>(std::min<int64_t>(left, kChunk)), until, nullptr, "receiving");
  }
  const double seconds = watch.seconds();
  const char done = 1;
  c.send_all(&done, 1, until, nullptr, "acknowledging");
  sender.join();
  if (!error.empty()) throw Error("bench tls: " + error);
  return seconds;
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
  std::printf("%-6s %-6s %12s %14s\n", "round", "mode", "GB/s", "ms/allreduce");
  std::vector<double> plain_rate, tls_rate, plain_ms, tls_ms;
  const int64_t bytes = o.transfer_mb << 20;
  for (int round = 1; round <= o.rounds; ++round) {
    for (bool secure : {false, true}) {
      runtime::tls::set_process_credentials(secure ? tls : nullptr);
      const double rate = static_cast<double>(bytes) / transfer_seconds(bytes) / 1e9;
      const double ms = allreduce_ms(o.floats, o.members, o.operations);
      (secure ? tls_rate : plain_rate).push_back(rate);
      (secure ? tls_ms : plain_ms).push_back(ms);
      std::printf("%-6d %-6s %12.2f %14.1f\n", round, secure ? "TLS" : "plain", rate, ms);
      std::fflush(stdout);
    }
  }
  runtime::tls::set_process_credentials(tls);
  std::printf("\nmedians         %12s %14s\n", "GB/s", "ms/allreduce");
  std::printf("plaintext       %12.2f %14.1f\n", median(plain_rate), median(plain_ms));
  std::printf("TLS             %12.2f %14.1f\n", median(tls_rate), median(tls_ms));
  std::printf("TLS / plaintext %12.2f %14.2f\n", median(tls_rate) / median(plain_rate), median(tls_ms) / median(plain_ms));
}

}  // namespace partita::bench
