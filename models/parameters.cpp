#include "models/parameters.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/checksum.h"
#include "base/error.h"

namespace partita {

namespace {

void check_float(const at::Tensor& p) {
  if (p.scalar_type() != at::kFloat) {
    throw Error("parameters: flat buffers hold float32; a parameter is " +
                std::string(c10::toString(p.scalar_type())));
  }
}

}  // namespace

int64_t num_elements(const std::vector<at::Tensor>& params) {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

void flatten_gradients(const std::vector<at::Tensor>& params, std::vector<float>& out) {
  out.resize(static_cast<size_t>(num_elements(params)));
  float* next = out.data();
  for (const auto& p : params) {
    check_float(p);
    if (p.grad().defined()) {
      const at::Tensor grad = p.grad().contiguous();
      std::memcpy(next, grad.data_ptr<float>(), grad.numel() * sizeof(float));
    } else {
      std::fill(next, next + p.numel(), 0.0f);
    }
    next += p.numel();
  }
}

void assign_gradients(const std::vector<at::Tensor>& params, const float* data, size_t size) {
  if (static_cast<int64_t>(size) != num_elements(params)) {
    throw Error("parameters: a gradient buffer of " + std::to_string(size) +
                " floats for parameters of " + std::to_string(num_elements(params)));
  }
  at::NoGradGuard no_grad;
  for (const auto& p : params) {
    check_float(p);
    const at::Tensor chunk =
        at::from_blob(const_cast<float*>(data), p.sizes(), at::dtype(at::kFloat));
    at::Tensor& grad = p.mutable_grad();
    if (grad.defined()) {
      grad.copy_(chunk);
    } else {
      grad = chunk.clone();
    }
    data += p.numel();
  }
}

uint64_t parameter_hash(const std::vector<at::Tensor>& params) {
  Checksum sum;
  for (const auto& p : params) {
    const at::Tensor values = p.detach().contiguous();
    for (int64_t d : values.sizes()) sum.update(&d, sizeof d);
    sum.update(values.data_ptr(), values.numel() * values.element_size());
  }
  return sum.digest();
}

}  // namespace partita
