#include "bench/checkpoint_bench.h"

#include <torch/optim/adam.h>
#include <torch/serialize/archive.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/harness.h"
#include "models/checkpoint.h"
#include "models/gnn_model.h"
#include "models/optimizer.h"

namespace partita::bench {

namespace {

// torch's archive of the same state, as format version 1 wrote it (the payload only).
std::string torch_archive(const GnnModel& model, const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  archive.write("structure", c10::IValue(model.config().structure()));
  torch::serialize::OutputArchive model_archive(archive.compilation_unit());
  model.save(model_archive);
  archive.write("model", model_archive);
  torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
  optimizer.save(optimizer_archive);
  archive.write("optimizer_state", optimizer_archive);
  std::ostringstream stream;
  archive.save_to(stream);
  return stream.str();
}

}  // namespace

void run_checkpoint_bench(const CheckpointBenchOptions& o) {
  if (o.num_nodes <= 0 || o.hidden <= 0 || o.relations <= 0 || o.bases <= 0 || o.rounds <= 0) {
    throw UsageError("bench checkpoint: nodes, hidden, relations, bases and rounds must be positive");
  }
  ModelConfig c;
  c.kind = "rgcn";
  c.num_nodes = o.num_nodes;
  c.hidden_dim = o.hidden;
  c.out_dim = 4;
  c.num_layers = 2;
  c.num_relations = o.relations;
  c.num_node_types = 1;
  c.relation_dst_type.assign(static_cast<size_t>(o.relations), 0);
  c.decomposition = "basis";
  c.num_bases = o.bases;
  auto model = make_model(c, 1);
  auto optimizer = make_optimizer("adam", model->parameters(), 0.01);
  // One step with gradients of ones: Adam's state exists, as after any epoch.
  for (at::Tensor& p : model->parameters()) p.mutable_grad() = at::ones_like(p);
  optimizer->step();

  std::vector<char> state = save_training_state(*model, *optimizer);
  const size_t bytes = state.size();
  const size_t torch_bytes = torch_archive(*model, *optimizer).size();
  std::vector<char> copy(bytes, 1);
  RoundsOptions rounds;
  char title[256];
  std::snprintf(title, sizeof title,
                "R-GCN state: %lld nodes one-hot, %d relations, %d bases, hidden %lld, with Adam's: %.1f MB "
                "(torch's archive %.1f MB)",
                static_cast<long long>(o.num_nodes), o.relations, o.bases, static_cast<long long>(o.hidden),
                bytes / 1e6, torch_bytes / 1e6);
  rounds.title = title;
  rounds.rounds = o.rounds;
  const Results results = run_cases(
      rounds, {
                  {"memcpy (the floor)", Role::kFloor,
                   [&] { return wall_seconds([&] { std::memcpy(copy.data(), state.data(), bytes); }); }},
                  {"save_training_state", Role::kKernel,
                   [&] { return wall_seconds([&] { state = save_training_state(*model, *optimizer); }); }},
                  {"load_training_state", Role::kKernel,
                   [&] { return wall_seconds([&] { load_training_state(*model, *optimizer, state); }); }},
                  {"torch archive (format 1)", Role::kBaseline,
                   [&] { return wall_seconds([&] { torch_archive(*model, *optimizer); }); }},
              });
  std::printf("save_training_state: %.2f GB/s, %.1fx faster than torch's archive\n",
              bytes / results.median("save_training_state") / 1e9, 1 / results.ratio("save_training_state"));
}

}  // namespace partita::bench
