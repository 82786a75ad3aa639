// Knowledge-graph decoders: the score of a triple (head, relation, tail) from the entity
// and relation embeddings, as DistMult, ComplEx and TransE define it.
//
// Every decoder is written as a query against candidates, so that scoring a query against
// many candidate entities is one GEMM (or, for TransE L1, one distance kernel) rather than
// one product per pair. Predicting the tail of (h, r, ?) uses the query q = q_tail(h, r);
// predicting the head of (?, r, t) the query q = q_head(r, t); then, for either side,
// score(q, e) is
//   Dot        <q, e>                         q_tail = h, q_head = t (no relation: the
//                                             decoder of homogeneous GNN link prediction)
//   DistMult   <q, e>                         q_tail = h * r, q_head = r * t
//   ComplEx    Re<q, conj(e)> = <q, e> on the  q_tail = h * r, q_head = conj(r) * t
//              [real | imaginary] halves       (complex products on the halves)
//   TransE     -||q - e||_p (p = 1 or 2)       q_tail = h + r, q_head = t - r
// so score(q_tail(h, r), t) = score(q_head(r, t), h) = the triple's score (tested). ComplEx
// embeddings hold the real parts in their first half and the imaginary parts in the
// second (LibKGE's layout), so dim must be even.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace partita {

enum class KgDecoder { kDot, kDistMult, kComplEx, kTransEL1, kTransEL2 };

// "dot", "distmult", "complex", "transe" (with norm 1 or 2). Throws UsageError naming `field`.
KgDecoder parse_kg_decoder(const std::string& name, int transe_norm, const std::string& field);
std::string kg_decoder_name(KgDecoder decoder);
// Throws UsageError naming `field` when `dim` does not suit the decoder (ComplEx: odd).
void check_kg_dim(KgDecoder decoder, int64_t dim, const std::string& field);

// Which end of a triple the candidates replace.
enum class KgSide { kHead, kTail };

// The query for predicting `side` from the other end `anchor` [n, d] and the relations
// `relation` [n, d] (row i with row i).
at::Tensor kg_query(KgDecoder decoder, KgSide side, const at::Tensor& anchor, const at::Tensor& relation);

// score(q_i, e_i) for matching rows: [n, d] x [n, d] -> [n].
at::Tensor kg_score_pairs(KgDecoder decoder, const at::Tensor& query, const at::Tensor& entity);

// Every query of a group against every candidate of that group: query [g, m, d],
// candidates [g, k, d] -> [g, m, k] (a batched GEMM; g = 1 scores against one shared set).
at::Tensor kg_score_groups(KgDecoder decoder, const at::Tensor& query, const at::Tensor& candidates);

}  // namespace partita
