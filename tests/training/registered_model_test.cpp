// A host application's own model (models/model_registry.h): a two-layer mean-aggregation
// module written here with libtorch, registered under a name, trains node classification on
// Cora to GraphSAGE's accuracy and a link-prediction encoder on a generated graph; with no
// dropout it gives the same link losses on 1 and 2 partitions, and resumes from a checkpoint
// to the uninterrupted run's weights. A name nobody registered is refused naming the
// registered ones, in this process and by `partita` daemons (which register none), while a
// daemon this process runs itself, with the registration, trains it. Export refuses its runs.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "base/error.h"
#include "expect_error.h"
#include "job_runs.h"
#include "models/gnn_model.h"
#include "models/model_registry.h"
#include "partitioned_graph.h"
#include "partitioner/partition.h"
#include "runtime/client.h"
#include "runtime/daemon.h"
#include "test_util.h"
#include "training/job_config.h"
#include "training/job_driver.h"
#include "training/job_actor_types.h"
#include "training/run_export.h"

namespace partita {
namespace {

namespace fs = std::filesystem;
using testing::run_in_process;

// The mean of each node's in-neighbours' rows (0 for a node without any), over PyG's
// edge_index: row 0 sources, row 1 destinations.
at::Tensor neighbour_mean(const at::Tensor& x, const at::Tensor& edge_index) {
  const at::Tensor src = edge_index[0], dst = edge_index[1];
  const at::Tensor sum = at::zeros_like(x).index_add_(0, dst, x.index_select(0, src));
  const at::Tensor degree = at::zeros({x.size(0)}, x.options()).index_add_(0, dst, at::ones({dst.size(0)}, x.options()));
  return sum / degree.clamp_min(1).unsqueeze(1);
}

// Two layers of lin_self(x) + lin_neighbours(mean of the in-neighbours), ReLU and dropout
// between: what a libtorch user writes, with torch::nn's own layers and initialisation.
struct TwoLayerMean : torch::nn::Module {
  TwoLayerMean(int64_t in, int64_t hidden, int64_t out, double dropout)
      : self1(register_module("self1", torch::nn::Linear(in, hidden))),
        neighbours1(register_module("neighbours1", torch::nn::Linear(torch::nn::LinearOptions(in, hidden).bias(false)))),
        self2(register_module("self2", torch::nn::Linear(hidden, out))),
        neighbours2(register_module("neighbours2", torch::nn::Linear(torch::nn::LinearOptions(hidden, out).bias(false)))),
        dropout(dropout) {}

  at::Tensor forward(const at::Tensor& x, const at::Tensor& edge_index) {
    at::Tensor h = at::relu(self1(x) + neighbours1(neighbour_mean(x, edge_index)));
    h = at::dropout(h, dropout, is_training());
    return self2(h) + neighbours2(neighbour_mean(h, edge_index));
  }

