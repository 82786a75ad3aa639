#include "training/gnn_link_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

#include <spdlog/spdlog.h>

#include "actors/actor_types.h"
#include "base/error.h"
#include "base/random.h"
#include "partitioner/partition_format.h"
#include "training/gnn_link_trainer.h"
#include "training/relational_encoder.h"

namespace partita {

namespace {

// One destination drawn uniformly among `candidates`, or among every node when empty (as
// KgTriples::draw_negatives draws one).
int64_t draw_destination(const LinkPlanner& r, const std::vector<int64_t>& candidates, Rng& rng) {
  if (!candidates.empty()) return candidates[rng.below(candidates.size())];
  return r.triples->global_of_original(static_cast<int64_t>(rng.below(static_cast<uint64_t>(r.triples->num_entities()))));
}

// A chunk's negatives: KgTriples' draw over every node, or, for a target edge type, k draws
// among `candidates` (its destination type's nodes, or those of them a training edge ends
// in; keyed by (seed, epoch, step, chunk) as original-id positions, so partition-invariant
// like KgTriples'), degree_fraction of them as the destination of a uniformly drawn target
// training edge.
std::vector<int64_t> draw_negatives(const LinkPlanner& r, const std::vector<int64_t>& candidates,
                                    const KgNegatives& negatives, uint64_t epoch, uint64_t step, uint64_t chunk) {
  if (candidates.empty()) return r.triples->draw_negatives(negatives, r.job.seed, epoch, step, chunk);
  Rng rng(mix64(mix64(r.job.seed, 0x6c6e6567ull /* "lneg" */), mix64(epoch, step), chunk));
  std::vector<int64_t> out(static_cast<size_t>(negatives.k));
  const uint64_t num_degree = static_cast<uint64_t>(static_cast<double>(negatives.k) * negatives.degree_fraction);
  for (size_t j = 0; j < out.size(); ++j) {
    if (j < num_degree && !r.target_edges.empty()) {
      out[j] = r.triples->train().tail[r.target_edges[rng.below(r.target_edges.size())]];
    } else {
      out[j] = draw_destination(r, candidates, rng);
    }
  }
  return out;
}

// Evaluation's negatives are non-edges, as PyG's negative_sampling draws them and as
// filtered ranking counts them: each of `drawn` (positive (src, relation, ?)'s negatives)
// that makes an edge of `relation` with src, in either direction (a link, as
// partitioner/splits.h holds links out: an undirected graph's held-out link is kept as one
// of its two edges), in any split, training, validation or test, is drawn again uniformly
// among `candidates` (every node when empty), from a stream keyed by the positive's
// position `i` in the split, so partition-invariant as the first draws, up to kRedraws
// times. A negative that is a true edge is not one: on MovieLens, 4.7% of a test
// user's uniformly drawn movies were movies the user had rated, which a good model ranks
// near its positives (BENCHMARKS.md, "Heterogeneous link prediction"). Returns how many
// stayed true edges (a source with an edge to nearly every candidate).
int64_t redraw_true_edges(const LinkPlanner& r, const std::vector<int64_t>& candidates, uint64_t epoch, int64_t i,
                          int64_t src, int32_t relation, std::vector<int64_t>& drawn) {
  constexpr int kRedraws = 100;
  const Span<const int64_t> tails = r.triples->true_tails(src, relation), heads = r.triples->true_heads(relation, src);
  const auto is_true = [&](int64_t v) {
    return std::binary_search(tails.begin(), tails.end(), v) || std::binary_search(heads.begin(), heads.end(), v);
  };
  Rng rng(mix64(mix64(r.job.seed, 0x6c66696c74ull /* "lfilt" */), epoch, static_cast<uint64_t>(i)));
  int64_t kept_true = 0;
  for (int64_t& v : drawn) {
    for (int attempt = 0; attempt < kRedraws && is_true(v); ++attempt) v = draw_destination(r, candidates, rng);
    kept_true += is_true(v);
  }
  return kept_true;
}

// Of relation `target` only, when >= 0.
TripleList canonical_held_out(const KgTriples& triples, const std::string& split, int parts,
                              const std::vector<int64_t>& original_of, int32_t target) {
  TripleList all;
  for (int p = 0; p < parts; ++p) {
    const TripleList part = triples.held_out(split, p);
    for (int64_t i = 0; i < part.size(); ++i) {
      if (target >= 0 && part.relation[i] != target) continue;
      all.add(part, i);
    }
  }
  std::vector<size_t> order(all.head.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::make_tuple(original_of[all.head[a]], original_of[all.tail[a]], all.relation[a]) <
           std::make_tuple(original_of[all.head[b]], original_of[all.tail[b]], all.relation[b]);
  });
  TripleList sorted;
  for (size_t i : order) sorted.add(all, static_cast<int64_t>(i));
  return sorted;
}

// Appends `step`'s seeds to `plan` as its next batch: the positives' sources, their
// destinations, then their negatives (SubgraphBuilder keeps each node once, unless
// disjoint). Temporal sampling: each seed's time bound is its positive's (LinkStep::time).
void add_batch(EpochPlan& plan, const LinkStep& step, bool temporal) {
  plan.order.insert(plan.order.end(), step.src.begin(), step.src.end());
  plan.order.insert(plan.order.end(), step.dst.begin(), step.dst.end());
  plan.order.insert(plan.order.end(), step.negatives.begin(), step.negatives.end());
  plan.offsets.push_back(static_cast<int64_t>(plan.order.size()));
  if (!temporal) return;
  plan.times.insert(plan.times.end(), step.time.begin(), step.time.end());
  plan.times.insert(plan.times.end(), step.time.begin(), step.time.end());
  const size_t k = step.src.empty() ? 0 : step.negatives.size() / step.src.size();
  for (int64_t t : step.time) plan.times.insert(plan.times.end(), k, t);
}

}  // namespace

