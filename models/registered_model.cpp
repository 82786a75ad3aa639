// A registered module (models/model_registry.h) as a GnnModel: the batch handed over as
// (x, edge_index), the seeds' rows of its output returned, its parameters those of the
// submodule "module".
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <string>

#include "base/error.h"
#include "models/model_kinds.h"
#include "models/model_registry.h"

namespace partita {

namespace {

std::string shape_of(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

class RegisteredModel : public GnnModel {
 public:
  RegisteredModel(const ModelConfig& config, uint64_t seed) : GnnModel(config), host_(build_host_module(config, seed)) {
    register_module("module", host_.module);
  }

  at::Tensor forward(const GraphBatch& batch, bool train, uint64_t /*dropout_key*/) override {
    const ModelConfig& c = config();
    if (!batch.x.defined() || batch.x.dim() != 2 || batch.x.size(1) != c.in_dim || batch.x.size(0) != batch.num_nodes) {
      throw Error("model '" + c.name + "': the batch has x of shape " + shape_of(batch.x) + "; the model takes in_dim = " +
                  std::to_string(c.in_dim));
    }
    const at::Tensor edge_index = batch.edges.num_edges() > 0 ? at::stack({batch.edges.src, batch.edges.dst})
                                                               : at::empty({2, 0}, at::kLong);
    host_.module->train(train);
    at::Tensor out;
    try {
      out = host_.forward(batch.x, edge_index);
    } catch (const c10::Error& e) {
      throw Error("model '" + c.name + "': forward failed: " + e.what_without_backtrace());
    }
    if (!out.defined() || out.dim() != 2 || out.size(0) < batch.batch_size || out.size(1) != c.out_dim ||
        out.scalar_type() != at::kFloat) {
      throw Error("model '" + c.name + "': forward returned " + shape_of(out) +
                  (out.defined() ? " " + std::string(c10::toString(out.scalar_type())) : std::string()) +
                  ", expected float32 [n, " + std::to_string(c.out_dim) + "] with n >= the batch's " +
                  std::to_string(batch.batch_size) + " seeds");
    }
    return out.narrow(0, 0, batch.batch_size);
  }

  Outputs forward_with_embeddings(const GraphBatch&) override {
    throw Error("model '" + config().name +
                "': a registered model gives its output only, not the embeddings its last layer reads");
  }

  // A module built afresh from `seed`, its tensors copied into this one's.
  void reset_parameters(uint64_t seed) override {
    const HostModule fresh = build_host_module(config(), seed);
    const auto from = fresh.module->named_parameters(true);
    const auto from_buffers = fresh.module->named_buffers(true);
    at::NoGradGuard no_grad;
    for (auto& p : host_.module->named_parameters(true)) copy_from(from, p.key(), p.value());
    for (auto& b : host_.module->named_buffers(true)) copy_from(from_buffers, b.key(), b.value());
  }

 private:
  void copy_from(const torch::OrderedDict<std::string, at::Tensor>& from, const std::string& name, at::Tensor& to) {
    const at::Tensor* source = from.find(name);
    if (source == nullptr || source->sizes() != to.sizes()) {
      throw Error("model '" + config().name + "': its factory built " + name +
                  (source == nullptr ? " once only" : " with another shape") + ": a factory must build the same module every time");
    }
    to.copy_(*source);
  }

  HostModule host_;
};

}  // namespace

std::shared_ptr<GnnModel> make_registered(const ModelConfig& config, uint64_t seed) {
  return std::make_shared<RegisteredModel>(config, seed);
}

}  // namespace partita
