// The trainer's helpers: loss and accuracy over the seeds, optimisers, flat gradient
// buffers, weight hashes, and saved training state.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/error.h"
#include "models/batch_tensors.h"
#include "models/checkpoint_format.h"
#include "models/gnn_model.h"
#include "models/keyed_dropout.h"
#include "models/training.h"
#include "sampled_batch.h"
#include "test_paths.h"

namespace partita {
namespace {

TEST(LossTest, SumsTheCrossEntropyOfTheLabelledSeeds) {
  at::Tensor logits = at::tensor({1.0f, 2.0f, 0.0f, 3.0f, 0.0f, 0.0f, 0.5f, 0.5f, 0.5f}).view({3, 3});
  // Per node; the fourth label is beyond the seeds and the third seed is unlabelled.
  at::Tensor labels = at::tensor(std::vector<int64_t>{1, 0, -1, 2});
  auto nll = [](std::vector<double> row, int label) {
    double sum = 0;
    for (double v : row) sum += std::exp(v);
    return std::log(sum) - row[label];
  };
  EXPECT_NEAR(cross_entropy_sum(logits, labels).item<double>(),
              nll({1, 2, 0}, 1) + nll({3, 0, 0}, 0), 1e-6);
  EXPECT_EQ(count_labelled(logits, labels), 2);
  EXPECT_EQ(count_correct(logits, labels), 2);
  at::Tensor wrong = at::tensor(std::vector<int64_t>{0, 1, 2});
  EXPECT_EQ(count_correct(logits, wrong), 0);
}

TEST(LossTest, LabelsOutsideTheClassesAreAnError) {
  at::Tensor logits = at::zeros({2, 3});
  EXPECT_THROW(cross_entropy_sum(logits, at::tensor(std::vector<int64_t>{0, 3})), Error);
  EXPECT_THROW(cross_entropy_sum(logits, at::tensor(std::vector<int64_t>{-2, 0})), Error);
  EXPECT_THROW(cross_entropy_sum(logits, at::tensor(std::vector<int64_t>{0})), Error);
}

TEST(OptimizerTest, SgdStepsWithMomentumAndWeightDecay) {
  at::Tensor w = at::tensor({1.0f}).requires_grad_(true);
  auto sgd = make_optimizer("sgd", {w}, 0.1, 0.5, 0.9);
  for (int step = 0; step < 2; ++step) {
    sgd->zero_grad();
    (w * 2).sum().backward();  // gradient 2, plus 0.5 * w of weight decay
    sgd->step();
  }
  // Step 1: g = 2.5, v = 2.5, w = 0.75. Step 2: g = 2.375, v = 0.9 * 2.5 + 2.375 = 4.625.
  EXPECT_NEAR(w.item<float>(), 0.75 - 0.1 * 4.625, 1e-6);
}

TEST(OptimizerTest, BadSettingsNameTheField) {
  at::Tensor w = at::zeros({1}).requires_grad_(true);
  auto expect_field = [&](const std::string& name, double lr, double wd, double momentum,
                          const std::string& field) {
    try {
      make_optimizer(name, {w}, lr, wd, momentum);
      ADD_FAILURE() << "no error; expected one naming " << field;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(field + ":", 0), 0u) << e.what();
    }
  };
  expect_field("adagrad", 0.1, 0, 0.9, "optimizer.name");
  expect_field("adam", 0, 0, 0.9, "optimizer.lr");
  expect_field("adam", 0.1, -1, 0.9, "optimizer.weight_decay");
  expect_field("sgd", 0.1, 0, 1.0, "optimizer.momentum");
}

std::shared_ptr<GnnModel> small_model(uint64_t seed, const std::string& kind = "graphsage") {
  ModelConfig c;
  c.kind = kind;
  c.in_dim = 16;
  c.hidden_dim = 16;
  c.out_dim = 4;
  c.num_layers = 2;
  return make_model(c, seed);
}

const GraphBatch& batch() {
  static const GraphBatch b = [] {
    Dataset d = testing::small_sbm();
    return to_graph_batch(testing::sample_batch(d, testing::first_nodes(32), {5, 5}));
  }();
  return b;
}

TEST(ParametersTest, GradientsRoundTripThroughAFlatBuffer) {
  auto model = small_model(1);
  cross_entropy_sum(model->forward(batch(), true, 1), batch().y).backward();
  std::vector<float> flat;
  flatten_gradients(*model, flat);
  ASSERT_EQ(static_cast<int64_t>(flat.size()), num_elements(model->parameters()));
  // In order: the first parameter's gradient leads the buffer.
  at::Tensor first = model->parameters()[0].grad();
  EXPECT_FLOAT_EQ(flat[0], first.view({-1})[0].item<float>());

  std::vector<float> doubled = flat;
  for (float& v : doubled) v *= 2;
  auto other = small_model(2);  // no gradients yet: assigning creates them
  assign_gradients(*other, doubled.data(), doubled.size());
  std::vector<float> back;
  flatten_gradients(*other, back);
  EXPECT_EQ(back, doubled);
  EXPECT_THROW(assign_gradients(*other, doubled.data(), doubled.size() - 1), Error);
}

TEST(ParametersTest, MissingGradientsFlattenToZeros) {
  auto model = small_model(1);
  std::vector<float> flat(3, 7.0f);
  flatten_gradients(*model, flat);
  EXPECT_EQ(flat, std::vector<float>(flat.size(), 0.0f));
}

TEST(ParametersTest, HashSeesEveryBit) {
  auto model = small_model(1);
  const uint64_t before = parameter_hash(*model);
  at::Tensor last = model->parameters().back();
  {
    at::NoGradGuard no_grad;
    float* data = last.data_ptr<float>() + last.numel() - 1;
    uint32_t bits;
    std::memcpy(&bits, data, sizeof bits);
    bits ^= 1;  // the lowest mantissa bit of the last weight
    std::memcpy(data, &bits, sizeof bits);
  }
  EXPECT_NE(parameter_hash(*model), before);
}

// Steps `steps` times on the shared batch with keys that depend on the step only.
void train(GnnModel& model, torch::optim::Optimizer& optimizer, int first_step, int steps) {
  for (int step = first_step; step < first_step + steps; ++step) {
    optimizer.zero_grad();
    cross_entropy_sum(model.forward(batch(), true, step_key(1, 0, step, 0)), batch().y).backward();
    optimizer.step();
  }
}

TEST(TrainingStateTest, LoadingContinuesTrainingExactly) {
  for (const std::string name : {"adam", "sgd"}) {
    auto model = small_model(1);
    auto optimizer = make_optimizer(name, model->parameters(), 0.01, 1e-4, 0.9);
    train(*model, *optimizer, 0, 3);
    const std::vector<char> saved = save_training_state(*model, *optimizer);
    train(*model, *optimizer, 3, 2);

    auto restored = small_model(99);
    auto restored_optimizer = make_optimizer(name, restored->parameters(), 0.01, 1e-4, 0.9);
    load_training_state(*restored, *restored_optimizer, saved);
    train(*restored, *restored_optimizer, 3, 2);
    EXPECT_EQ(parameter_hash(*restored), parameter_hash(*model)) << name;
    EXPECT_TRUE(at::equal(restored->forward(batch(), false), model->forward(batch(), false))) << name;
  }
}

void expect_load_error(const std::vector<char>& bytes, GnnModel& model,
                       torch::optim::Optimizer& optimizer, const std::string& fragment) {
  try {
    load_training_state(model, optimizer, bytes);
    ADD_FAILURE() << "no error; expected one mentioning " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TrainingStateTest, CorruptOrMismatchedStateIsAnError) {
  auto model = small_model(1);
  auto optimizer = make_optimizer("adam", model->parameters(), 0.01);
  train(*model, *optimizer, 0, 1);
  const std::vector<char> saved = save_training_state(*model, *optimizer);
  const uint64_t hash = parameter_hash(*model);

  std::vector<char> flipped = saved;
  flipped[flipped.size() / 2] ^= 0x10;
  expect_load_error(flipped, *model, *optimizer, "checksum");
  expect_load_error(std::vector<char>(saved.begin(), saved.end() - 100), *model, *optimizer, "truncated");
  expect_load_error(std::vector<char>(saved.begin(), saved.begin() + 10), *model, *optimizer, "too short");
  std::vector<char> not_ours = saved;
  not_ours[0] = 'X';
  expect_load_error(not_ours, *model, *optimizer, "not a Partita checkpoint");
  EXPECT_EQ(parameter_hash(*model), hash);  // nothing was loaded

  auto gcn = small_model(1, "gcn");
  auto gcn_optimizer = make_optimizer("adam", gcn->parameters(), 0.01);
  expect_load_error(saved, *gcn, *gcn_optimizer, "saved from a graphsage");
  auto sgd = make_optimizer("sgd", model->parameters(), 0.01);
  expect_load_error(saved, *model, *sgd, "saved with the adam optimizer");
}

// A model of the same structure whose tensors differ (a parameter registered beside the
// layers, as link jobs register their decoder's): each difference is named, nothing loads.
TEST(TrainingStateTest, ATensorOfAnotherShapeOrNameIsNamed) {
  auto with_extra = [](int64_t size, const std::string& name) {
    auto model = small_model(1);
    model->register_parameter(name, at::zeros({size}));
    return model;
  };
  auto saved_model = with_extra(3, "extra");
  auto saved_optimizer = make_optimizer("adam", saved_model->parameters(), 0.01);
  train(*saved_model, *saved_optimizer, 0, 1);
  const std::vector<char> saved = save_training_state(*saved_model, *saved_optimizer);

  auto wider = with_extra(4, "extra");
  auto wider_optimizer = make_optimizer("adam", wider->parameters(), 0.01);
  const uint64_t hash = parameter_hash(*wider);
  expect_load_error(saved, *wider, *wider_optimizer, "parameter/extra is Float [3], the model's is Float [4]");
  EXPECT_EQ(parameter_hash(*wider), hash);
  auto renamed = with_extra(3, "other");
  auto renamed_optimizer = make_optimizer("adam", renamed->parameters(), 0.01);
  expect_load_error(saved, *renamed, *renamed_optimizer, "holds no parameter/other");
  auto counted = small_model(1);
  counted->register_buffer("counts", at::zeros({2}, at::kLong));
  auto counted_optimizer = make_optimizer("adam", counted->parameters(), 0.01);
  auto plain = small_model(1);
  auto plain_optimizer = make_optimizer("adam", plain->parameters(), 0.01);
  expect_load_error(save_training_state(*counted, *counted_optimizer), *plain, *plain_optimizer,
                    "holds 1 record(s) this model and optimizer have no place for");
}

// Checkpoints written before format version 2 (torch's archive, tests/corpus/checkpoints:
// small_model(1) after 3 steps) still resume: the weights load, and training goes on as
// from a state saved now.
TEST(TrainingStateTest, CheckpointsOfFormatVersionOneStillLoad) {
  for (const std::string name : {"adam", "sgd"}) {
    std::ifstream in(std::string(testing::kTestCorpus) + "/checkpoints/v1-graphsage-" + name + ".bin", std::ios::binary);
    const std::vector<char> v1((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(v1.size(), sizeof(checkpoint_format::Envelope)) << name;
    uint32_t version;
    std::memcpy(&version, v1.data() + 8, sizeof version);
    ASSERT_EQ(version, checkpoint_format::kTorchArchiveVersion);

    auto model = small_model(1);
    auto optimizer = make_optimizer(name, model->parameters(), 0.01, 1e-4, 0.9);
    train(*model, *optimizer, 0, 3);
    auto restored = small_model(99);
    auto restored_optimizer = make_optimizer(name, restored->parameters(), 0.01, 1e-4, 0.9);
    load_training_state(*restored, *restored_optimizer, v1);
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      EXPECT_TRUE(at::allclose(restored->parameters()[i], model->parameters()[i], 1e-5, 1e-7)) << name << " " << i;
    }
    train(*model, *optimizer, 3, 2);
    train(*restored, *restored_optimizer, 3, 2);
    // The optimiser's state came too: without it the next steps would differ far more.
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      EXPECT_TRUE(at::allclose(restored->parameters()[i], model->parameters()[i], 1e-4, 1e-6)) << name << " " << i;
    }
  }
}

// Bytes that pass the checksum but were not written by save_training_state (a writer's bug,
// or a file made to pass it): every single-byte change of the payload either loads or
// throws Error, and a refused one leaves the model as it was.
TEST(TrainingStateTest, AnyChangedByteLoadsOrIsRefusedWithoutEffect) {
  for (const std::string name : {"adam", "sgd"}) {
    auto model = small_model(1);
    auto optimizer = make_optimizer(name, model->parameters(), 0.01, 1e-4, 0.9);
    train(*model, *optimizer, 0, 2);
    const std::vector<char> saved = save_training_state(*model, *optimizer);
    const size_t header = sizeof(checkpoint_format::Envelope);
    // Headers and names are at the start of each record: mutate the first 2 KB densely.
    std::mt19937_64 rng(7);
    int refused = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::vector<char> bytes = saved;
      const size_t span = trial % 2 == 0 ? std::min<size_t>(2048, bytes.size() - header) : bytes.size() - header;
      bytes[header + rng() % span] ^= static_cast<char>(1 + rng() % 255);
      const uint64_t sum = checksum(bytes.data() + header, bytes.size() - header);
      std::memcpy(bytes.data() + 24, &sum, sizeof sum);
      auto target = small_model(5);
      auto target_optimizer = make_optimizer(name, target->parameters(), 0.01, 1e-4, 0.9);
      const uint64_t before = parameter_hash(*target);
      try {
        load_training_state(*target, *target_optimizer, bytes);
      } catch (const Error&) {
        ++refused;
        EXPECT_EQ(parameter_hash(*target), before) << name << " trial " << trial;
      }
    }
    EXPECT_GT(refused, 100) << name;  // headers were hit and refused
  }
}

}  // namespace
}  // namespace partita
