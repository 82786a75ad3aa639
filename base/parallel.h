// Splitting a loop over threads. Threads are joined before returning, always.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace partita {

// 0 means "all cores".
inline int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Calls body(begin, end) on `threads` contiguous slices of [0, n). The first exception
// thrown by any slice is rethrown after every thread has finished.
template <typename Body>
void parallel_for(int64_t n, int threads, Body body) {
  threads = static_cast<int>(std::min<int64_t>(resolve_threads(threads), std::max<int64_t>(n, 1)));
  if (threads <= 1) {
    body(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> workers;
  std::vector<std::exception_ptr> errors(threads);
  auto run = [&](int t) {
    try {
      body(n * t / threads, n * (t + 1) / threads);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  try {
    for (int t = 1; t < threads; ++t) workers.emplace_back(run, t);
  } catch (...) {
    // The system refused a thread: join those started before rethrowing, since a joinable
    // std::thread's destructor would terminate the process.
    for (auto& w : workers) w.join();
    throw;
  }
  run(0);  // the calling thread takes the first slice
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace partita
