// A host application that embeds Partita: it trains a GraphSAGE model on a small generated
// graph, follows the job through the progress callback, and reads the final metrics; or it
// trains its own libtorch module instead (--own-model), registered under "embed_mean".
//
//   partita_embed [--own-model] [--output DIR]       every actor in this process
//   partita_embed --daemons H1:P1,H2:P2 [--own-model] [--output DIR] [--tls-dir DIR]
//                                                    on running daemons
//   partita_embed --serve HOST:PORT [--tls-dir DIR]  a daemon of this application: it knows
//                                                    embed_mean, which `partita daemon` does not
//
// Daemons speak TLS (runtime/tls/credentials.h): --tls-dir names the credentials folder of a
// node of their cluster (`partita cluster cert NAME --role node`), which this process then
// proves itself with, as a client and as a daemon. Without it the process speaks plaintext,
// which only daemons started with `partita --insecure` accept, on loopback.
//
// The job is a YAML string, as a host would build it. With daemons, partition i and its
// trainer run on daemon i mod D and read the partition folder this process writes, so the
// daemons must see OUTPUT at the same path (the same machine, or a shared file system).
// --own-model on daemons needs daemons that registered the model: `partita_embed --serve`.
// Ctrl-C cancels the job through its CancelToken: it stops at the next step.
// Exit codes: 0 done, 1 the job failed, 2 bad arguments, 130 cancelled.
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

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
#include "models/model_registry.h"
#include "runtime/daemon.h"
#include "runtime/runtime.h"
#include "runtime/tls/credentials.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"

namespace {

// 10000 nodes in 4 classes, 2 partitions, 5 epochs: seconds on one core. The model is
// GraphSAGE, or with --own-model the application's module (no dropout: deterministic).
std::string job_yaml(bool own_model) {
  return std::string(R"(
data:
  generate: {kind: sbm, nodes: 10000, classes: 4, features: 16, avg_degree: 10, seed: 1}
  num_partitions: 2
)") + (own_model ? "model: {kind: registered, name: embed_mean, hidden: 32, layers: 2, dropout: 0.0}\n"
                 : "model: {kind: graphsage, hidden: 32, layers: 2, dropout: 0.3}\n") +
         R"(sampling: {fanouts: [5, 5], batch_size: 64}
train: {epochs: 5, learning_rate: 0.01, seed: 1}
)";
}

// The application's own model: two layers of lin_self(x) + lin_neighbours(mean of the
// in-neighbours), ReLU between, over PyG's edge_index (row 0 sources, row 1 destinations).
struct TwoLayerMean : torch::nn::Module {
  TwoLayerMean(int64_t in, int64_t hidden, int64_t out)
      : self1(register_module("self1", torch::nn::Linear(in, hidden))),
        neighbours1(register_module("neighbours1", torch::nn::Linear(in, hidden))),
        self2(register_module("self2", torch::nn::Linear(hidden, out))),
        neighbours2(register_module("neighbours2", torch::nn::Linear(hidden, out))) {}

  static at::Tensor mean(const at::Tensor& x, const at::Tensor& edge_index) {
    const at::Tensor src = edge_index[0], dst = edge_index[1];
    const at::Tensor sum = at::zeros_like(x).index_add_(0, dst, x.index_select(0, src));
    const at::Tensor degree = at::zeros({x.size(0)}, x.options()).index_add_(0, dst, at::ones({dst.size(0)}, x.options()));
    return sum / degree.clamp_min(1).unsqueeze(1);
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& edge_index) {
    const at::Tensor h = at::relu(self1(x) + neighbours1(mean(x, edge_index)));
    return self2(h) + neighbours2(mean(h, edge_index));
  }

  torch::nn::Linear self1, neighbours1, self2, neighbours2;
};

struct Arguments {
  std::vector<std::string> daemons;  // empty: in-process
  std::string output = "embed-run";
  bool own_model = false;
  std::string serve;  // HOST:PORT: run as a daemon instead
  std::string tls_dir;  // empty: plaintext (daemons started with --insecure)
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
    if (flag == "--own-model") {
      a.own_model = true;
    } else if ((flag == "--daemons" || flag == "--output" || flag == "--serve" || flag == "--tls-dir") &&
               i + 1 < argc) {
      const std::string value = argv[++i];
      if (flag == "--daemons") {
        a.daemons = split(value, ',');
        if (a.daemons.empty()) throw partita::UsageError("--daemons: expected HOST:PORT[,HOST:PORT...]");
      } else if (flag == "--serve") {
        a.serve = value;
      } else if (flag == "--tls-dir") {
        a.tls_dir = value;
      } else {
        a.output = value;
      }
    } else {
      throw partita::UsageError("unknown or incomplete argument '" + flag +
                                "' (usage: partita_embed [--daemons H:P,...] [--own-model] [--output DIR] "
                                "[--tls-dir DIR] | --serve HOST:PORT [--tls-dir DIR])");
    }
  }
  if (!a.tls_dir.empty() && a.daemons.empty() && a.serve.empty()) {
    throw partita::UsageError("--tls-dir is for --daemons or --serve: in process nothing is connected");
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

// A daemon of this application (runtime/daemon.h): the job actor types, with the model
// registered, until SIGTERM or SIGINT.
int serve(const std::string& listen) {
  using namespace partita;
  runtime::DaemonOptions options;
  options.listen = listen;
  add_protocol_types(options.system);
  runtime::run_daemon(options, job_actor_types(), [](const runtime::Endpoint& bound, const std::string&) {
    std::printf("partita_embed serving on %s\n", bound.to_string().c_str());
    std::fflush(stdout);
  });
  return 0;
}

int run(const Arguments& a) {
  using namespace partita;
  if (!a.tls_dir.empty()) {
    // Before any actor system is made: every listener and connection after this uses them.
    runtime::tls::set_process_credentials(runtime::tls::Credentials::load(a.tls_dir));
    // Both modes run actors of the cluster (on the daemons, or as one): a node's certificate.
    runtime::tls::require_node_role(a.serve.empty() ? "partita_embed --daemons: it runs its job's actors on the daemons"
                                                    : "partita_embed --serve: it serves the cluster's actors");
  }
  if (!a.serve.empty()) return serve(a.serve);
  // Relative paths in the job (output) resolve against the working directory.
  JobConfig job = parse_job(job_yaml(a.own_model), std::filesystem::current_path().string(), "the embedded job");
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
    // Before any job or daemon: the trainers of this process (and of its daemons) build it.
    partita::register_model("embed_mean", [](const partita::ModelConfig& c) {
      return std::make_shared<TwoLayerMean>(c.in_dim, c.hidden_dim, c.out_dim);
    });
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
