// Building blocks shared by the synthetic generators (rmat.cpp, sbm.cpp, hetero.cpp); not a
// public interface.
//
// Determinism: work is cut into chunks whose boundaries depend only on the problem size,
// never on the thread count, and chunk k draws from its own stream Rng(mix64(seed, what, k)),
// where `what` tells the generator's streams apart. Threads only decide which chunks run
// where, so the output is the same bit for bit with 1 thread or 64.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/parallel.h"
#include "base/random.h"

namespace partita::gen {

// Stream ids: the second key of mix64(seed, stream, ...), one per independent random choice.
enum Stream : uint64_t {
  kEdgeStream = 1,
  kPermutationStream,
  kFeatureStream,
  kClassMeanStream,
  kLabelStream,
  kSplitStream,
  kAuthorCountStream,
  kCitationCountStream,
};

// Calls fn(chunk, begin, end) for every chunk [begin, end) of [0, num_items) cut every
// chunk_size items, spread over `threads` threads (0 = all cores), all joined on return.
template <typename Fn>
void for_each_chunk(int64_t num_items, int64_t chunk_size, int threads, Fn fn) {
  const int64_t num_chunks = (num_items + chunk_size - 1) / chunk_size;
  parallel_for(num_chunks, threads, [&](int64_t first, int64_t last) {
    for (int64_t chunk = first; chunk < last; ++chunk) {
      int64_t begin = chunk * chunk_size;
      fn(chunk, begin, std::min(num_items, begin + chunk_size));
    }
  });
}

// A uniform double in [0, 1) from a hash value, for counter-based draws outside any stream.
inline double unit_interval(uint64_t hash) { return static_cast<double>(hash >> 11) * 0x1.0p-53; }

// Throws UsageError("<flag>: <message>") when `ok` is false.
void require(bool ok, const char* flag, const std::string& message);
// Throws UsageError unless threads >= 0.
void check_threads(int threads);

// A seeded random permutation of 0..n-1 (Fisher-Yates with Rng).
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed);

// Balanced random classes: with a seeded permutation p of the nodes, node p[i] has class
// i % C. Class sizes differ by at most one, and members of a class are p[c], p[c + C], ...,
// which makes "a uniform node of class c" and "a uniform node outside class c" O(1) draws
// without per-class lists.
class BalancedClasses {
 public:
  BalancedClasses(int64_t num_nodes, int64_t num_classes, uint64_t seed);

  int64_t num_classes() const { return num_classes_; }
  int64_t class_of(int64_t node) const { return rank_[node] % num_classes_; }
  int64_t class_size(int64_t c) const {
    return (num_nodes() - c + num_classes_ - 1) / num_classes_;
  }
  // A uniform member of `node`'s class other than `node` itself (needs class size >= 2).
  int64_t classmate(int64_t node, Rng& rng) const;
  // A uniform node of any class but c (needs at least two classes).
  int64_t outsider(int64_t c, Rng& rng) const;
  // The class of every node, as labels.
  std::vector<int64_t> labels() const;

 private:
  int64_t num_nodes() const { return static_cast<int64_t>(order_.size()); }

  int64_t num_classes_;
  std::vector<int64_t> order_;  // p
  std::vector<int64_t> rank_;   // p^-1
};

// Features [rows, dim], every value N(0, 1); generated in parallel straight into the result.
std::vector<float> normal_features(int64_t rows, int64_t dim, uint64_t seed, int threads);

// Class-dependent Gaussian features [labels.size(), dim]: row i is
//   mean[labels[i]] + (noise / 2) * z,  z ~ N(0, I_dim),
// where the class means are random unit vectors. Rows whose label is -1 are zero.
//
// Why this scaling: along any direction the noise has standard deviation noise / 2, whatever
// dim is, against a signal of 1 along the node's class mean; so `noise` alone sets how hard
// the task is (a noise vector of total norm `noise` would instead make a graph with more
// feature dimensions easier, since its noise spreads over more directions). The default
// noise of 2 makes the per-direction noise equal to the signal: one node's features are a
// weak cue to its class and the mean over its (homophilous) neighbourhood a strong one, and
// each coordinate is roughly unit-variance, as a model's inputs should be.
std::vector<float> class_features(const std::vector<int64_t>& labels, int64_t num_classes,
                                  int64_t dim, double noise, uint64_t seed, int threads);

}  // namespace partita::gen
