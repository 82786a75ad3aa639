// R-MAT (Chakrabarti, Zhan, Faloutsos 2004), generated the way Graph500's Kronecker
// generator does: every edge independently, from its own place in a counter-based stream.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/progress.h"
#include "partitioner/generator_util.h"
#include "partitioner/generators.h"
#include "partitioner/splits.h"

namespace partita {

namespace {

using gen::require;

// Edges per chunk: ~1 ms of work, a few hundred chunks for 20M edges.
constexpr int64_t kEdgeChunk = int64_t{1} << 16;
// A sane a, b, c needs a handful of draws per edge; this many means the probabilities put
// (almost) all their mass on self-loops or on ids past num_nodes, and looping would hang.
constexpr int kMaxDrawsPerEdge = 1000;

void check_options(const RmatOptions& o) {
  require(o.num_nodes >= 2, "--nodes",
          "must be at least 2 (got " + std::to_string(o.num_nodes) + ")");
  require(o.avg_degree > 0 && std::isfinite(o.avg_degree), "--avg-degree",
          "must be above 0 (got " + std::to_string(o.avg_degree) + ")");
  require(o.a >= 0 && o.b >= 0 && o.c >= 0, "--a/--b/--c", "probabilities must not be negative");
  require(o.a + o.b + o.c < 1, "--a/--b/--c", "a + b + c must be below 1 (d = 1 - a - b - c)");
  // With b = c = 0 every level picks the same bit for source and destination.
  require(o.b + o.c > 0, "--b/--c", "b + c must be above 0, else every edge is a self-loop");
  require(o.feature_dim >= 0, "--features", "must not be negative");
  require(o.num_classes >= 0, "--classes", "must not be negative");
  gen::check_threads(o.threads);
}

// The quadrant thresholds as 32-bit fixed point: two levels per 64-bit draw, and a
// resolution of 2^-32 is far finer than any a, b, c anyone passes.
struct Quadrants {
  uint64_t a, ab, abc;

  explicit Quadrants(const RmatOptions& o)
      : a(fixed(o.a)), ab(fixed(o.a + o.b)), abc(fixed(o.a + o.b + o.c)) {}
  static uint64_t fixed(double p) { return static_cast<uint64_t>(std::ldexp(p, 32)); }

  // Quadrant a = (0, 0), b = (0, 1), c = (1, 0), d = (1, 1) as (source bit, destination bit).
  void descend(uint64_t r, uint64_t& src, uint64_t& dst) const {
    const uint64_t past_a = r >= a, past_ab = r >= ab, past_abc = r >= abc;
    src = (src << 1) | past_ab;
    dst = (dst << 1) | (past_a ^ past_ab ^ past_abc);
  }
};

// One edge in R-MAT's id space, redrawn from the same stream until it is not a self-loop and
// both ids are below n (ids reach 2^scale - 1 when n is not a power of two).
std::pair<uint64_t, uint64_t> draw_edge(Rng& rng, const Quadrants& quadrants, int scale,
                                        uint64_t n) {
  for (int draw = 0; draw < kMaxDrawsPerEdge; ++draw) {
    uint64_t u = 0, v = 0;
    for (int level = 0; level < scale; level += 2) {
      const uint64_t r = rng.next();
      quadrants.descend(r & 0xFFFFFFFFu, u, v);
      if (level + 1 < scale) quadrants.descend(r >> 32, u, v);
    }
    if (u != v && u < n && v < n) return {u, v};
  }
  throw UsageError("--a/--b/--c: " + std::to_string(kMaxDrawsPerEdge) +
                   " draws gave no edge without a self-loop and with both ids below " +
                   std::to_string(n) + "; the probabilities are too skewed");
}

// Draws `draws` edges in parallel chunks, each from its own stream, into `edges` (sized
// once): draw e at position e, or, undirected, at 2e and its reverse at 2e + 1.
void draw_edges(const RmatOptions& options, int64_t draws, EdgeList& edges) {
  const int64_t n = options.num_nodes;
  int scale = 0;
  while ((int64_t{1} << scale) < n) ++scale;
  const Quadrants quadrants(options);
  // Drawing in R-MAT's id space puts every hub at a small id (node 0 has the most edges);
  // relabelling through a random permutation spreads them, as Graph500 does.
  const std::vector<int64_t> perm =
      gen::random_permutation(n, mix64(options.seed, gen::kPermutationStream));

  const int64_t per_draw = options.undirected ? 2 : 1;
  edges.src.resize(static_cast<size_t>(per_draw * draws));
  edges.dst.resize(static_cast<size_t>(per_draw * draws));
  int64_t* src_out = edges.src.data();
  int64_t* dst_out = edges.dst.data();
  Progress progress("rmat", per_draw * draws, "edges");
  gen::for_each_chunk(draws, kEdgeChunk, options.threads, [&](int64_t chunk, int64_t begin,
                                                              int64_t end) {
    Rng rng(mix64(options.seed, gen::kEdgeStream, static_cast<uint64_t>(chunk)));
    for (int64_t e = begin; e < end; ++e) {
      const auto [u, v] = draw_edge(rng, quadrants, scale, static_cast<uint64_t>(n));
      const int64_t out = per_draw * e;
      src_out[out] = perm[u];
      dst_out[out] = perm[v];
      if (options.undirected) {
        src_out[out + 1] = perm[v];
        dst_out[out + 1] = perm[u];
      }
    }
    progress.advance(per_draw * (end - begin));
  });
  progress.done();
}

}  // namespace

Dataset generate_rmat(const RmatOptions& options) {
  check_options(options);
  const int64_t n = options.num_nodes;
  const double expected_edges = static_cast<double>(n) * options.avg_degree;
  require(expected_edges < 0x1.0p62, "--avg-degree", "nodes * avg-degree is too large");
  // Undirected: half as many draws, each stored in both directions, so --avg-degree still
  // counts directed edges per node (as for the SBM).
  const int64_t draws = std::llround(options.undirected ? expected_edges / 2 : expected_edges);
  if (options.num_classes > 0) check_split_options(options.split, n);

  Dataset d;
  d.name = "rmat";
  d.num_nodes = n;
  draw_edges(options, draws, d.edges);

  if (options.feature_dim > 0) {
    d.feature_dim = options.feature_dim;
    d.x = gen::normal_features(n, options.feature_dim, mix64(options.seed, gen::kFeatureStream),
                               options.threads);
  }
  if (options.num_classes > 0) {
    // Random labels carry no signal: they are there so benchmarks can run the training loop.
    d.num_classes = options.num_classes;
    d.y.resize(static_cast<size_t>(n));
    Rng rng(mix64(options.seed, gen::kLabelStream));
    for (auto& label : d.y) label = static_cast<int64_t>(rng.below(options.num_classes));
    assign_random_split(d, n, options.split, mix64(options.seed, gen::kSplitStream));
  }
  d.validate();
  return d;
}

}  // namespace partita
