// Ranking metrics of link prediction: each query (h, r, ?) or (?, r, t) ranks its true
// answer among candidate entities by score; MRR and Hits@1/3/10 summarise the ranks.
//   raw       every candidate counts;
//   filtered  candidates that are other true answers of the query (true triples of the
//             train, valid or test split) are dropped first (Bordes et al.), so a model is
//             not punished for ranking one true answer above another.
// Ties get the mean of the optimistic and pessimistic rank: 1 + greater + equal / 2 (as
// LibKGE), so a model that scores everything alike ranks in the middle, not first.
//
// The candidates come in blocks (RankAccumulator::add_block), so that a query set can be
// ranked against a table no process holds whole: each block is one GEMM of the queries
// against a slice of the table, streamed from its owner; a query's counts are summed over
// the blocks, and its true answer and filtered entities are recognised in whichever block
// holds them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "base/span.h"

namespace partita {

// Sums over queries; mean() divides by count. Hits@k: rank <= k.
struct RankSums {
  double count = 0;
  double reciprocal_rank = 0;
  double hits1 = 0, hits3 = 0, hits10 = 0;

  void add_rank(double rank);
  RankSums& operator+=(const RankSums& other);
  double mrr() const { return count > 0 ? reciprocal_rank / count : 0; }
  double hits(int k) const;
};

class RankAccumulator {
 public:
  // Q queries: `true_scores` [Q] (each query's score of its true answer), `answers` [Q]
  // (the true answer's entity id), and the filter as CSR: filter_ids[filter_offsets[q],
  // filter_offsets[q + 1]) are the other true answers of query q, sorted, not containing
  // answers[q]. Empty filter_offsets: raw ranks only.
  RankAccumulator(const at::Tensor& true_scores, std::vector<int64_t> answers, std::vector<int64_t> filter_offsets,
                  std::vector<int64_t> filter_ids);

  // Scores of queries [first, first + q) against one block of candidates: scores [q, B]
  // float, column c the candidate candidates[c]; `candidates` sorted, unique. A query's
  // true answer, if in the block, is not its own competitor.
  void add_block(const at::Tensor& scores, int64_t first, Span<const int64_t> candidates);

  // After every block: the raw and filtered rank sums.
  RankSums raw() const;
  RankSums filtered() const;
  // Query q's ranks (for tests).
  double raw_rank(int64_t q) const;
  double filtered_rank(int64_t q) const;

 private:
  at::Tensor true_scores_;
  std::vector<int64_t> answers_;
  std::vector<int64_t> filter_offsets_, filter_ids_;
  std::vector<int64_t> greater_, equal_;                    // raw counts
  std::vector<int64_t> filtered_greater_, filtered_equal_;  // of the filtered entities
};

}  // namespace partita
