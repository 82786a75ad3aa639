#include "models/aggregate.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"

namespace partita {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per parallel task: enough work (~64k multiply-adds) to amortise the task.
int64_t grain_rows(int64_t rows, int64_t edges, int64_t width) {
  const int64_t per_row = std::max<int64_t>(1, (edges / std::max<int64_t>(rows, 1) + 1) * width);
  return std::max<int64_t>(1, 65536 / per_row);
}

#define PARTITA_INLINE inline __attribute__((always_inline))

template <typename T>
PARTITA_INLINE void axpy(int64_t n, T a, const T* __restrict__ x, T* __restrict__ y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

// Eight partial sums, so the compiler can vectorise a reduction it may not reorder.
template <typename T>
PARTITA_INLINE T dot(int64_t n, const T* __restrict__ a, const T* __restrict__ b) {
  T acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  T sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Rows are gathered in edge order, which the hardware prefetcher cannot guess: ask for
// the next edge's row while this one is summed.
template <typename T>
PARTITA_INLINE void prefetch_row(const T* row, int64_t width) {
  const char* bytes = reinterpret_cast<const char*>(row);
  for (int64_t offset = 0; offset < width * static_cast<int64_t>(sizeof(T)); offset += 64) {
    __builtin_prefetch(bytes + offset);
  }
}

// The row loops below are always inlined into per-instruction-set clones for float (the
// build targets baseline x86-64, whose SSE2 vectors are a quarter of AVX-512's). The clones
// compute bit-identical results: every output element sees the same operations in the
// same order, and this file is compiled without floating-point contraction (no FMA).
#define PARTITA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// How a kernel's [rows, width] side sits in a wider matrix: rows `stride` apart, and, for
// aggregate_with_self, x's own row beside the aggregation (columns [width, 2 width)).
struct RowLayout {
  int64_t stride;
  bool with_self = false;
};

// out[d, h, :] = sum_e w[e, h] * x[src[e], h, :] for the destination rows [begin, end);
// with_self: out[d, width:] = x[d].
template <typename T>
PARTITA_INLINE void forward_rows(const T* x, const T* w, const int64_t* colptr,
                                 const int64_t* src, int64_t heads, int64_t channels, T* out,
                                 RowLayout layout, int64_t begin, int64_t end) {
  const int64_t width = heads * channels;
  const int64_t last = colptr[end] - 1;
  for (int64_t d = begin; d < end; ++d) {
    T* row = out + d * layout.stride;
    std::fill(row, row + width, T(0));
    if (layout.with_self) std::copy(x + d * width, x + (d + 1) * width, row + width);
    for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
      const T* from = x + src[e] * width;
      if (e < last) prefetch_row(x + src[e + 1] * width, width);
      for (int64_t h = 0; h < heads; ++h) {
        axpy(channels, w[e * heads + h], from + h * channels, row + h * channels);
      }
    }
  }
}

// grad_x[s, h, :] = sum over the out-edges e of s with e < num_edges of
// w[e, h] * grad_out[dst[e], h, :], for the source rows [begin, end): a gather over the
// transpose. with_self: the sum starts from grad_out[s, width:] for the rows s < num_self
// (x's own rows in aggregate_with_self), instead of 0. gate: the sum goes through a ReLU
// and dropout whose output was `gate` (each element times gate_scale where gate > 0, else 0).
template <typename T>
PARTITA_INLINE void backward_x_rows(const T* grad_out, const T* w, const int64_t* rowptr,
                                    const int64_t* out_edges, const int64_t* dst,
                                    int64_t num_edges, int64_t heads, int64_t channels,
                                    RowLayout layout, int64_t num_self, const T* gate, T gate_scale,
                                    T* grad_x, int64_t begin, int64_t end) {
  const int64_t width = heads * channels;
  for (int64_t s = begin; s < end; ++s) {
    T* row = grad_x + s * width;
    if (layout.with_self && s < num_self) {
      const T* self = grad_out + s * layout.stride + width;
      std::copy(self, self + width, row);
    } else {
      std::fill(row, row + width, T(0));
    }
    // A source's edges are in ascending position: those past num_edges lead to
    // destinations this call did not compute.
    for (int64_t k = rowptr[s]; k < rowptr[s + 1] && out_edges[k] < num_edges; ++k) {
      const int64_t e = out_edges[k];
      const T* from = grad_out + dst[e] * layout.stride;
      if (k + 1 < rowptr[s + 1] && out_edges[k + 1] < num_edges) {
        prefetch_row(grad_out + dst[out_edges[k + 1]] * layout.stride, width);
      }
      for (int64_t h = 0; h < heads; ++h) {
        axpy(channels, w[e * heads + h], from + h * channels, row + h * channels);
      }
    }
    if (gate != nullptr) {
      const T* g = gate + s * width;
      for (int64_t i = 0; i < width; ++i) row[i] = g[i] > T(0) ? row[i] * gate_scale : T(0);
    }
  }
}

// grad_w[e, h] = <grad_out[dst[e], h, :], x[src[e], h, :]> for the edges of the
// destination rows [begin, end).
template <typename T>
PARTITA_INLINE void backward_w_rows(const T* grad_out, const T* x, const int64_t* colptr,
                                    const int64_t* src, int64_t heads, int64_t channels,
                                    T* grad_w, int64_t begin, int64_t end) {
  const int64_t width = heads * channels;
  const int64_t last = colptr[end] - 1;
  for (int64_t d = begin; d < end; ++d) {
    const T* g = grad_out + d * width;
    for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
      const T* from = x + src[e] * width;
      if (e < last) prefetch_row(x + src[e + 1] * width, width);
      for (int64_t h = 0; h < heads; ++h) {
        grad_w[e * heads + h] = dot(channels, g + h * channels, from + h * channels);
      }
    }
  }
}

PARTITA_CLONES void forward_rows_float(const float* x, const float* w, const int64_t* colptr,
                                       const int64_t* src, int64_t heads, int64_t channels,
                                       float* out, RowLayout layout, int64_t begin, int64_t end) {
  forward_rows(x, w, colptr, src, heads, channels, out, layout, begin, end);
}

PARTITA_CLONES void backward_x_rows_float(const float* grad_out, const float* w,
                                          const int64_t* rowptr, const int64_t* out_edges,
                                          const int64_t* dst, int64_t num_edges, int64_t heads,
                                          int64_t channels, RowLayout layout, int64_t num_self,
                                          const float* gate, float gate_scale, float* grad_x,
                                          int64_t begin, int64_t end) {
  backward_x_rows(grad_out, w, rowptr, out_edges, dst, num_edges, heads, channels, layout,
                  num_self, gate, gate_scale, grad_x, begin, end);
}

PARTITA_CLONES void backward_w_rows_float(const float* grad_out, const float* x,
                                          const int64_t* colptr, const int64_t* src,
                                          int64_t heads, int64_t channels, float* grad_w,
                                          int64_t begin, int64_t end) {
  backward_w_rows(grad_out, x, colptr, src, heads, channels, grad_w, begin, end);
}

template <typename T>
void csc_forward(const T* x, const T* w, const int64_t* colptr, const int64_t* src,
                 int64_t num_dst, int64_t heads, int64_t channels, T* out, RowLayout layout) {
  at::parallel_for(0, num_dst, grain_rows(num_dst, colptr[num_dst], heads * channels),
                   [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      forward_rows_float(x, w, colptr, src, heads, channels, out, layout, begin, end);
    } else {
      forward_rows(x, w, colptr, src, heads, channels, out, layout, begin, end);
    }
  });
}

