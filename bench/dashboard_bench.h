// `partita bench dashboard`: does the status page slow a training step? The same job's
// steps timed without the page and with it served and polled hard, in one run.
#pragma once

#include <cstdint>
#include <string>

namespace partita::bench {

struct DashboardBenchOptions {
  int64_t num_nodes = 400000;  // SBM, as the main job's graph (examples/sbm.yaml)
  int64_t feature_dim = 64;
  int64_t num_classes = 8;
  int64_t hidden = 128;
  int64_t batch_size = 1024;
  int rounds = 9;            // of each configuration, interleaved
  int pollers = 2;           // client threads polling the page's endpoints
  int poll_ms = 100;         // between one poller's rounds of requests (the page polls every 1000)
  std::string work_dir;      // keeps the partitions between runs; default: a temporary folder
  uint64_t seed = 1;
};

// A GraphSAGE job as examples/sbm.yaml (2 partitions x 1 trainer, fanouts [10, 10]) on an
// SBM graph of num_nodes, in this process; each round runs one epoch (no evaluation) of
// (a) the job alone, the baseline, and (b) the job publishing every step and epoch to a
// StatusBoard served by a StatusServer on loopback, while `pollers` threads each fetch
// /api/jobs, /api/jobs/ID/metrics and /metrics every poll_ms, and reload the page and its
// scripts every 10th time (what a browser with the page open does, 10x as often per
// poller). After a warm-up round of both, rounds alternate the order (ba, ab, ...). A
// round's figure is the median time between two steps' reports to the driver (robust to a
// step slowed by another process on a shared machine). Prints a table (bench/harness.h) of
// each round's seconds per step, the medians and the median of the rounds' (b)/(a) ratios,
// then the requests served and the median time of one publish() call on the driver's
// thread.
void run_dashboard_bench(const DashboardBenchOptions& options);

}  // namespace partita::bench