int64_t seed_time_bound(const LinkPlanner& p, int64_t time) { return p.history ? time - 1 : time; }

void open_link_plan(LinkPlanner& p, JobConfig job, int index) {
  p.job = std::move(job);
  require_partition_folder(p.job.partition_dir(), "job");
  p.index = index;
  p.part = p.job.part_of_trainer(p.index);
  p.shares = p.job.trainers_per_partition;
  p.share = p.index % p.shares;
  const PartitionFolder folder(p.job.partition_dir());
  const PartitionMeta& meta = folder.meta();
  p.target = check_link_encoder_fits(p.job, meta, folder.dir());
  check_held_out_history(p.job, meta, folder.dir());
  p.history = meta.held_out_in_graph;
  p.book = folder.book();
  p.triples = std::make_unique<KgTriples>(folder);
  std::vector<int64_t> original_of(static_cast<size_t>(meta.num_nodes));
  for (int64_t o = 0; o < meta.num_nodes; ++o) original_of[p.triples->global_of_original(o)] = o;
  for (const char* split : {"valid", "test"}) {
    p.held_out[split] = canonical_held_out(*p.triples, split, meta.num_parts, original_of, p.target);
  }
  const bool relational = p.job.model.relational();
  if (relational || p.target >= 0) p.node_type = global_node_types(folder);
  if (p.target >= 0) {
    const TripleList& train = p.triples->train();
    for (int64_t e = 0; e < train.size(); ++e) {
      if (train.relation[e] == p.target && p.triples->is_training_edge(e)) p.target_edges.push_back(e);
    }
    const std::string& dst_type = meta.edge_types[p.target].dst_type;
    const int32_t type = static_cast<int32_t>(
        std::find(meta.node_types.begin(), meta.node_types.end(), dst_type) - meta.node_types.begin());
    for (int64_t o = 0; o < meta.num_nodes; ++o) {
      const int64_t v = p.triples->global_of_original(o);
      if (p.node_type[v] == type) p.candidates.push_back(v);
    }
    check_negatives_fit(p.job, static_cast<int64_t>(p.candidates.size()), "'" + dst_type + "' nodes of model.target_edge");
    p.training_candidates = p.candidates;
    if (p.job.link.negative_candidates == "trained") {
      std::vector<bool> trained(static_cast<size_t>(meta.num_nodes), false);
      for (int64_t e : p.target_edges) trained[static_cast<size_t>(train.tail[e])] = true;
      std::vector<int64_t>& from = p.training_candidates;
      from.erase(std::remove_if(from.begin(), from.end(), [&](int64_t v) { return !trained[static_cast<size_t>(v)]; }),
                 from.end());
      if (p.job.link.negatives > static_cast<int64_t>(p.training_candidates.size())) {
        throw UsageError("negatives.k: " + std::to_string(p.job.link.negatives) + " is more than the " +
                         std::to_string(p.training_candidates.size()) + " '" + dst_type +
                         "' nodes a training edge of model.target_edge ends in (negatives.candidates: trained)");
      }
    }
  } else if (p.job.link.negative_candidates == "trained") {
    throw UsageError("negatives.candidates: trained draws among the destinations of model.target_edge's training "
                     "edges, and the job has no model.target_edge");
  }
  p.negatives.k = p.job.link.negatives;
  p.negatives.chunk_size = p.job.link.chunk_size;
  p.negatives.degree_fraction = p.job.link.degree_fraction;
  p.negatives.strict = p.job.link.strict;
  p.regression = p.job.link.regression();
  if (p.regression) {
    check_rating_target(p.job, meta, folder.dir(), false);
    // The training positives' mean value, and each destination's: the prediction's offset
    // and evaluation's baselines, the same in every trainer (every trainer reads all edges).
    const TripleList& train = p.triples->train();
    std::unordered_map<int64_t, std::pair<double, int64_t>> by_destination;
    double sum = 0;
    int64_t count = 0;
    for (int64_t e = 0; e < train.size(); ++e) {
      if ((p.target >= 0 && train.relation[e] != p.target) || !p.triples->is_training_edge(e)) continue;
      sum += train.value[e];
      ++count;
      auto& [destination_sum, destination_count] = by_destination[train.tail[e]];
      destination_sum += train.value[e];
      ++destination_count;
    }
    p.mean_value = count > 0 ? sum / static_cast<double>(count) : 0.0;
    for (const auto& [node, sum_count] : by_destination) {
      p.destination_mean[node] = sum_count.first / static_cast<double>(sum_count.second);
    }
  }
}