template <typename T>
void csc_backward_x(const T* grad_out, const T* w, const int64_t* rowptr,
                    const int64_t* out_edges, const int64_t* dst, int64_t num_edges,
                    int64_t num_src, int64_t heads, int64_t channels, RowLayout layout,
                    int64_t num_self, const T* gate, T gate_scale, T* grad_x) {
  at::parallel_for(0, num_src, grain_rows(num_src, num_edges, heads * channels),
                   [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      backward_x_rows_float(grad_out, w, rowptr, out_edges, dst, num_edges, heads, channels,
                            layout, num_self, gate, gate_scale, grad_x, begin, end);
    } else {
      backward_x_rows(grad_out, w, rowptr, out_edges, dst, num_edges, heads, channels, layout,
                      num_self, gate, gate_scale, grad_x, begin, end);
    }
  });
}

template <typename T>
void csc_backward_w(const T* grad_out, const T* x, const int64_t* colptr, const int64_t* src,
                    int64_t num_dst, int64_t heads, int64_t channels, T* grad_w) {
  at::parallel_for(0, num_dst, grain_rows(num_dst, colptr[num_dst], heads * channels),
                   [&](int64_t begin, int64_t end) {
    if constexpr (std::is_same_v<T, float>) {
      backward_w_rows_float(grad_out, x, colptr, src, heads, channels, grad_w, begin, end);
    } else {
      backward_w_rows(grad_out, x, colptr, src, heads, channels, grad_w, begin, end);
    }
  });
}

