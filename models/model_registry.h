// A host application's own model: a libtorch module that the application registers under a
// name before it runs jobs, and that a job names instead of a built-in kind:
//
//   model: {kind: registered, name: my_sage, hidden: 64, layers: 2}      # node classification
//   model: {encoder: registered, name: my_sage, dim: 64, hidden: 64}     # link prediction
//
// Every trainer of such a job builds the module with the registered factory and trains it as
// it trains a built-in: its parameters are stepped by the job's optimiser, averaged through
// the allreduce, hashed to prove the replicas agree, and checkpointed and restored by name
// with the optimiser's state. The registry is the process's: the trainers that build the
// module run in the process that registered it (a job in process), or in daemons that
// registered it too (a host application that runs its own daemons, runtime/daemon.h, with
// the same registrations). A daemon that lacks the name refuses to spawn the trainer, and
// the job fails naming that daemon and the model.
//
// The concept, ModelFactory: a callable `const ModelConfig& -> std::shared_ptr<M>` (or a
// TORCH_MODULE holder of M) where M derives from torch::nn::Module and has
//
//   at::Tensor forward(const at::Tensor& x, const at::Tensor& edge_index);
//
// (arguments by value or const reference). The config gives the sizes: in_dim (the graph's
// features per node), hidden_dim (model.hidden), out_dim (the classes, or a link encoder's
// model.dim), num_layers (model.layers), dropout (model.dropout), and `name`. Per batch
// (models/batch_tensors.h):
//   x           float32 [num_nodes, in_dim]: the sampled nodes' features, the batch's seeds
//               first (rows [0, batch_size)), then the nodes of each further hop
//   edge_index  int64 [2, E], PyG's layout: row 0 each sampled edge's source, row 1 its
//               destination (messages flow source -> destination), indices into x's rows,
//               sorted by destination; the edges of every type, no self loops added
//   returns     float32 [n, out_dim], n >= batch_size: rows [0, batch_size) are the seeds'
//               logits (node classification) or representations (a link encoder, scored by
//               the job's decoder); the rest are ignored.
// The module is in training mode (torch::nn::Module::is_training) exactly when the step
// trains, so torch::nn::Dropout and friends work as usual; their masks then come from torch's
// own generator, not from the job's keyed streams, so such a run is not bit-reproducible
// and its steps differ between partitionings (built-in dropout is keyed and is). Without
// dropout, a registered model is as deterministic as the built-ins.
//
// Initial weights: every replica must start identical. The factory runs under a
// process-wide lock with torch's default CPU generator seeded from the job's seed (its state
// is restored afterwards), so a module that draws its initial weights from that generator
// (torch::nn's default initialisation does) gets the same weights in every replica and
// process. A factory must draw from nothing else (no std::random_device, no clock); the
// driver compares the replicas' weights after every step and fails a job whose differ.
//
// `partita export` and `partita predict` refuse a run of a registered model: it has no PyG
// equivalent, and the `partita` binary has no factory to rebuild it. Its checkpoints
// (models/checkpoint.h) hold the module's tensors under "module.<its parameter path>".
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "models/model_config.h"

namespace partita {

// A registered model as the trainer holds it: the module (its parameters, buffers and
// training mode) and its forward, with the module's type erased.
struct HostModule {
  std::shared_ptr<torch::nn::Module> module;
  std::function<at::Tensor(const at::Tensor& x, const at::Tensor& edge_index)> forward;
};

using HostModuleFactory = std::function<HostModule(const ModelConfig& config)>;

// Registers `factory` under `name`, for the jobs this process runs from now on. Thread-safe.
// Throws UsageError for an empty factory, a name already registered, or a name that is not
// 1-64 characters of [A-Za-z0-9_.-].
void register_host_module(const std::string& name, HostModuleFactory factory);

// Removes `name`; false if it was not registered. Jobs already built keep their modules.
bool unregister_model(const std::string& name);

// The registered names, sorted.
std::vector<std::string> registered_models();

// Builds the module registered under config.name (a ModelConfig of kind "registered") with
// torch's default generator seeded from `seed` (above). Throws UsageError naming the
// registered models when the name is not one of them, Error naming the model when its
// factory throws or returns no module, or a module without parameters.
HostModule build_host_module(const ModelConfig& config, uint64_t seed);

namespace model_registry_detail {

template <typename T, typename = void>
struct is_holder : std::false_type {};
template <typename T>
struct is_holder<T, std::void_t<decltype(std::declval<T&>().ptr())>> : std::true_type {};

// The module a factory returned: a shared_ptr, or what a TORCH_MODULE holder holds.
template <typename R>
auto module_pointer(R&& returned) {
  using T = std::decay_t<R>;
  if constexpr (is_holder<T>::value) {
    return std::decay_t<decltype(returned.ptr())>(returned.ptr());
  } else {
    return T(std::forward<R>(returned));
  }
}

template <typename M, typename = void>
struct has_graph_forward : std::false_type {};
template <typename M>
struct has_graph_forward<M, std::void_t<decltype(at::Tensor(std::declval<M&>().forward(
                                std::declval<const at::Tensor&>(), std::declval<const at::Tensor&>())))>>
    : std::true_type {};

}  // namespace model_registry_detail

// Registers a ModelFactory (above) under `name`; throws as register_host_module does.
//   register_model("my_sage", [](const ModelConfig& c) {
//     return std::make_shared<MySage>(c.in_dim, c.hidden_dim, c.out_dim);
//   });
template <typename Factory>
void register_model(const std::string& name, Factory factory) {
  using Returned = decltype(factory(std::declval<const ModelConfig&>()));
  using Pointer = decltype(model_registry_detail::module_pointer(std::declval<Returned>()));
  using M = typename Pointer::element_type;
  static_assert(std::is_same_v<Pointer, std::shared_ptr<M>>,
                "a model factory returns std::shared_ptr<Module> or a TORCH_MODULE holder");
  static_assert(std::is_base_of_v<torch::nn::Module, M>, "a registered model must derive from torch::nn::Module");
  static_assert(model_registry_detail::has_graph_forward<M>::value,
                "a registered model needs at::Tensor forward(const at::Tensor& x, const at::Tensor& edge_index)");
  register_host_module(name, [factory = std::move(factory)](const ModelConfig& config) {
    std::shared_ptr<M> module = model_registry_detail::module_pointer(factory(config));
    HostModule host;
    if (module) {
      host.forward = [raw = module.get()](const at::Tensor& x, const at::Tensor& edge_index) {
        return at::Tensor(raw->forward(x, edge_index));
      };
    }
    host.module = std::move(module);
    return host;
  });
}

}  // namespace partita
