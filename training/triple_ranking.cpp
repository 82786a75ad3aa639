#include "training/triple_ranking.h"

#include <torch/torch.h>

#include <algorithm>

#include "models/kg_ranking.h"
#include "training/link_metrics.h"

namespace partita {

at::Tensor ids_tensor(const std::vector<int64_t>& ids) {
  return torch::from_blob(const_cast<int64_t*>(ids.data()), {static_cast<int64_t>(ids.size())}, torch::kLong).clone();
}

// Positions of `values` in the sorted unique `ids`.
at::Tensor positions_in(const std::vector<int64_t>& ids, const std::vector<int64_t>& values) {
  std::vector<int64_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = std::lower_bound(ids.begin(), ids.end(), values[i]) - ids.begin();
  }
  return ids_tensor(out);
}

std::vector<double> rank_triples(const KgTriples& kg, const TripleList& triples, const TripleRanking& how,
                                 const EntityRows& table, const PartitionBook& book, const std::vector<int64_t>& sampled) {
  torch::NoGradGuard no_grad;
  const int64_t n = triples.size();
  std::vector<double> out(kRankingSums, 0.0);
  if (n <= 0) return out;
  // Queries 0..n-1 predict tails, n..2n-1 heads.
  std::vector<int64_t> anchors(2 * n), answers(2 * n), rels(2 * n);
  std::vector<int64_t> offsets{0}, filter;
  for (int64_t i = 0; i < n; ++i) {
    anchors[i] = triples.head[i];
    answers[i] = triples.tail[i];
    anchors[n + i] = triples.tail[i];
    answers[n + i] = triples.head[i];
    rels[i] = rels[n + i] = triples.relation[i];
  }
  for (int64_t i = 0; i < 2 * n; ++i) {
    const int32_t rel = static_cast<int32_t>(rels[i]);
    Span<const int64_t> truth = i < n ? kg.true_tails(anchors[i], rel) : kg.true_heads(rel, anchors[i]);
    for (int64_t id : truth) {
      if (id != answers[i]) filter.push_back(id);
    }
    offsets.push_back(static_cast<int64_t>(filter.size()));
  }
  std::vector<int64_t> ids(anchors);
  ids.insert(ids.end(), answers.begin(), answers.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  at::Tensor rows = torch::empty({static_cast<int64_t>(ids.size()), table.dim}, torch::kFloat);
  table.read(ids, rows.data_ptr<float>());
  const at::Tensor anchor = rows.index_select(0, positions_in(ids, anchors));
  const at::Tensor answer = rows.index_select(0, positions_in(ids, answers));
  at::Tensor rel;
  if (how.relations.defined()) {
    at::Tensor rel_index = ids_tensor(rels);
    if (how.reciprocal) rel_index.narrow(0, n, n).add_(how.num_relations);
    rel = how.relations.detach().index_select(0, rel_index);
  }
  auto relations_of = [&](int64_t first) { return rel.defined() ? rel.narrow(0, first, n) : at::Tensor(); };
  const KgSide head_side = how.reciprocal ? KgSide::kTail : KgSide::kHead;
  const at::Tensor query = at::cat({kg_query(how.decoder, KgSide::kTail, anchor.narrow(0, 0, n), relations_of(0)),
                                    kg_query(how.decoder, head_side, anchor.narrow(0, n, n), relations_of(n))});
  RankAccumulator ranks(kg_score_pairs(how.decoder, query, answer), answers, offsets, filter);
  auto rank_block = [&](const at::Tensor& block, const std::vector<int64_t>& candidates) {
    for (int64_t q = 0; q < 2 * n; q += how.query_batch) {
      const int64_t count = std::min(how.query_batch, 2 * n - q);
      at::Tensor scores = kg_score_groups(how.decoder, query.narrow(0, q, count).unsqueeze(0), block.unsqueeze(0))[0];
      ranks.add_block(scores, q, Span<const int64_t>(candidates));
    }
  };
  if (sampled.empty()) {
    // Every entity, streamed from its owner a block at a time.
    std::vector<int64_t> candidates;
    for (int p = 0; p < book.num_parts(); ++p) {
      for (int64_t b = book.begin(p); b < book.end(p); b += how.block) {
        const int64_t e = std::min(book.end(p), b + how.block);
        candidates.resize(static_cast<size_t>(e - b));
        for (int64_t i = b; i < e; ++i) candidates[i - b] = i;
        at::Tensor block = torch::empty({e - b, table.dim}, torch::kFloat);
        table.read_range(p, b, e, block.data_ptr<float>());
        rank_block(block, candidates);
      }
    }
  } else {
    at::Tensor block = torch::empty({static_cast<int64_t>(sampled.size()), table.dim}, torch::kFloat);
    table.read(sampled, block.data_ptr<float>());
    rank_block(block, sampled);
  }
  const RankSums raw = ranks.raw(), filtered = ranks.filtered();
  int i = 0;
  for (const RankSums& s : {raw, filtered}) {
    out[i++] = s.count;
    out[i++] = s.reciprocal_rank;
    out[i++] = s.hits1;
    out[i++] = s.hits3;
    out[i++] = s.hits10;
  }
  return out;
}

}  // namespace partita