// x is viewed as [N, heads, channels] and the weights as [E_d, heads] throughout.
class CscAggregate : public torch::autograd::Function<CscAggregate> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& colptr, const at::Tensor& src,
                            const at::Tensor& dst, const at::Tensor& rowptr,
                            const at::Tensor& out_edges, int64_t num_dst, int64_t heads) {
    const int64_t channels = x.size(-1);
    at::Tensor out = at::empty({num_dst, heads * channels}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "csc_aggregate", [&] {
      csc_forward(x.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), colptr.data_ptr<int64_t>(),
                  src.data_ptr<int64_t>(), num_dst, heads, channels, out.data_ptr<scalar_t>(),
                  RowLayout{heads * channels});
    });
    ctx->save_for_backward({x, weight, colptr, src, dst, rowptr, out_edges});
    ctx->saved_data["num_dst"] = num_dst;
    ctx->saved_data["heads"] = heads;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &weight = saved[1], &colptr = saved[2], &src = saved[3],
                     &dst = saved[4], &rowptr = saved[5], &out_edges = saved[6];
    const int64_t num_dst = ctx->saved_data["num_dst"].toInt();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const int64_t channels = x.size(-1);
    const at::Tensor grad_out = grad_outputs[0].contiguous();
    at::Tensor grad_x, grad_w;
    if (ctx->needs_input_grad(0)) {
      grad_x = at::empty_like(x);
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "csc_aggregate_backward_x", [&] {
        csc_backward_x(grad_out.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                       rowptr.data_ptr<int64_t>(), out_edges.data_ptr<int64_t>(),
                       dst.data_ptr<int64_t>(), weight.size(0), x.size(0), heads, channels,
                       RowLayout{heads * channels}, 0, static_cast<const scalar_t*>(nullptr), scalar_t(1),
                       grad_x.data_ptr<scalar_t>());
      });
    }
    if (ctx->needs_input_grad(1)) {
      grad_w = at::empty_like(weight);
      AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "csc_aggregate_backward_w", [&] {
        csc_backward_w(grad_out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                       colptr.data_ptr<int64_t>(), src.data_ptr<int64_t>(), num_dst, heads,
                       channels, grad_w.data_ptr<scalar_t>());
      });
    }
    return {grad_x, grad_w, {}, {}, {}, {}, {}, {}, {}};
  }
};

