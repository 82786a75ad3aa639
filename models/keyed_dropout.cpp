#include "models/keyed_dropout.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "base/random.h"

namespace partita {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A 32-bit integer hash (Wellons' lowbias32): plain 32-bit multiplies and shifts, so the
// mask loop vectorises; one 64-bit hash per element was as slow as the layer's matmuls.
inline uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// Element i is kept when hash(hash(i + k1) ^ k2) >= threshold: the two key halves keep
// the streams of different keys unrelated. Positions are taken modulo 2^32.
template <typename T>
inline __attribute__((always_inline)) void mask_range(const T* __restrict__ in, T* __restrict__ out,
                                                      int64_t begin, int64_t end, uint32_t k1,
                                                      uint32_t k2, uint32_t threshold, T scale) {
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t bits = hash32(hash32(static_cast<uint32_t>(i) + k1) ^ k2);
    out[i] = bits >= threshold ? in[i] * scale : T(0);
  }
}

// The float loop, compiled for the vector units the machine has (the build targets the
// baseline x86-64, whose SSE2 lacks a 32-bit vector multiply).
__attribute__((target_clones("avx512f", "avx2", "default"))) void mask_range_float(
    const float* in, float* out, int64_t begin, int64_t end, uint32_t k1, uint32_t k2,
    uint32_t threshold, float scale) {
  mask_range(in, out, begin, end, k1, k2, threshold, scale);
}

// ReLU and the mask in one pass: out[i] = in[i] * scale where the element is kept and
// in[i] > 0, else 0; the same bits as the mask applied to relu(in).
template <typename T>
inline __attribute__((always_inline)) void relu_mask_range(const T* __restrict__ in, T* __restrict__ out,
                                                           int64_t begin, int64_t end, uint32_t k1,
                                                           uint32_t k2, uint32_t threshold, T scale) {
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t bits = hash32(hash32(static_cast<uint32_t>(i) + k1) ^ k2);
    out[i] = bits >= threshold && in[i] > T(0) ? in[i] * scale : T(0);
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void relu_mask_range_float(
    const float* in, float* out, int64_t begin, int64_t end, uint32_t k1, uint32_t k2,
    uint32_t threshold, float scale) {
  relu_mask_range(in, out, begin, end, k1, k2, threshold, scale);
}

// The gradient through ReLU and the mask, from the forward pass's output alone: an element
// passed (was kept and positive) exactly when its output is positive, since scale >= 1.
template <typename T>
inline __attribute__((always_inline)) void relu_mask_backward_range(const T* __restrict__ grad,
                                                                    const T* __restrict__ out,
                                                                    T* __restrict__ grad_in, int64_t begin,
                                                                    int64_t end, T scale) {
  for (int64_t i = begin; i < end; ++i) grad_in[i] = out[i] > T(0) ? grad[i] * scale : T(0);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void relu_mask_backward_range_float(
    const float* grad, const float* out, float* grad_in, int64_t begin, int64_t end, float scale) {
  relu_mask_backward_range(grad, out, grad_in, begin, end, scale);
}

template <typename T>
void apply_mask(const T* in, T* out, int64_t n, uint64_t key, uint32_t threshold, T scale, bool relu) {
  const uint64_t mixed = mix64(key);
  const auto k1 = static_cast<uint32_t>(mixed), k2 = static_cast<uint32_t>(mixed >> 32);
  at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      (relu ? relu_mask_range_float : mask_range_float)(in, out, begin, end, k1, k2, threshold, scale);
    } else if (relu) {
      relu_mask_range(in, out, begin, end, k1, k2, threshold, scale);
    } else {
      mask_range(in, out, begin, end, k1, k2, threshold, scale);
    }
  });
}

template <typename T>
T keep_scale(double p) {
  return static_cast<T>(1.0 / (1.0 - p));
}

at::Tensor masked(const at::Tensor& x, double p, uint64_t key, bool relu = false) {
  const at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in);
  // p < 1, so the threshold fits 32 bits.
  const auto threshold = static_cast<uint32_t>(std::ldexp(p, 32));
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "keyed_dropout", [&] {
    apply_mask(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), in.numel(), key, threshold,
               keep_scale<scalar_t>(p), relu);
  });
  return out;
}

template <typename T>
void apply_relu_mask_backward(const T* grad, const T* out, T* grad_in, int64_t n, T scale) {
  at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      relu_mask_backward_range_float(grad, out, grad_in, begin, end, scale);
    } else {
      relu_mask_backward_range(grad, out, grad_in, begin, end, scale);
    }
  });
}

at::Tensor relu_masked_backward(const at::Tensor& grad_out, const at::Tensor& out, double p) {
  const at::Tensor grad = grad_out.contiguous();
  at::Tensor grad_in = at::empty_like(grad);
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "relu_keyed_dropout_backward", [&] {
    apply_relu_mask_backward(grad.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), grad_in.data_ptr<scalar_t>(),
                             grad.numel(), keep_scale<scalar_t>(p));
  });
  return grad_in;
}

class KeyedDropout : public torch::autograd::Function<KeyedDropout> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double p, int64_t key) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["key"] = key;
    return masked(x, p, static_cast<uint64_t>(key));
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const double p = ctx->saved_data["p"].toDouble();
    const auto key = static_cast<uint64_t>(ctx->saved_data["key"].toInt());
    return {masked(grad_outputs[0], p, key), {}, {}};
  }
};

// ReLU, then dropout, in one pass each way. Saves its output (the next layer's input,
// kept anyway) instead of its input: the backward pass reads the output and the gradient,
// where ReLU's and dropout's passes read and wrote the gradient twice; on the benchmark
// graph's first layer (62k x 256) that halved the time of both.
class ReluKeyedDropout : public torch::autograd::Function<ReluKeyedDropout> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, double p, int64_t key) {
    at::Tensor out = masked(x, p, static_cast<uint64_t>(key), /*relu=*/true);
    ctx->saved_data["p"] = p;
    ctx->save_for_backward({out});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const double p = ctx->saved_data["p"].toDouble();
    return {relu_masked_backward(grad_outputs[0], ctx->get_saved_variables()[0], p), {}, {}};
  }
};

void check_probability(double p) {
  if (!(p >= 0 && p < 1)) {
    throw UsageError("dropout: the probability must be in [0, 1), not " + std::to_string(p));
  }
}

}  // namespace

uint64_t step_key(uint64_t job_seed, uint64_t epoch, uint64_t step, uint64_t trainer) {
  return mix64(mix64(job_seed, epoch, step), trainer);
}

at::Tensor keyed_dropout(const at::Tensor& x, double p, uint64_t key) {
  check_probability(p);
  if (p == 0) return x;
  // IValue holds signed integers; the cast round-trips the bits.
  return KeyedDropout::apply(x, p, static_cast<int64_t>(key));
}

at::Tensor relu_keyed_dropout(const at::Tensor& x, double p, uint64_t key) {
  check_probability(p);
  if (p == 0) return at::relu(x);
  return ReluKeyedDropout::apply(x, p, static_cast<int64_t>(key));
}

at::Tensor activate(const at::Tensor& x, const Activation& activation) {
  if (!activation.relu) return x;
  return activation.dropout > 0 ? relu_keyed_dropout(x, activation.dropout, activation.key) : at::relu(x);
}

}  // namespace partita
