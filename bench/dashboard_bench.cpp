#include "bench/dashboard_bench.h"

#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "actors/protocol.h"
#include "base/stopwatch.h"
#include "bench/harness.h"
#include "bench/stats.h"
#include "bench/workdir.h"
#include "dashboard/status_board.h"
#include "dashboard/status_server.h"
#include "runtime/runtime.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"

namespace partita::bench {

namespace fs = std::filesystem;

namespace {

JobConfig bench_job(const DashboardBenchOptions& o, const std::string& dir) {
  JobConfig job;
  job.generate = true;
  job.generate_spec.kind = "sbm";
  job.generate_spec.nodes = o.num_nodes;
  job.generate_spec.features = o.feature_dim;
  job.generate_spec.classes = o.num_classes;
  job.generate_spec.seed = o.seed;
  job.num_partitions = 2;
  job.model.kind = ModelKind::kGraphSage;
  job.model.hidden = o.hidden;
  job.model.layers = 2;
  job.model.dropout = 0.3;
  job.fanouts = {10, 10};
  job.batch_size = o.batch_size;
  job.epochs = 1;
  job.threads = 1;
  job.seed = o.seed;
  job.output = (fs::path(dir) / "run").string();
  return job;
}

// Clients doing what an open page does, many times as often, until stopped.
class Pollers {
 public:
  Pollers(int count, int port, const std::string& job, int poll_ms) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, port, job, poll_ms] {
        httplib::Client client("127.0.0.1", port);
        client.set_connection_timeout(std::chrono::seconds(5));
        const std::vector<std::string> api = {"/api/jobs", "/api/jobs/" + job + "/metrics", "/metrics"};
        const std::vector<std::string> page = {"/jobs/" + job, "/static/dashboard.js", "/static/d3.min.js"};
        for (int n = 0; !stop_.load(); ++n) {
          for (const std::string& path : api) count_result(client.Get(path.c_str()));
          if (n % 10 == 0) {
            for (const std::string& path : page) count_result(client.Get(path.c_str()));
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
        }
      });
    }
  }
  ~Pollers() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int64_t served() const { return served_.load(); }
  int64_t failed() const { return failed_.load(); }

 private:
  void count_result(const httplib::Result& r) {
    if (r && r->status == 200) ++served_;
    else ++failed_;
  }
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> served_{0}, failed_{0};
};

struct Round {
  double seconds_per_step = 0;
  int64_t requests = 0, failed = 0;
  std::vector<double> publish_seconds;
};

Round measure(runtime::Runtime& rt, const JobConfig& job, const DashboardBenchOptions& o, bool with_page) {
  RunOptions options;
  options.overwrite = true;
  options.evaluate = false;
  Round round;
  std::shared_ptr<dashboard::StatusBoard> board;
  std::unique_ptr<dashboard::StatusServer> server;
  std::unique_ptr<Pollers> pollers;
  if (with_page) {
    board = std::make_shared<dashboard::StatusBoard>();
    board->add_job("bench", "partita bench dashboard", job.epochs);
    board->set_nodes({{"in-process", "up", "partitions 0, 1"}});
    server = std::make_unique<dashboard::StatusServer>(board, runtime::Endpoint{"127.0.0.1", 0});
    pollers = std::make_unique<Pollers>(o.pollers, server->port(), "bench", o.poll_ms);
  }
  // Both configurations time every step from the driver's reports (the time between two
  // steps' reports); only (b) publishes them.
  std::vector<double> step_seconds;
  Stopwatch since_last;
  options.on_progress = [&](const JobProgress& progress) {
    if (progress.event == JobProgress::Event::step) {
      if (progress.step > 1) step_seconds.push_back(since_last.seconds());
      since_last.restart();
    }
    if (board) {
      Stopwatch watch;
      board->publish("bench", progress);
      round.publish_seconds.push_back(watch.seconds());
    }
  };
  run_job(rt, job, options);
  round.seconds_per_step = median(step_seconds);
  if (pollers) {
    round.requests = pollers->served();
    round.failed = pollers->failed();
  }
  return round;
}

}  // namespace

void run_dashboard_bench(const DashboardBenchOptions& o) {
  Workdir workdir(o.work_dir, "dashboard-bench");
  const JobConfig job = bench_job(o, workdir.path());
  prepare_data(job, 0);
  runtime::ActorSystemOptions system;
  system.threads = 2;
  add_protocol_types(system);
  auto rt = runtime::Runtime::in_process(system, job_actor_types());

  std::printf("\nSBM %lld nodes, %lld features; GraphSAGE hidden %lld, fanouts 10 10, batch %lld, 2 partitions x 1 "
              "trainer in one process; %d poller(s) every %d ms\n",
              static_cast<long long>(o.num_nodes), static_cast<long long>(o.feature_dim),
              static_cast<long long>(o.hidden), static_cast<long long>(o.batch_size), o.pollers, o.poll_ms);
  std::vector<double> publish;
  int64_t requests = 0, failed = 0;
  RoundsOptions rounds;
  rounds.title = "seconds per step (the median time between two steps' reports to the driver)";
  rounds.warmup = 1;  // first-touch of the partitions, the allocator
  rounds.rounds = o.rounds;
  rounds.alternate = true;  // a b, b a, ...: neither always runs after the other
  const Results results = run_cases(
      rounds, {{"(a) without the page", Role::kBaseline,
                [&] { return measure(*rt, job, o, false).seconds_per_step; }},
               {"(b) page served and polled", Role::kKernel, [&] {
                  const Round with = measure(*rt, job, o, true);
                  if (recording()) {
                    publish.insert(publish.end(), with.publish_seconds.begin(), with.publish_seconds.end());
                    requests += with.requests;
                    failed += with.failed;
                  }
                  return with.seconds_per_step;
                }}});
  std::printf("%-52s %10.3f\n", "median of the rounds' (b)/(a)", results.ratio("(b) page served and polled"));
  std::printf("%-52s %10lld (%lld failed)\n%-52s %10.1f\n", "requests served during (b)",
              static_cast<long long>(requests), static_cast<long long>(failed),
              "median publish() on the driver's thread, microseconds", median(publish) * 1e6);
}

}  // namespace partita::bench
