// Ranking held-out triples against entities whose rows live with their owners: the one
// evaluation of every knowledge-graph job, whatever gives an entity its row. With encoder:
// none the rows are the learnt embeddings (training/kg_trainer.h); with a GNN encoder they
// are the encoder's output per entity, computed once per evaluation by the trainers of its
// partition and written to that partition's table (training/gnn_link_trainer.h). Either way no
// process holds the whole table: the candidates are streamed from their owners a block at a
// time, and each block is one GEMM of the queries against it (models/kg_ranking.h counts
// the ranks).
//
// A trainer ranks its share of a split's triples both ways: queries 0..n-1 predict the
// tail of (h, r, ?), n..2n-1 the head of (?, r, t) (with reciprocal relations, as the tail
// of (t, r + R, ?)); the filter of each query is every other true answer of train, valid
// and test (KgTriples::true_tails / true_heads).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "embeddings/kg_triples.h"
#include "graph/partition_book.h"
#include "models/kg_decoder.h"

namespace partita {

// Where the entity rows come from.
struct EntityRows {
  int64_t dim = 0;
  // The rows of `ids` (sorted, unique global ids) into out[i * dim, ...).
  std::function<void(const std::vector<int64_t>& ids, float* out)> read;
  // Rows [first, last) of partition `part`'s global ids into out (every entity, in blocks).
  std::function<void(int part, int64_t first, int64_t last, float* out)> read_range;
};

struct TripleRanking {
  KgDecoder decoder = KgDecoder::kDistMult;
  // The decoder's relation rows [R, dim] (or [2R, dim] with reciprocal: rows R.. are the
  // inverses that predict heads as tails); undefined for the dot product.
  at::Tensor relations;
  int32_t num_relations = 1;
  bool reciprocal = false;
  int64_t query_batch = 1024;  // queries per GEMM
  int64_t block = 4096;        // candidates per streamed block
};

// `ids` as a tensor (int64), and the positions of `values` in the sorted, unique `ids`:
// how rows read for `ids` are picked for `values` (index_select).
at::Tensor ids_tensor(const std::vector<int64_t>& ids);
at::Tensor positions_in(const std::vector<int64_t>& ids, const std::vector<int64_t>& values);

// The kRankingSums sums (training/link_metrics.h) of ranking `triples` both ways against
// every entity of `book` (empty `sampled`), or against the entities `sampled` (sorted,
// unique global ids) shared by every query. Throws Error from the reads.
std::vector<double> rank_triples(const KgTriples& kg, const TripleList& triples, const TripleRanking& how,
                                 const EntityRows& rows, const PartitionBook& book, const std::vector<int64_t>& sampled);

}  // namespace partita