  torch::nn::Linear self1, neighbours1, self2, neighbours2;
  double dropout;
};

constexpr const char* kModel = "two_layer_mean";

// Registered once for the whole binary (the registry is the process's).
void register_two_layer_mean() {
  static const bool registered = [] {
    register_model(kModel, [](const ModelConfig& c) {
      return std::make_shared<TwoLayerMean>(c.in_dim, c.hidden_dim, c.out_dim, c.dropout);
    });
    return true;
  }();
  (void)registered;
}

class RegisteredModelTest : public ::testing::Test {
 protected:
  void SetUp() override { register_two_layer_mean(); }
  testing::TempDir tmp_;
};

// A small partitioned SBM graph and a node-classification job over it with the registered
// model (or `name`).
class RegisteredNodeJobTest : public RegisteredModelTest {
 protected:
  void SetUp() override {
    RegisteredModelTest::SetUp();
    PartitionOptions options;
    options.num_parts = 2;
    partition_dataset(testing::sbm_graph(3000, 11), options, tmp_ / "parts");
  }
  JobConfig job(const std::string& output, const std::string& name = kModel, const std::string& train = "{epochs: 2, seed: 3}") {
    return parse_job("data: {partitions: parts}\n"
                     "model: {kind: registered, name: " + name + ", hidden: 32, layers: 2, dropout: 0.0}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 64}\n"
                     "train: " + train + "\n"
                     "output: " + output + "\n",
                     tmp_.path(), "registered job");
  }
};

TEST_F(RegisteredModelTest, TrainsCoraToTheAccuracyOfGraphSage) {
  const JobConfig job = parse_job("data: {dataset: " + testing::dataset_path("cora") +
                                      ", format: linqs, num_partitions: 2, split_seed: 0}\n"
                                      "model: {kind: registered, name: two_layer_mean, hidden: 64, layers: 2, dropout: 0.5}\n"
                                      "sampling: {fanouts: [25, 10], batch_size: 32}\n"
                                      "train: {epochs: 10, learning_rate: 0.01, weight_decay: 0.001, seed: 1}\n"
                                      "output: run\n",
                                  tmp_.path(), "cora job");
  const JobReport report = run_in_process(job);
  const EpochMetrics& last = report.epochs.back();
  std::printf("test accuracy %.4f\n", last.test_accuracy);
  EXPECT_LT(last.train_loss, report.epochs.front().train_loss);
  // Chance is 0.30 (the largest class); GraphSAGE's published accuracy 0.78-0.81.
  EXPECT_GE(last.test_accuracy, 0.75);
  EXPECT_TRUE(fs::exists(tmp_ / "run/checkpoints/epoch-10.bin"));
}

TEST_F(RegisteredNodeJobTest, ReplicasAgreeAndResumingFromACheckpointEndsWithTheSameWeights) {
  // Four replicas: the driver fails the job when their weights differ after any step.
  JobConfig whole = job("whole", kModel, "{epochs: 2, seed: 3, trainers_per_partition: 2}");
  const JobReport uninterrupted = run_in_process(whole);
  ASSERT_EQ(uninterrupted.epochs.size(), 2u);
  EXPECT_LT(uninterrupted.epochs.back().train_loss, uninterrupted.epochs.front().train_loss);
  EXPECT_GT(uninterrupted.epochs.back().test_accuracy, 0.5);  // 4 classes in sbm_graph

  JobConfig parts = job("parts-run", kModel, "{epochs: 2, seed: 3, trainers_per_partition: 2}");
  RunOptions first;
  first.stop_after_epoch = 1;
  run_in_process(parts, first);
  RunOptions rest;
  rest.resume = true;
  const JobReport resumed = run_in_process(parts, rest);
  ASSERT_EQ(resumed.first_epoch, 2);
  ASSERT_EQ(resumed.epochs.size(), 1u);
  // The parameters and Adam's state came back: the same steps, the same weights.
  EXPECT_EQ(resumed.epochs[0].step_losses, uninterrupted.epochs[1].step_losses);
  EXPECT_EQ(resumed.parameter_hash, uninterrupted.parameter_hash);

  // Export has no PyG class for it, and the CLI no factory.
  testing::expect_usage_error([&] { export_run(parts.output, ""); }, "registered model 'two_layer_mean'");
  testing::expect_usage_error([&] { predict_run(parts.output, "", ""); }, "no PyG equivalent");
}

TEST_F(RegisteredNodeJobTest, AnUnregisteredNameIsRefusedNamingTheRegisteredOnes) {
  try {
    run_in_process(job("unknown", "no_such_model"));
    ADD_FAILURE() << "a job of an unregistered model ran";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "no model 'no_such_model' is registered");
    EXPECT_CONTAINS(e.what(), std::string("registered: ") + kModel);
  }
  // The job file itself: a registered model needs its name, and only it takes one.
  const auto parse = [&](const std::string& model) {
    return [&, model] { parse_job("data: {partitions: parts}\nmodel: " + model + "\n", tmp_.path(), "job"); };
  };
  testing::expect_usage_error(parse("{kind: registered}"), "model.name: missing");
  testing::expect_usage_error(parse("{kind: graphsage, name: two_layer_mean}"), "model.name: applies to a registered model only");
  testing::expect_usage_error(parse("{kind: two_layer_mean}"), "model.kind: 'two_layer_mean' is not one of:");
}

TEST_F(RegisteredNodeJobTest, DaemonsWithoutTheModelFailTheJobNamingTheNodeAndTheModel) {
  const testing::TwoDaemons two = testing::start_two_daemons();
  try {
    run_job(*two.runtime, job("remote"), {});
    ADD_FAILURE() << "daemons that have no such model trained it";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "daemon node-0");
    EXPECT_CONTAINS(e.what(), "no model 'two_layer_mean' is registered in this process (registered: none)");
  }
}

