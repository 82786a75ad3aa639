#include "base/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"

namespace partita {

namespace {

// Seconds since the epoch at which the machine booted (/proc/stat btime); 0 if unknown.
double boot_time_seconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  while (in >> key) {
    if (key == "btime") {
      double t = 0;
      in >> t;
      return t;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

ProcessStats read_process_stats() {
  ProcessStats s;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  {
    std::ifstream in("/proc/self/stat");
    std::string line;
    if (!std::getline(in, line)) throw Error("cannot read /proc/self/stat");
    // "pid (comm) state ...": comm may hold spaces and parentheses; fields follow the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) throw Error("cannot parse /proc/self/stat");
    std::istringstream fields(line.substr(close + 2));
    std::string f;
    // Field 3 is the state; utime 14, stime 15, num_threads 20, starttime 22, vsize 23.
    double utime = 0, stime = 0, start = 0;
    int64_t threads = 0, vsize = 0;
    for (int n = 3; n <= 23 && fields >> f; ++n) {
      if (n == 14) utime = std::stod(f);
      if (n == 15) stime = std::stod(f);
      if (n == 20) threads = std::stoll(f);
      if (n == 22) start = std::stod(f);
      if (n == 23) vsize = std::stoll(f);
    }
    if (!fields && threads == 0) throw Error("cannot parse /proc/self/stat");
    s.cpu_seconds = (utime + stime) / ticks;
    s.threads = threads;
    s.virtual_bytes = vsize;
    s.start_time_seconds = boot_time_seconds() + start / ticks;
  }
  {
    std::ifstream in("/proc/self/statm");
    int64_t size = 0, resident = 0;
    if (in >> size >> resident) s.resident_bytes = resident * page;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++s.open_fds;
  }
  if (s.open_fds > 0) --s.open_fds;  // the iterator's own descriptor of /proc/self/fd
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    s.max_fds = files.rlim_cur == RLIM_INFINITY ? -1 : static_cast<int64_t>(files.rlim_cur);
  }
  {
    // "Inter-|   Receive ... | Transmit", a second header line, then "  IFACE: rx_bytes
    // rx_packets ... (8 receive fields) tx_bytes ...".
    std::ifstream in("/proc/self/net/dev");
    std::string line;
    for (int header = 0; header < 2 && std::getline(in, line); ++header) {
    }
    while (std::getline(in, line)) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream fields(line.substr(colon + 1));
      int64_t v[9] = {};
      for (int i = 0; i < 9 && fields >> v[i]; ++i) {
      }
      s.network_received_bytes += v[0];
      s.network_sent_bytes += v[8];
    }
  }
  return s;
}

}  // namespace partita
