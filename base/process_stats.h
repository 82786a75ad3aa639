// This process's resources as the kernel counts them (/proc/self): what a node reports in
// its heartbeats and what a status page exposes as Prometheus's process metrics.
//
// Read on demand, never cached: each call opens a few /proc files (stat, statm, fd,
// limits, net/dev), a few microseconds, so a heartbeat or a scrape costs nothing worth
// saving. The network figures are those of the network namespace the process runs in (the
// kernel counts bytes per interface, not per process): on a machine a node has to itself,
// its traffic; on a shared one, everybody's.
#pragma once

#include <cstdint>

namespace partita {

struct ProcessStats {
  double cpu_seconds = 0;          // user + system time of every thread so far
  int64_t resident_bytes = 0;      // resident set (RSS)
  int64_t virtual_bytes = 0;       // virtual memory size
  int64_t threads = 0;
  int64_t open_fds = 0;
  int64_t max_fds = 0;             // the soft limit on open files
  double start_time_seconds = 0;   // since the Unix epoch
  // Over the interfaces of the process's network namespace, loopback included.
  int64_t network_received_bytes = 0;
  int64_t network_sent_bytes = 0;
};

// Throws Error naming the file when /proc/self/stat cannot be read or parsed (a system
// without procfs); the other figures are 0 when their file is missing.
ProcessStats read_process_stats();

}  // namespace partita