// [aggregation | own row] per destination: GraphSAGE's layer input for one product with
// both weight matrices, from the activated x (activate(x, input)), which it keeps for the
// backward pass's gate. Differentiable in x only (the mean's weights are constants).
class CscAggregateWithSelf : public torch::autograd::Function<CscAggregateWithSelf> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& colptr, const at::Tensor& src,
                            const at::Tensor& dst, const at::Tensor& rowptr,
                            const at::Tensor& out_edges, int64_t num_dst, bool relu, double dropout,
                            int64_t key) {
    const at::Tensor h = activate(x, {relu, dropout, static_cast<uint64_t>(key)}).contiguous();
    const int64_t channels = x.size(1);
    at::Tensor out = at::empty({num_dst, 2 * channels}, x.options());
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "csc_aggregate_with_self", [&] {
      csc_forward(h.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), colptr.data_ptr<int64_t>(),
                  src.data_ptr<int64_t>(), num_dst, 1, channels, out.data_ptr<scalar_t>(),
                  RowLayout{2 * channels, true});
    });
    ctx->save_for_backward({weight, dst, rowptr, out_edges, relu ? h : at::Tensor()});
    ctx->saved_data["num_dst"] = num_dst;
    ctx->saved_data["num_src"] = x.size(0);
    ctx->saved_data["scale"] = dropout > 0 ? 1.0 / (1.0 - dropout) : 1.0;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &weight = saved[0], &dst = saved[1], &rowptr = saved[2], &out_edges = saved[3],
                     &gate = saved[4];
    const int64_t num_dst = ctx->saved_data["num_dst"].toInt();
    const int64_t num_src = ctx->saved_data["num_src"].toInt();
    const double scale = ctx->saved_data["scale"].toDouble();
    const at::Tensor grad_out = grad_outputs[0].contiguous();
    const int64_t channels = grad_out.size(1) / 2;
    at::Tensor grad_x = at::empty({num_src, channels}, grad_out.options());
    AT_DISPATCH_FLOATING_TYPES(grad_out.scalar_type(), "csc_aggregate_with_self_backward", [&] {
      csc_backward_x(grad_out.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                     rowptr.data_ptr<int64_t>(), out_edges.data_ptr<int64_t>(), dst.data_ptr<int64_t>(),
                     weight.size(0), num_src, 1, channels, RowLayout{2 * channels, true}, num_dst,
                     gate.defined() ? gate.data_ptr<scalar_t>() : nullptr, static_cast<scalar_t>(scale),
                     grad_x.data_ptr<scalar_t>());
    });
    return {grad_x, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  }
};

// alpha[e, h] = softmax over d's in-edges of leaky_relu(score_src[src[e], h] + score_dst[d, h]).
template <typename T>
void softmax_forward(const T* score_src, const T* score_dst, const int64_t* colptr,
                     const int64_t* src, int64_t num_dst, int64_t heads, T slope, T* alpha) {
  at::parallel_for(0, num_dst, grain_rows(num_dst, colptr[num_dst], 4 * heads),
                   [&](int64_t begin, int64_t end) {
    std::vector<T> max(heads), sum(heads);
    for (int64_t d = begin; d < end; ++d) {
      const T* to = score_dst + d * heads;
      std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
      std::fill(sum.begin(), sum.end(), T(0));
      for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
        const T* from = score_src + src[e] * heads;
        for (int64_t h = 0; h < heads; ++h) {
          const T z = from[h] + to[h];
          const T logit = z > 0 ? z : slope * z;
          alpha[e * heads + h] = logit;
          max[h] = std::max(max[h], logit);
        }
      }
      for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
        for (int64_t h = 0; h < heads; ++h) {
          const T p = std::exp(alpha[e * heads + h] - max[h]);
          alpha[e * heads + h] = p;
          sum[h] += p;
        }
      }
      for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
        for (int64_t h = 0; h < heads; ++h) alpha[e * heads + h] /= sum[h];
      }
    }
  });
}