// The epoch's `steps` batches (embeddings/kg_triples.h: which positives and negatives), each
// leaving out all of the step's positives, whichever trainer holds them.
EpochPlan plan_training(LinkPlanner& r, uint64_t epoch, int64_t steps) {
  const TripleList& train = r.triples->train();
  const std::vector<int64_t>& times = r.triples->train_times();
  const bool temporal = r.job.temporal();
  std::vector<int64_t> order = r.triples->epoch_order(r.job.seed, epoch);
  if (r.job.time_ordered) {
    // Batches cut in time order: the edges by time, ties by edge id.
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (r.target >= 0 || r.history) {
    // The target type's training edges alone (no held-out edge kept as history), in the
    // same order.
    order.erase(std::remove_if(order.begin(), order.end(),
                               [&](int64_t e) {
                                 return (r.target >= 0 && train.relation[e] != r.target) ||
                                        !r.triples->is_training_edge(e);
                               }),
                order.end());
  }
  if (r.job.time_ordered) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return times[a] < times[b]; });
  }
  const int64_t m = static_cast<int64_t>(order.size()), b = r.job.batch_size;
  EpochPlan plan;
  plan.job_seed = r.job.seed;
  plan.epoch = epoch;
  plan.offsets = {0};
  plan.excluded_offsets = {0};
  r.steps.assign(static_cast<size_t>(steps), LinkStep());
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t begin = std::min(m, s * b), end = std::min(m, begin + b);
    LinkStep& step = r.steps[static_cast<size_t>(s)];
    std::map<int64_t, std::vector<int64_t>> chunks;
    for (int64_t p : trainer_positions(*r.triples, r.book, Span<const int64_t>(order), begin, end, r.part, r.share,
                                       r.shares)) {
      const int64_t e = order[static_cast<size_t>(begin + p)];
      step.src.push_back(train.head[e]);
      step.dst.push_back(train.tail[e]);
      step.relation.push_back(train.relation[e]);
      if (temporal) step.time.push_back(seed_time_bound(r, times[e]));
      if (r.regression) {
        step.value.push_back(train.value[e]);
        continue;
      }
      const int64_t chunk = p / r.negatives.chunk_size;
      auto it = chunks.find(chunk);
      if (it == chunks.end()) {
        it = chunks.emplace(chunk, draw_negatives(r, r.training_candidates, r.negatives, epoch, s, chunk)).first;
      }
      step.negatives.insert(step.negatives.end(), it->second.begin(), it->second.end());
    }
    add_batch(plan, step, temporal);
    for (int64_t i = begin; i < end; ++i) {
      plan.excluded_src.push_back(train.head[order[i]]);
      plan.excluded_dst.push_back(train.tail[order[i]]);
    }
    plan.excluded_offsets.push_back(static_cast<int64_t>(plan.excluded_src.size()));
  }
  return plan;
}

