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

template <typename T>
void apply_mask(const T* in, T* out, int64_t n, uint64_t key, uint32_t threshold, T scale) {
  const uint64_t mixed = mix64(key);
  const auto k1 = static_cast<uint32_t>(mixed), k2 = static_cast<uint32_t>(mixed >> 32);
  at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      mask_range_float(in, out, begin, end, k1, k2, threshold, scale);
    } else {
      mask_range(in, out, begin, end, k1, k2, threshold, scale);
    }
  });
}

at::Tensor masked(const at::Tensor& x, double p, uint64_t key) {
  const at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in);
  // p < 1, so the threshold fits 32 bits.
  const auto threshold = static_cast<uint32_t>(std::ldexp(p, 32));
  AT_DISPATCH_FLOATING_TYPES(in.scalar_type(), "keyed_dropout", [&] {
    apply_mask(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), in.numel(), key, threshold,
               static_cast<scalar_t>(1.0 / (1.0 - p)));
  });
  return out;
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

}  // namespace

uint64_t step_key(uint64_t job_seed, uint64_t epoch, uint64_t step, uint64_t trainer) {
  return mix64(mix64(job_seed, epoch, step), trainer);
}

at::Tensor keyed_dropout(const at::Tensor& x, double p, uint64_t key) {
  if (!(p >= 0 && p < 1)) {
    throw UsageError("dropout: the probability must be in [0, 1), not " + std::to_string(p));
  }
  if (p == 0) return x;
  // IValue holds signed integers; the cast round-trips the bits.
  return KeyedDropout::apply(x, p, static_cast<int64_t>(key));
}

}  // namespace partita