// Through the softmax (g_logit = alpha * (g_alpha - sum alpha * g_alpha)) and the leaky
// ReLU, per edge; the destination's score gradient sums its in-edges' here, the source's
// sums its out-edges' over the transpose afterwards.
template <typename T>
void softmax_backward(const T* grad_alpha, const T* alpha, const T* score_src,
                      const T* score_dst, const int64_t* colptr, const int64_t* src,
                      int64_t num_dst, int64_t heads, T slope, T* grad_edge, T* grad_dst) {
  at::parallel_for(0, num_dst, grain_rows(num_dst, colptr[num_dst], 4 * heads),
                   [&](int64_t begin, int64_t end) {
    std::vector<T> inner(heads);
    for (int64_t d = begin; d < end; ++d) {
      const T* to = score_dst + d * heads;
      std::fill(inner.begin(), inner.end(), T(0));
      for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
        for (int64_t h = 0; h < heads; ++h) inner[h] += alpha[e * heads + h] * grad_alpha[e * heads + h];
      }
      T* grad_to = grad_dst + d * heads;
      std::fill(grad_to, grad_to + heads, T(0));
      for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
        const T* from = score_src + src[e] * heads;
        for (int64_t h = 0; h < heads; ++h) {
          const int64_t i = e * heads + h;
          const T grad_logit = alpha[i] * (grad_alpha[i] - inner[h]);
          const T g = from[h] + to[h] > 0 ? grad_logit : slope * grad_logit;
          grad_edge[i] = g;
          grad_to[h] += g;
        }
      }
    }
  });
}

template <typename T>
void sum_out_edges(const T* grad_edge, const int64_t* rowptr, const int64_t* out_edges,
                   int64_t num_edges, int64_t num_src, int64_t heads, T* grad_src) {
  at::parallel_for(0, num_src, grain_rows(num_src, num_edges, heads), [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      T* row = grad_src + s * heads;
      std::fill(row, row + heads, T(0));
      for (int64_t k = rowptr[s]; k < rowptr[s + 1] && out_edges[k] < num_edges; ++k) {
        const T* g = grad_edge + out_edges[k] * heads;
        for (int64_t h = 0; h < heads; ++h) row[h] += g[h];
      }
    }
  });
}

class CscAttentionSoftmax : public torch::autograd::Function<CscAttentionSoftmax> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& score_src,
                            const at::Tensor& score_dst, const at::Tensor& colptr,
                            const at::Tensor& src, const at::Tensor& rowptr,
                            const at::Tensor& out_edges, int64_t num_dst, double slope) {
    const int64_t heads = score_src.size(1);
    const int64_t num_edges = colptr.data_ptr<int64_t>()[num_dst];
    at::Tensor alpha = at::empty({num_edges, heads}, score_src.options());
    AT_DISPATCH_FLOATING_TYPES(score_src.scalar_type(), "csc_attention_softmax", [&] {
      softmax_forward(score_src.data_ptr<scalar_t>(), score_dst.data_ptr<scalar_t>(),
                      colptr.data_ptr<int64_t>(), src.data_ptr<int64_t>(), num_dst, heads,
                      static_cast<scalar_t>(slope), alpha.data_ptr<scalar_t>());
    });
    ctx->save_for_backward({score_src, score_dst, colptr, src, rowptr, out_edges, alpha});
    ctx->saved_data["num_dst"] = num_dst;
    ctx->saved_data["slope"] = slope;
    return alpha;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &score_src = saved[0], &score_dst = saved[1], &colptr = saved[2],
                     &src = saved[3], &rowptr = saved[4], &out_edges = saved[5], &alpha = saved[6];
    const int64_t num_dst = ctx->saved_data["num_dst"].toInt();
    const double slope = ctx->saved_data["slope"].toDouble();
    const int64_t heads = score_src.size(1);
    const at::Tensor grad_alpha = grad_outputs[0].contiguous();
    at::Tensor grad_edge = at::empty_like(alpha);
    at::Tensor grad_dst = at::zeros_like(score_dst);
    at::Tensor grad_src = at::empty_like(score_src);
    AT_DISPATCH_FLOATING_TYPES(score_src.scalar_type(), "csc_attention_softmax_backward", [&] {
      softmax_backward(grad_alpha.data_ptr<scalar_t>(), alpha.data_ptr<scalar_t>(),
                       score_src.data_ptr<scalar_t>(), score_dst.data_ptr<scalar_t>(),
                       colptr.data_ptr<int64_t>(), src.data_ptr<int64_t>(), num_dst, heads,
                       static_cast<scalar_t>(slope), grad_edge.data_ptr<scalar_t>(),
                       grad_dst.data_ptr<scalar_t>());
      sum_out_edges(grad_edge.data_ptr<scalar_t>(), rowptr.data_ptr<int64_t>(),
                    out_edges.data_ptr<int64_t>(), alpha.size(0), score_src.size(0), heads,
                    grad_src.data_ptr<scalar_t>());
    });
    return {grad_src, grad_dst, {}, {}, {}, {}, {}, {}};
  }
};

