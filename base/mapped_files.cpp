#include "base/mapped_files.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace partita {

namespace {

constexpr size_t kMaxPath = 512;

// One registered mapping. `end` is written last and cleared first: the handler trusts an
// entry only while end != 0, so it never reads a half-written path.
struct Entry {
  std::atomic<uintptr_t> start{0};
  std::atomic<uintptr_t> end{0};
  char path[kMaxPath] = {};
};

Entry g_entries[kMaxMappedFiles];
std::mutex g_slots_mutex;  // registration and removal only; the handler takes no lock
std::once_flag g_install_once;
struct sigaction g_previous {};  // the SIGBUS action before ours

void write_stderr(const char* text) {
  size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<size_t>(n);
  }
}

void on_sigbus(int signal, siginfo_t* info, void* context) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const Entry& e : g_entries) {
    const uintptr_t end = e.end.load(std::memory_order_acquire);
    if (end != 0 && address >= e.start.load(std::memory_order_relaxed) && address < end) {
      write_stderr("partita: error: ");
      write_stderr(e.path);
      write_stderr(": the file was truncated while mapped (rewritten under a running job?)\n");
      ::_exit(1);
    }
  }
  // Not a mapping of ours: hand the signal to whoever handled it before us, or die of it
  // as the process would have without us (raised again: a SIGBUS sent with kill() would not
  // fault a second time by itself).
  ::sigaction(signal, &g_previous, nullptr);
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(signal, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(signal);
    return;
  } else if (g_previous.sa_handler == SIG_IGN) {
    return;
  }
  ::raise(signal);
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

}  // namespace

MappedFileRegistration::MappedFileRegistration(const void* start, size_t bytes, const std::string& path) {
  std::call_once(g_install_once, install_handler);
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (int i = 0; i < kMaxMappedFiles; ++i) {
    Entry& e = g_entries[i];
    if (e.end.load(std::memory_order_relaxed) != 0) continue;
    const size_t n = std::min(path.size(), kMaxPath - 1);
    std::memcpy(e.path, path.data(), n);
    e.path[n] = '\0';
    e.start.store(reinterpret_cast<uintptr_t>(start), std::memory_order_relaxed);
    e.end.store(reinterpret_cast<uintptr_t>(start) + bytes, std::memory_order_release);
    slot_ = i;
    return;
  }
}

MappedFileRegistration& MappedFileRegistration::operator=(MappedFileRegistration&& other) noexcept {
  if (this != &other) {
    reset();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

void MappedFileRegistration::reset() {
  if (slot_ < 0) return;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  g_entries[slot_].end.store(0, std::memory_order_release);
  slot_ = -1;
}

}  // namespace partita