// A host application that runs its own daemon (runtime/daemon.h) with its registrations: a
// job on it trains the registered model as one in process does.
TEST_F(RegisteredNodeJobTest, ADaemonOfTheHostApplicationTrainsIt) {
  const JobReport local = run_in_process(job("local"));

  std::promise<std::string> address;
  runtime::DaemonOptions options;
  options.name = "host-daemon";
  options.system = testing::job_system_options();
  std::future<void> daemon = std::async(std::launch::async, [&] {
    runtime::run_daemon(options, job_actor_types(),
                        [&](const runtime::Endpoint& bound, const std::string&) { address.set_value(bound.to_string()); });
  });
  std::future<std::string> ready = address.get_future();
  ASSERT_EQ(ready.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "the daemon did not start";
  const std::string at = ready.get();
  {
    auto rt = runtime::Runtime::connect(testing::job_system_options(), {at}, std::chrono::seconds(10));
    // However the block ends, the daemon is told to stop, and gone, before the runtime goes.
    struct StopDaemon {
      runtime::Runtime& rt;
      std::string at;
      ~StopDaemon() {
        try {
          const auto connection = runtime::DaemonConnection::connect(rt.system(), at, std::chrono::seconds(10));
          connection.request_shutdown();
          if (!connection.wait_lost(std::chrono::seconds(30))) ADD_FAILURE() << "the daemon is still up after shutdown";
        } catch (const std::exception& e) {
          ADD_FAILURE() << "cannot stop the daemon: " << e.what();
        }
      }
    } stop{*rt, at};
    const JobReport remote = run_job(*rt, job("remote"), {});
    ASSERT_EQ(remote.epochs.size(), local.epochs.size());
    for (size_t e = 0; e < local.epochs.size(); ++e) {
      EXPECT_EQ(remote.epochs[e].step_losses, local.epochs[e].step_losses) << "epoch " << e + 1;
      EXPECT_EQ(remote.epochs[e].step_hashes, local.epochs[e].step_hashes) << "epoch " << e + 1;
    }
  }
  ASSERT_EQ(daemon.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "the daemon did not stop";
  daemon.get();
}

// A link-prediction job whose encoder is the registered model, on a homophilous SBM graph
// the job generates (as tests/training/link_gnn_test.cpp's).
class RegisteredLinkJobTest : public RegisteredModelTest {
 protected:
  JobConfig job(int parts, const std::string& output, const std::string& train = "{epochs: 2, learning_rate: 0.01, seed: 3}") {
    return parse_job("task: link_prediction\n"
                     "data: {generate: {kind: sbm, nodes: 600, classes: 4, features: 16, avg_degree: 8, seed: 2},\n"
                     "       num_partitions: " + std::to_string(parts) + ", holdout: {val: 0.05, test: 0.1}}\n"
                     "model: {encoder: registered, name: two_layer_mean, dim: 16, hidden: 32, layers: 2, dropout: 0.0}\n"
                     "negatives: {k: 2, chunk_size: 1}\n"
                     "sampling: {fanouts: [5, 5], batch_size: 128}\n"
                     "train: " + train + "\n"
                     "eval: {negatives: 3}\n"
                     "output: " + output + "\n",
                     tmp_.path(), "registered link job");
  }
};

TEST_F(RegisteredLinkJobTest, TheEncoderLearnsHeldOutLinks) {
  const JobReport report = run_in_process(job(2, "run", "{epochs: 5, learning_rate: 0.01, seed: 1}"));
  const EpochMetrics& first = report.epochs.front();
  const EpochMetrics& last = report.epochs.back();
  std::printf("test AUC %.4f after epoch 1, %.4f after epoch 5\n", first.ranking_metric("test.auc"),
              last.ranking_metric("test.auc"));
  EXPECT_LT(last.train_loss, first.train_loss);
  // Chance is 0.5; the classes alone give 0.775 (link_gnn_test.cpp).
  EXPECT_GT(last.ranking_metric("test.auc"), 0.65);
  EXPECT_GT(last.ranking_metric("test.edges"), 0);
}

TEST_F(RegisteredLinkJobTest, OneAndTwoPartitionsGiveTheSameLosses) {
  const JobReport one = run_in_process(job(1, "one"));
  const JobReport two = run_in_process(job(2, "two"));
  ASSERT_EQ(one.epochs.size(), two.epochs.size());
  for (size_t e = 0; e < one.epochs.size(); ++e) {
    ASSERT_EQ(one.epochs[e].step_losses.size(), two.epochs[e].step_losses.size());
    for (size_t s = 0; s < one.epochs[e].step_losses.size(); ++s) {
      // The same positives meet the same negatives in the same sampled trees; only the
      // order of float sums differs.
      EXPECT_NEAR(one.epochs[e].step_losses[s], two.epochs[e].step_losses[s], 1e-4 * one.epochs[e].step_losses[s])
          << "epoch " << e + 1 << " step " << s;
    }
    EXPECT_NEAR(one.epochs[e].ranking_metric("test.auc"), two.epochs[e].ranking_metric("test.auc"), 1e-3);
  }
}

// The registry's own contract, on a hand-made batch: the seeds' rows, the same weights from
// the same seed, torch's generator left as it was, bad names and outputs named.
at::Tensor forward_on_a_small_batch(GnnModel& model, int64_t in_dim) {
  GraphBatch batch;
  batch.num_nodes = 3;
  batch.batch_size = 2;
  batch.x = at::arange(3 * in_dim, at::kFloat).view({3, in_dim});
  batch.edges = make_csc(3, {1, 2, 2}, {0, 0, 1});
  return model.forward(batch, false);
}

ModelConfig registered_config(const std::string& name, int64_t out_dim = 3) {
  ModelConfig c;
  c.kind = "registered";
  c.name = name;
  c.in_dim = 4;
  c.hidden_dim = 8;
  c.out_dim = out_dim;
  c.dropout = 0.0;
  return c;
}

TEST_F(RegisteredModelTest, TheRegistryBuildsTheSameModuleFromTheSameSeedAndNamesItsMistakes) {
  at::Generator global = at::detail::getDefaultCPUGenerator();
  global.set_current_seed(11);
  const at::Tensor expected = at::rand({4});
  global.set_current_seed(11);
  auto a = make_model(registered_config(kModel), 5);
  EXPECT_TRUE(at::equal(at::rand({4}), expected)) << "building a model moved torch's default generator";
  auto b = make_model(registered_config(kModel), 5);
  auto c = make_model(registered_config(kModel), 6);
  const at::Tensor out = forward_on_a_small_batch(*a, 4);
  EXPECT_EQ(out.sizes(), (at::IntArrayRef{2, 3}));  // the seeds' rows only
  EXPECT_TRUE(at::equal(out, forward_on_a_small_batch(*b, 4)));
  EXPECT_FALSE(at::equal(out, forward_on_a_small_batch(*c, 4)));
  // reset_parameters redraws from a seed: c becomes a.
  c->reset_parameters(5);
  EXPECT_TRUE(at::equal(out, forward_on_a_small_batch(*c, 4)));
  EXPECT_EQ(a->config().structure(), "registered:two_layer_mean in=4 hidden=8 out=3 layers=2");
  EXPECT_EQ(a->named_parameters().size(), 6u);  // module.self1.weight, ...
  EXPECT_NE(a->named_parameters().find("module.self1.weight"), nullptr);

  testing::expect_usage_error([] { register_model(kModel, [](const ModelConfig&) { return std::make_shared<TwoLayerMean>(1, 1, 1, 0.0); }); },
                              "'two_layer_mean' is registered already");
  testing::expect_usage_error([] { register_model("my model", [](const ModelConfig&) { return std::make_shared<TwoLayerMean>(1, 1, 1, 0.0); }); },
                              "'my model' is not a model name");
  testing::expect_usage_error([] { make_model(registered_config("nobody"), 1); },
                              "no model 'nobody' is registered in this process (registered: two_layer_mean)");

  // A module whose output is not [n, out_dim] is named when it runs.
  register_model("too_wide", [](const ModelConfig& c) {
    return std::make_shared<TwoLayerMean>(c.in_dim, c.hidden_dim, c.out_dim + 1, 0.0);
  });
  auto wide = make_model(registered_config("too_wide"), 1);
  try {
    forward_on_a_small_batch(*wide, 4);
    ADD_FAILURE() << "an output of the wrong width was taken";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "model 'too_wide': forward returned [3, 4]");
    EXPECT_CONTAINS(e.what(), "expected float32 [n, 3]");
  }
  EXPECT_TRUE(unregister_model("too_wide"));
  EXPECT_FALSE(unregister_model("too_wide"));
  EXPECT_EQ(registered_models(), std::vector<std::string>{kModel});
}

}  // namespace
}  // namespace partita