// The split's held-out edges this trainer scores, in batches of eval_batch_size edges of
// the canonical order (keyed by their position there), each edge against eval.negatives
// destinations drawn keyed by its position, none a true edge of its source
// (redraw_true_edges). Held-out edges are not in the graph: nothing
// is left out, and temporal sampling bounds them by no time (a time split, data.holdout.by:
// time, puts every training edge before them). With history kept they are in the graph,
// and each is bounded strictly before its own time (seed_time_bound): its own edges, and
// the held-out edges at or after it, stay out; the earlier ones are its history.
EpochPlan plan_evaluation(LinkPlanner& r, const std::string& split) {
  const TripleList& edges = r.held_out.at(split);
  if (r.regression && static_cast<int64_t>(edges.value.size()) != edges.size()) {
    throw UsageError("train.loss: mse: the held-out " + split + " edges have no values to evaluate on");
  }
  const uint64_t split_code = split == "valid" ? 1 : 2;
  const int64_t n = edges.size(), b = r.job.eval_batch_size;
  KgNegatives negatives;
  negatives.k = r.regression ? 0 : r.job.link.eval_negatives;
  negatives.chunk_size = 1;
  EpochPlan plan;
  plan.job_seed = r.job.seed;
  plan.epoch = kLinkEvalEpoch - split_code;
  plan.offsets = {0};
  const int64_t batches = (n + b - 1) / b;
  r.steps.assign(static_cast<size_t>(batches), LinkStep());
  int64_t true_edges = 0, drawn_negatives = 0;
  for (int64_t batch = 0; batch < batches; ++batch) {
    LinkStep& step = r.steps[static_cast<size_t>(batch)];
    for (int64_t i = batch * b; i < std::min(n, (batch + 1) * b); ++i) {
      if (r.book.owner(edges.tail[i]) != r.part || i % r.shares != r.share) continue;
      step.src.push_back(edges.head[i]);
      step.dst.push_back(edges.tail[i]);
      step.relation.push_back(edges.relation[i]);
      if (r.job.temporal()) {
        step.time.push_back(r.history ? seed_time_bound(r, edges.time.at(static_cast<size_t>(i)))
                                      : std::numeric_limits<int64_t>::max());
      }
      if (r.regression) {
        step.value.push_back(edges.value[i]);
        continue;
      }
      std::vector<int64_t> drawn = draw_negatives(r, r.candidates, negatives, plan.epoch, split_code, i);
      true_edges += redraw_true_edges(r, r.candidates, plan.epoch, i, edges.head[i], edges.relation[i], drawn);
      drawn_negatives += static_cast<int64_t>(drawn.size());
      step.negatives.insert(step.negatives.end(), drawn.begin(), drawn.end());
    }
    add_batch(plan, step, r.job.temporal());
  }
  if (true_edges > 0) {
    spdlog::warn("trainer {}: {} of the {} {} negatives are true edges of their source, whose edges reach nearly every "
                 "candidate",
                 r.index, true_edges, drawn_negatives, split);
  }
  return plan;
}

}  // namespace partita
