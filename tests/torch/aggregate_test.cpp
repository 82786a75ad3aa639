// The CSC aggregation and attention kernels against the index_add_ reference and against
// finite differences, in double precision.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/random.h"
#include "models/aggregate.h"
#include "models/torch_runtime.h"

namespace partita {
namespace {

// A random graph whose sources are all below num_src, as a trimmed layer's input.
CscEdges random_edges(int64_t num_nodes, int64_t num_src, int64_t num_edges, uint64_t seed) {
  Rng rng(seed);
  std::vector<int64_t> src(num_edges), dst(num_edges);
  for (int64_t e = 0; e < num_edges; ++e) {
    src[e] = static_cast<int64_t>(rng.below(num_src));
    dst[e] = static_cast<int64_t>(rng.below(num_nodes));
  }
  return make_csc(num_nodes, src, dst);
}

at::Tensor random_tensor(at::IntArrayRef shape, uint64_t seed) {
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(shape, generator, at::dtype(at::kDouble)).requires_grad_(true);
}

struct Result {
  at::Tensor out, grad_a, grad_b;
};

// Runs f(a, b), backpropagates a fixed random cotangent, returns output and gradients.
Result run(const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& f,
           const at::Tensor& a, const at::Tensor& b) {
  at::Tensor a_leaf = a.detach().clone().requires_grad_(true);
  at::Tensor b_leaf = b.detach().clone().requires_grad_(true);
  at::Tensor out = f(a_leaf, b_leaf);
  at::Tensor cotangent = random_tensor(out.sizes(), 99).detach();
  (out * cotangent).sum().backward();
  return {out.detach(), a_leaf.grad(), b_leaf.grad()};
}

void expect_close(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined() && b.defined()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(at::allclose(a, b, 1e-10, 1e-12)) << what << ": max difference "
                                                << (a - b).abs().max().item<double>();
}

TEST(AggregateTest, CscPathEqualsIndexAddPathWithGradients) {
  const int64_t n = 60, num_dst = 23;
  for (int64_t heads : {1, 3}) {
    for (int64_t rows : {n, num_dst}) {  // untrimmed, and a trimmed layer
      // A trimmed layer reads at most the next hop's rows: here, sources below 41.
      const int64_t num_src = rows == n ? n : 41;
      CscEdges edges = random_edges(n, num_src, 400, 5 + heads);
      const int64_t e = edges.edges_before(rows);
      at::Tensor x = heads == 1 ? random_tensor({num_src, 7}, 1)
                                : random_tensor({num_src, heads, 7}, 1);
      at::Tensor w = heads == 1 ? random_tensor({e}, 2) : random_tensor({e, heads}, 2);
      auto with = [&](AggregatePath path) {
        return run([&](const at::Tensor& a, const at::Tensor& b) {
          return aggregate(a, b, edges, rows, path);
        }, x, w);
      };
      Result csc = with(AggregatePath::kCsc), reference = with(AggregatePath::kIndexAdd);
      const std::string what = "heads " + std::to_string(heads) + ", rows " + std::to_string(rows);
      expect_close(csc.out, reference.out, what + ": output");
      expect_close(csc.grad_a, reference.grad_a, what + ": gradient of x");
      expect_close(csc.grad_b, reference.grad_b, what + ": gradient of the weights");
    }
  }
}

TEST(AggregateTest, WithSelfIsTheAggregationBesideTheOwnRows) {
  const int64_t n = 60;
  const std::vector<Activation> activations{{}, {true, 0, 0}, {true, 0.3, 5}};
  for (int64_t rows : {n, int64_t{23}}) {  // untrimmed, and a trimmed layer
    for (size_t a = 0; a < activations.size(); ++a) {
      const int64_t num_src = rows == n ? n : 41;
      CscEdges edges = random_edges(n, num_src, 400, 9);
      at::Tensor x = random_tensor({num_src, 7}, 1);
      at::Tensor w = random_tensor({edges.edges_before(rows)}, 2);
      auto with = [&](AggregatePath path) {
        return run([&](const at::Tensor& l, const at::Tensor& r) {
          return aggregate_with_self(l, r, edges, rows, path, activations[a]);
        }, x, w);
      };
      Result csc = with(AggregatePath::kCsc), reference = with(AggregatePath::kIndexAdd);
      const std::string what = "rows " + std::to_string(rows) + ", activation " + std::to_string(a);
      expect_close(csc.out, reference.out, what + ": output");
      expect_close(csc.out.narrow(1, 7, 7), activate(x.detach(), activations[a]).narrow(0, 0, rows),
                   what + ": own rows");
      expect_close(csc.grad_a, reference.grad_a, what + ": gradient of x");
    }
  }
  EXPECT_THROW(aggregate_with_self(at::ones({10, 4}), at::ones({3}), random_edges(20, 10, 30, 1), 20), Error);
}

TEST(AggregateTest, AttentionCscPathEqualsIndexPathWithGradients) {
  const int64_t n = 50;
  for (int64_t rows : {n, int64_t{19}}) {
    CscEdges edges = random_edges(n, rows == n ? n : 37, 300, 11);
    at::Tensor score_src = random_tensor({rows == n ? n : 37, 4}, 3);
    at::Tensor score_dst = random_tensor({rows, 4}, 4);
    auto with = [&](AggregatePath path) {
      return run([&](const at::Tensor& a, const at::Tensor& b) {
        return attention_softmax(a, b, edges, rows, 0.2, path);
      }, score_src, score_dst);
    };
    Result csc = with(AggregatePath::kCsc), reference = with(AggregatePath::kIndexAdd);
    const std::string what = "rows " + std::to_string(rows);
    expect_close(csc.out, reference.out, what + ": attention");
    expect_close(csc.grad_a, reference.grad_a, what + ": gradient of the source scores");
    expect_close(csc.grad_b, reference.grad_b, what + ": gradient of the destination scores");
  }
}

// Central differences of sum(f(a, b) * cotangent) against the analytic gradients.
void expect_gradients_match_finite_differences(
    const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& f,
    const at::Tensor& a, const at::Tensor& b) {
  Result analytic = run(f, a, b);
  at::Tensor cotangent = random_tensor(analytic.out.sizes(), 99).detach();
  auto objective = [&](const at::Tensor& x, const at::Tensor& y) {
    return (f(x, y) * cotangent).sum().item<double>();
  };
  const double eps = 1e-6;
  for (int which = 0; which < 2; ++which) {
    at::Tensor input = (which == 0 ? a : b).detach().clone();
    at::Tensor flat = input.view({-1});
    const at::Tensor& expected = which == 0 ? analytic.grad_a : analytic.grad_b;
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double saved = flat[i].item<double>();
      flat[i] = saved + eps;
      const double up = which == 0 ? objective(input, b.detach()) : objective(a.detach(), input);
      flat[i] = saved - eps;
      const double down = which == 0 ? objective(input, b.detach()) : objective(a.detach(), input);
      flat[i] = saved;
      EXPECT_NEAR(expected.view({-1})[i].item<double>(), (up - down) / (2 * eps), 1e-7)
          << (which == 0 ? "first" : "second") << " input, element " << i;
    }
  }
}

TEST(AggregateTest, CscGradientsMatchFiniteDifferences) {
  CscEdges edges = random_edges(8, 8, 20, 3);
  const int64_t rows = 6, e = edges.edges_before(rows);
  expect_gradients_match_finite_differences(
      [&](const at::Tensor& x, const at::Tensor& w) { return aggregate(x, w, edges, rows); },
      random_tensor({8, 2, 3}, 1), random_tensor({e, 2}, 2));
  expect_gradients_match_finite_differences(
      [&](const at::Tensor& s, const at::Tensor& d) { return attention_softmax(s, d, edges, rows, 0.2); },
      random_tensor({8, 2}, 3), random_tensor({rows, 2}, 4));
}

TEST(AggregateTest, ResultsDoNotDependOnTheThreadCount) {
  CscEdges edges = random_edges(3000, 3000, 40000, 8);
  at::Tensor x = random_tensor({3000, 32}, 1).to(at::kFloat);
  at::Tensor w = random_tensor({edges.num_edges()}, 2).to(at::kFloat);
  auto once = [&] {
    return run([&](const at::Tensor& a, const at::Tensor& b) { return aggregate(a, b, edges, 3000); }, x, w);
  };
  // libtorch's own pool, which the kernels split their rows over (set_torch_threads keeps
  // it at one thread, but a host application may not).
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  Result one = once();
  at::set_num_threads(2);
  Result two = once();
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one.out, two.out));
  EXPECT_TRUE(at::equal(one.grad_a, two.grad_a));
  EXPECT_TRUE(at::equal(one.grad_b, two.grad_b));
}

TEST(AggregateTest, MisshapenInputsAreRejected) {
  CscEdges edges = random_edges(10, 10, 30, 1);
  at::Tensor x = at::ones({10, 4});
  at::Tensor w = at::ones({edges.num_edges()});
  EXPECT_THROW(aggregate(x, at::ones({3}), edges, 10), Error);
  EXPECT_THROW(aggregate(x, w.to(at::kDouble), edges, 10), Error);
  EXPECT_THROW(aggregate(x, w, edges, 11), Error);
  // Fewer input rows than the edges' sources reach.
  try {
    aggregate(x.narrow(0, 0, 5), w, edges, 10);
    ADD_FAILURE() << "no error for sources beyond the input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beyond the 5 input rows"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attention_softmax(at::ones({10, 2}), at::ones({10, 3}), edges, 10, 0.2), Error);
}

}  // namespace
}  // namespace partita
