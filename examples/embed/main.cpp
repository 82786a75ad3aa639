// A host application that embeds Partita: it trains a GraphSAGE model on a small generated
// graph, follows the job through the progress callback, and reads the final metrics.
//
//   partita_embed [--output DIR]                     every actor in this process
//   partita_embed --daemons H1:P1,H2:P2 [--output DIR]  on running `partita daemon`s
//
// The job is a YAML string, as a host would build it. With daemons, partition i and its
// trainer run on daemon i mod D and read the partition folder this process writes, so the
// daemons must see OUTPUT at the same path (the same machine, or a shared file system).
// Ctrl-C cancels the job through its CancelToken: it stops at the next step.
// Exit codes: 0 done, 1 the job failed, 2 bad arguments, 130 cancelled.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "base/error.h"
#include "runtime/runtime.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"

namespace {

// 10000 nodes in 4 classes, 2 partitions, 5 epochs: seconds on one core.
constexpr const char* kJob = R"(
data:
  generate: {kind: sbm, nodes: 10000, classes: 4, features: 16, avg_degree: 10, seed: 1}
  num_partitions: 2
model: {kind: graphsage, hidden: 32, layers: 2, dropout: 0.3}
sampling: {fanouts: [5, 5], batch_size: 64}
train: {epochs: 5, learning_rate: 0.01, seed: 1}
)";

struct Arguments {
  std::vector<std::string> daemons;  // empty: in-process
  std::string output = "embed-run";
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, separator);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

Arguments parse_arguments(int argc, char** argv) {
  Arguments a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if ((flag == "--daemons" || flag == "--output") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (flag == "--daemons") {
        a.daemons = split(value, ',');
        if (a.daemons.empty()) throw partita::UsageError("--daemons: expected HOST:PORT[,HOST:PORT...]");
      } else {
        a.output = value;
      }
    } else {
      throw partita::UsageError("unknown or incomplete argument '" + flag +
                                "' (usage: partita_embed [--daemons H:P,...] [--output DIR])");
    }
  }
  return a;
}

// Set before the handler is installed; cancel() is one lock-free atomic store.
partita::CancelToken* g_cancel = nullptr;
extern "C" void on_interrupt(int) {
  if (g_cancel) g_cancel->cancel();
}

void print_progress(const partita::JobProgress& p) {
  if (p.event == partita::JobProgress::Event::step) {
    std::printf("progress: epoch %d/%d step %lld/%lld loss %.4f (%.1f steps/s)\n", p.epoch, p.epochs,
                static_cast<long long>(p.step), static_cast<long long>(p.steps), p.loss, p.steps_per_second);
  } else {
    const partita::EpochMetrics& m = *p.metrics;
    std::printf("epoch %d/%d done: train loss %.4f, val accuracy %.4f, test accuracy %.4f (%.1f s)\n", p.epoch,
                p.epochs, m.train_loss, m.val_accuracy, m.test_accuracy, m.seconds);
  }
  std::fflush(stdout);
}

int run(const Arguments& a) {
  using namespace partita;
  // Relative paths in the job (output) resolve against the working directory.
  JobConfig job = parse_job(kJob, std::filesystem::current_path().string(), "the embedded job");
  job.output = std::filesystem::absolute(a.output).lexically_normal().string();

  runtime::ActorSystemOptions system;
  add_protocol_types(system);  // the message types of actors/protocol.h
  std::unique_ptr<runtime::Runtime> rt =
      a.daemons.empty() ? runtime::Runtime::in_process(system, job_actor_types())
                        : runtime::Runtime::connect(system, a.daemons, std::chrono::seconds(10));
  std::printf("runtime: %d node(s)%s\n", rt->num_nodes(), rt->is_distributed() ? " (daemons)" : " (in-process)");

  prepare_data(job, /*threads=*/0);  // generates and partitions into OUTPUT/partitions
  RunOptions options;
  options.overwrite = true;  // a fresh run every time
  options.on_progress = print_progress;
  // Static: the signal handler may fire until the program exits, after run() has returned.
  static const std::shared_ptr<CancelToken> token = std::make_shared<CancelToken>();
  options.cancel = token;
  g_cancel = token.get();
  std::signal(SIGINT, on_interrupt);

  const JobReport report = run_job(*rt, job, options);
  const EpochMetrics& last = report.epochs.back();
  std::printf("final: epochs %zu, train loss %.4f, train accuracy %.4f, val accuracy %.4f, test accuracy %.4f\n",
              report.epochs.size(), last.train_loss, last.train_accuracy, last.val_accuracy, last.test_accuracy);
  std::printf("results in %s\n", job.output.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_arguments(argc, argv));
  } catch (const partita::JobCancelled& e) {
    std::fprintf(stderr, "partita_embed: %s\n", e.what());
    return 130;
  } catch (const partita::UsageError& e) {
    std::fprintf(stderr, "partita_embed: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "partita_embed: error: %s\n", e.what());
    return 1;
  }
}
