// Stochastic block model with a homophily knob and class-dependent features: the smallest
// graph on which a GNN must beat an MLP, so training can be checked for learning anything.
#include <cmath>
#include <string>

#include "base/progress.h"
#include "partitioner/generator_util.h"
#include "partitioner/generators.h"
#include "partitioner/splits.h"

namespace partita {

namespace {

using gen::require;

constexpr int64_t kPairChunk = int64_t{1} << 15;

void check_options(const SbmOptions& o) {
  require(o.num_classes >= 2, "--classes",
          "must be at least 2 (got " + std::to_string(o.num_classes) + ")");
  // Every class needs two members, so an intra-class edge has somewhere to go but a loop.
  require(o.num_nodes >= 2 * o.num_classes, "--nodes",
          "must be at least 2 * classes = " + std::to_string(2 * o.num_classes) + " (got " +
              std::to_string(o.num_nodes) + ")");
  require(o.avg_degree > 0 && std::isfinite(o.avg_degree), "--avg-degree",
          "must be above 0 (got " + std::to_string(o.avg_degree) + ")");
  require(o.homophily >= 0 && o.homophily <= 1, "--homophily",
          "must be in [0, 1] (got " + std::to_string(o.homophily) + ")");
  require(o.feature_dim >= 0, "--features", "must not be negative");
  require(o.noise >= 0 && std::isfinite(o.noise), "--noise", "must not be negative");
  gen::check_threads(o.threads);
  check_split_options(o.split, o.num_nodes);
}

}  // namespace

Dataset generate_sbm(const SbmOptions& options) {
  check_options(options);
  const int64_t n = options.num_nodes;
  const double expected_pairs = static_cast<double>(n) * options.avg_degree / 2;
  require(expected_pairs < 0x1.0p61, "--avg-degree", "nodes * avg-degree is too large");
  const int64_t pairs = std::llround(expected_pairs);

  Dataset d;
  d.name = "sbm";
  d.num_nodes = n;
  d.num_classes = options.num_classes;
  const gen::BalancedClasses classes(n, options.num_classes,
                                     mix64(options.seed, gen::kPermutationStream));
  d.y = classes.labels();

  // Each undirected pair is stored as two directed edges next to each other (2p, 2p + 1), so
  // a chunk of pairs owns a contiguous range of the output.
  d.edges.src.resize(static_cast<size_t>(2 * pairs));
  d.edges.dst.resize(static_cast<size_t>(2 * pairs));
  int64_t* src_out = d.edges.src.data();
  int64_t* dst_out = d.edges.dst.data();
  Progress progress("sbm", 2 * pairs, "edges");
  gen::for_each_chunk(pairs, kPairChunk, options.threads, [&](int64_t chunk, int64_t begin,
                                                              int64_t end) {
    Rng rng(mix64(options.seed, gen::kEdgeStream, static_cast<uint64_t>(chunk)));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t u = static_cast<int64_t>(rng.below(static_cast<uint64_t>(n)));
      const int64_t v = rng.uniform() < options.homophily
                            ? classes.classmate(u, rng)
                            : classes.outsider(classes.class_of(u), rng);
      src_out[2 * p] = u;
      dst_out[2 * p] = v;
      src_out[2 * p + 1] = v;
      dst_out[2 * p + 1] = u;
    }
    progress.advance(2 * (end - begin));
  });
  progress.done();

  d.feature_dim = options.feature_dim;
  d.x = gen::class_features(d.y, options.num_classes, options.feature_dim, options.noise,
                            mix64(options.seed, gen::kFeatureStream), options.threads);

  assign_random_split(d, n, options.split, mix64(options.seed, gen::kSplitStream));
  d.validate();
  return d;
}

}  // namespace partita