// max[d, h] = the largest values[e, h] over d's in-edges e (0 for a destination without).
at::Tensor segment_max(const at::Tensor& values, const CscEdges& edges, int64_t num_dst) {
  const int64_t heads = values.size(1);
  at::Tensor max = at::zeros({num_dst, heads}, values.options());
  const int64_t* colptr = edges.colptr.data_ptr<int64_t>();
  AT_DISPATCH_FLOATING_TYPES(values.scalar_type(), "segment_max", [&] {
    const scalar_t* v = values.data_ptr<scalar_t>();
    scalar_t* m = max.data_ptr<scalar_t>();
    for (int64_t d = 0; d < num_dst; ++d) {
      for (int64_t e = colptr[d]; e < colptr[d + 1]; ++e) {
        for (int64_t h = 0; h < heads; ++h) {
          const scalar_t x = v[e * heads + h];
          m[d * heads + h] = e == colptr[d] ? x : std::max(m[d * heads + h], x);
        }
      }
    }
  });
  return max;
}

std::string shape_text(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// Throws Error unless every source among the first num_edges edges is below num_src.
void check_sources(const CscEdges& edges, int64_t num_edges, int64_t num_src, const char* what) {
  const int64_t* src = edges.src.data_ptr<int64_t>();
  const int64_t max_src = num_edges == 0 ? -1 : *std::max_element(src, src + num_edges);
  if (max_src >= num_src) {
    throw Error(std::string(what) + ": an edge's source " + std::to_string(max_src) +
                " is beyond the " + std::to_string(num_src) + " input rows");
  }
}

void check_destinations(const CscEdges& edges, int64_t num_dst, const char* what) {
  if (num_dst < 0 || num_dst > edges.num_nodes) {
    throw Error(std::string(what) + ": " + std::to_string(num_dst) +
                " destinations asked of a graph of " + std::to_string(edges.num_nodes) + " nodes");
  }
}

}  // namespace

at::Tensor aggregate(const at::Tensor& x, const at::Tensor& weight, const CscEdges& edges,
                     int64_t num_dst, AggregatePath path) {
  check_destinations(edges, num_dst, "aggregate");
  const int64_t num_edges = edges.edges_before(num_dst);
  const bool per_head = x.dim() == 3;
  const int64_t heads = per_head ? x.size(1) : 1;
  const bool shapes_agree =
      (x.dim() == 2 || x.dim() == 3) && weight.dim() == (per_head ? 2 : 1) &&
      weight.size(0) == num_edges && (!per_head || weight.size(1) == heads) &&
      weight.scalar_type() == x.scalar_type();
  if (!shapes_agree) {
    throw Error("aggregate: features " + shape_text(x) + " and edge weights " +
                shape_text(weight) + " do not fit " + std::to_string(num_edges) +
                " edges (features [N, C] with weights [E], or [N, H, C] with [E, H])");
  }
  check_sources(edges, num_edges, x.size(0), "aggregate");

  if (path == AggregatePath::kIndexAdd) {
    const at::Tensor src = edges.src.narrow(0, 0, num_edges);
    const at::Tensor dst = edges.dst.narrow(0, 0, num_edges);
    const at::Tensor messages = x.index_select(0, src) * weight.unsqueeze(-1);
    std::vector<int64_t> shape = x.sizes().vec();
    shape[0] = num_dst;
    return at::zeros(shape, x.options()).index_add(0, dst, messages);
  }
  at::Tensor out = CscAggregate::apply(x.contiguous(), weight.contiguous(), edges.colptr,
                                       edges.src, edges.dst, edges.rowptr, edges.out_edges,
                                       num_dst, heads);
  return per_head ? out.view({num_dst, heads, x.size(2)}) : out;
}

