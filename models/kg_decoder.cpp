#include "models/kg_decoder.h"

#include <ATen/ATen.h>

#include "base/error.h"

namespace partita {

KgDecoder parse_kg_decoder(const std::string& name, int transe_norm, const std::string& field) {
  if (name == "dot") return KgDecoder::kDot;
  if (name == "distmult") return KgDecoder::kDistMult;
  if (name == "complex") return KgDecoder::kComplEx;
  if (name == "transe") {
    if (transe_norm == 1) return KgDecoder::kTransEL1;
    if (transe_norm == 2) return KgDecoder::kTransEL2;
    throw UsageError(field + ": TransE's norm must be 1 or 2, got " + std::to_string(transe_norm));
  }
  throw UsageError(field + ": '" + name + "' is not one of: dot, distmult, complex, transe");
}

std::string kg_decoder_name(KgDecoder decoder) {
  switch (decoder) {
    case KgDecoder::kDot: return "dot";
    case KgDecoder::kDistMult: return "distmult";
    case KgDecoder::kComplEx: return "complex";
    case KgDecoder::kTransEL1: return "transe-l1";
    case KgDecoder::kTransEL2: return "transe-l2";
  }
  return "?";
}

void check_kg_dim(KgDecoder decoder, int64_t dim, const std::string& field) {
  if (dim < 1) throw UsageError(field + ": must be at least 1, got " + std::to_string(dim));
  if (decoder == KgDecoder::kComplEx && dim % 2 != 0) {
    throw UsageError(field + ": ComplEx needs an even dimension (real and imaginary halves), got " + std::to_string(dim));
  }
}

namespace {

// (a_re + i a_im)(b_re + i b_im), with b conjugated when `conj_b`, on [.., d] halves.
at::Tensor complex_product(const at::Tensor& a, const at::Tensor& b, bool conj_a) {
  const int64_t half = a.size(-1) / 2;
  at::Tensor a_re = a.narrow(-1, 0, half), a_im = a.narrow(-1, half, half);
  at::Tensor b_re = b.narrow(-1, 0, half), b_im = b.narrow(-1, half, half);
  if (conj_a) a_im = -a_im;
  return at::cat({a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re}, -1);
}

}  // namespace

at::Tensor kg_query(KgDecoder decoder, KgSide side, const at::Tensor& anchor, const at::Tensor& relation) {
  switch (decoder) {
    case KgDecoder::kDot: return anchor;
    case KgDecoder::kDistMult: return anchor * relation;
    case KgDecoder::kComplEx:
      // Tail: h r; head: conj(r) t, since Re<h r conj(t)> = Re<conj(r) t conj(h)>.
      return complex_product(relation, anchor, side == KgSide::kHead);
    case KgDecoder::kTransEL1:
    case KgDecoder::kTransEL2: return side == KgSide::kTail ? anchor + relation : anchor - relation;
  }
  throw Error("unknown decoder");
}

at::Tensor kg_score_pairs(KgDecoder decoder, const at::Tensor& query, const at::Tensor& entity) {
  switch (decoder) {
    case KgDecoder::kDot:
    case KgDecoder::kDistMult:
    case KgDecoder::kComplEx: return (query * entity).sum(-1);
    case KgDecoder::kTransEL1: return -(query - entity).abs().sum(-1);
    case KgDecoder::kTransEL2: return -(query - entity).pow(2).sum(-1).clamp_min(1e-12).sqrt();
  }
  throw Error("unknown decoder");
}

at::Tensor kg_score_groups(KgDecoder decoder, const at::Tensor& query, const at::Tensor& candidates) {
  switch (decoder) {
    case KgDecoder::kDot:
    case KgDecoder::kDistMult:
    case KgDecoder::kComplEx: return at::bmm(query, candidates.transpose(1, 2));
    case KgDecoder::kTransEL1: return -at::cdist(query, candidates, 1.0);
    case KgDecoder::kTransEL2: {
      // ||q - e||^2 = |q|^2 + |e|^2 - 2 <q, e>: a GEMM, as torch's cdist does for p = 2.
      at::Tensor squared = query.pow(2).sum(-1, true) + candidates.pow(2).sum(-1).unsqueeze(1) -
                           2 * at::bmm(query, candidates.transpose(1, 2));
      return -squared.clamp_min(1e-12).sqrt();
    }
  }
  throw Error("unknown decoder");
}

}  // namespace partita