at::Tensor aggregate_with_self(const at::Tensor& x, const at::Tensor& weight, const CscEdges& edges,
                               int64_t num_dst, AggregatePath path, const Activation& input) {
  check_destinations(edges, num_dst, "aggregate_with_self");
  const int64_t num_edges = edges.edges_before(num_dst);
  if (x.dim() != 2 || x.size(0) < num_dst || weight.dim() != 1 || weight.size(0) != num_edges ||
      weight.scalar_type() != x.scalar_type()) {
    throw Error("aggregate_with_self: features " + shape_text(x) + " and edge weights " + shape_text(weight) +
                " do not fit " + std::to_string(num_edges) + " edges into " + std::to_string(num_dst) +
                " rows (features [N >= rows, C] with weights [E])");
  }
  check_sources(edges, num_edges, x.size(0), "aggregate_with_self");
  if (path == AggregatePath::kIndexAdd) {
    const at::Tensor h = activate(x, input);
    return at::cat({aggregate(h, weight, edges, num_dst, path), h.narrow(0, 0, num_dst)}, 1);
  }
  // IValue holds signed integers; the cast round-trips the key's bits.
  return CscAggregateWithSelf::apply(x.contiguous(), weight.detach().contiguous(), edges.colptr, edges.src,
                                     edges.dst, edges.rowptr, edges.out_edges, num_dst, input.relu,
                                     input.dropout, static_cast<int64_t>(input.key));
}

at::Tensor attention_softmax(const at::Tensor& score_src, const at::Tensor& score_dst,
                             const CscEdges& edges, int64_t num_dst, double negative_slope,
                             AggregatePath path) {
  check_destinations(edges, num_dst, "attention_softmax");
  const bool shapes_agree = score_src.dim() == 2 && score_dst.dim() == 2 &&
                            score_src.size(1) == score_dst.size(1) &&
                            score_dst.size(0) >= num_dst &&
                            score_src.scalar_type() == score_dst.scalar_type();
  if (!shapes_agree) {
    throw Error("attention_softmax: scores " + shape_text(score_src) + " and " +
                shape_text(score_dst) + " are not [N, H] and [>= " + std::to_string(num_dst) +
                ", H]");
  }
  const int64_t num_edges = edges.edges_before(num_dst);
  check_sources(edges, num_edges, score_src.size(0), "attention_softmax");

  if (path == AggregatePath::kIndexAdd) {
    const int64_t heads = score_src.size(1);
    const at::Tensor src = edges.src.narrow(0, 0, num_edges);
    const at::Tensor dst = edges.dst.narrow(0, 0, num_edges);
    const at::Tensor logits = at::leaky_relu(
        score_src.index_select(0, src) + score_dst.index_select(0, dst), negative_slope);
    // The maximum only keeps exp() in range; the softmax does not depend on it, so it is
    // computed outside autograd (and without scatter_reduce, which warns that it is beta).
    const at::Tensor max = segment_max(logits.detach().contiguous(), edges, num_dst);
    const at::Tensor exp = (logits - max.index_select(0, dst)).exp();
    const at::Tensor sum = at::zeros({num_dst, heads}, logits.options()).index_add(0, dst, exp);
    return exp / sum.index_select(0, dst);
  }
  return CscAttentionSoftmax::apply(score_src.contiguous(), score_dst.contiguous(), edges.colptr,
                                    edges.src, edges.rowptr, edges.out_edges, num_dst,
                                    negative_slope);
}

}  // namespace partita
