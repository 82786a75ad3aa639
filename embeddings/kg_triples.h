// The triples of a knowledge-graph job, as every trainer sees them: the training triples
// (the partition folder's edges, typed by relation), the held-out valid and test triples,
// the true-triple index that filtered ranking and strict negatives consult, and the epoch
// plan and negatives of training. Torch-free: ids and draws only.
//
// Partition invariance, what makes a job give the same losses on 1 and 2 partitions: the
// training triples are planned by their *original* edge ids (a permutation of all of them
// per epoch, keyed by (seed, epoch)); step s trains on the s-th slice of B triples of that
// permutation, whichever trainers hold them (trainer t holds the triples whose tail its
// partition owns, as the CSC stores them, and of those its share by edge id); positions in
// the slice form the chunks of Marius's shared negatives, and a chunk's negatives are
// drawn keyed by (seed, epoch, step, chunk) as original node ids, then mapped to global
// ids. So every positive meets the same negatives however the graph is partitioned.
//
// Memory: every trainer holds the triples (3 ids each, 6.5 MB for FB15k-237's 272k) and
// the true-triple index; no trainer holds the entity embeddings (embeddings/embedding_shard.h).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/span.h"
#include "partitioner/partition_format.h"

namespace partita {

// Triples in global ids, one per position.
struct TripleList {
  std::vector<int64_t> head, tail;
  std::vector<int32_t> relation;
  // Each triple's edge value (the first column of its edge features: a MovieLens rating),
  // what rating regression predicts; empty when the folder's edges (or, for held-out
  // triples, its held-out edges) have no features.
  std::vector<float> value;
  // Held-out triples: each one's edge time, when the folder's held-out edges have times;
  // empty otherwise (and for the training triples, whose times are train_times()).
  std::vector<int64_t> time;
  int64_t size() const { return static_cast<int64_t>(head.size()); }
  // Appends triple i of `from` (with its value and time, when `from` has them).
  void add(const TripleList& from, int64_t i) {
    head.push_back(from.head[i]);
    tail.push_back(from.tail[i]);
    relation.push_back(from.relation[i]);
    if (!from.value.empty()) value.push_back(from.value[i]);
    if (!from.time.empty()) time.push_back(from.time[i]);
  }
};

// How a chunk's negatives are drawn.
struct KgNegatives {
  int64_t k = 256;           // negatives per chunk (shared by its positives, for both sides)
  int64_t chunk_size = 256;  // positives per chunk (1: every positive has k of its own)
  // Share of the k drawn in proportion to degree (the end of a uniformly drawn training
  // triple, as Marius's degree-based negatives), the rest uniformly over all entities.
  double degree_fraction = 0.0;
  // Strict: a negative that makes a true training triple with a positive is dropped from
  // that positive's loss (masked, not redrawn, so the chunk's set stays shared).
  bool strict = false;
};

class KgTriples {
 public:
  // Reads every part's training edges and held-out edge splits from `folder`. Throws
  // UsageError naming the folder when it has no edges, or when `num_relations` (from the
  // folder's edge types; 1 for an untyped graph) does not cover an edge's type.
  explicit KgTriples(const PartitionFolder& folder);

  int64_t num_entities() const { return num_entities_; }
  int32_t num_relations() const { return num_relations_; }
  // The graph's edges as triples, by original edge id: the training triples, and when the
  // folder keeps its held-out edges in the graph as history (PartitionMeta::held_out_in_graph)
  // those too, which is_training_edge tells apart.
  const TripleList& train() const { return train_; }
  // Whether graph edge `e` (original id) trains: false for an edge between the two ends of
  // a held-out triple, in either direction and of any type, in a folder that keeps its
  // held-out edges as history (such an edge is that triple, its reverse or a parallel
  // edge: the answer, not a positive). Always true otherwise.
  bool is_training_edge(int64_t e) const { return history_.empty() || history_[static_cast<size_t>(e)] == 0; }
  // How many graph edges train.
  int64_t num_training_edges() const { return train_.size() - num_history_; }
  // Their edge times by original edge id, when the graph has edge times; empty otherwise.
  const std::vector<int64_t>& train_times() const { return train_time_; }
  // The held-out triples ("valid" or "test") whose tail partition `part` owns, in the
  // folder's order.
  TripleList held_out(const std::string& split, int part) const;

  // Whether (head, relation, tail) is a training triple (of the training edges alone).
  bool is_train_triple(int64_t head, int32_t relation, int64_t tail) const;
  // Strict negatives: whether `negative`, replacing the tail (corrupt_tail) or the head of
  // the positive (head, relation, tail), makes a false triple, so that it may count as a
  // negative. Never true for the positive's own corrupted end.
  bool keeps_negative(bool corrupt_tail, int64_t head, int32_t relation, int64_t tail, int64_t negative) const {
    return corrupt_tail ? !is_train_triple(head, relation, negative) : !is_train_triple(negative, relation, tail);
  }
  // Every true tail of (head, relation, ?) and head of (?, relation, tail) in train, valid
  // and test, sorted: the filter of filtered ranking. Empty when there is none.
  Span<const int64_t> true_tails(int64_t head, int32_t relation) const;
  Span<const int64_t> true_heads(int32_t relation, int64_t tail) const;

  // The original edge ids of epoch `epoch`'s training order (a permutation of all).
  std::vector<int64_t> epoch_order(uint64_t seed, uint64_t epoch) const;

  // A chunk's negatives as global entity ids: k draws keyed by (seed, epoch, step, chunk);
  // degree_fraction of them as an end of a uniformly drawn training edge. Throws UsageError naming negatives.k if k exceeds the entity count.
  std::vector<int64_t> draw_negatives(const KgNegatives& negatives, uint64_t seed, uint64_t epoch, uint64_t step,
                                      uint64_t chunk) const;

  // Global id of each original node id.
  int64_t global_of_original(int64_t original) const { return to_global_[original]; }

 private:
  uint64_t pair_key(int64_t entity, int32_t relation) const {
    return static_cast<uint64_t>(entity) * static_cast<uint64_t>(num_relations_) + static_cast<uint64_t>(relation);
  }

  int64_t num_entities_ = 0;
  int32_t num_relations_ = 1;
  TripleList train_;
  std::vector<int64_t> train_time_;
  std::vector<uint8_t> history_;  // per edge id, 1: held out, kept as history; empty: none
  int64_t num_history_ = 0;
  std::vector<int64_t> to_global_;
  std::vector<TripleList> valid_, test_;  // per part
  // (head, relation) -> sorted true tails; (tail, relation) -> sorted true heads; over all
  // splits. Training triples alone, for strict negatives: a set of packed triples.
  std::unordered_map<uint64_t, std::vector<int64_t>> tails_of_, heads_of_;
  std::unordered_map<uint64_t, std::vector<int64_t>> train_tails_of_;
};

// The training triples trainer `share` of `shares` of partition `part` holds in one step:
// positions [begin, end) of `order` whose tail `part` owns and whose edge id is in its
// share (edge id mod shares). Returns the positions (in the slice: chunk = position /
// chunk_size).
std::vector<int64_t> trainer_positions(const KgTriples& triples, const PartitionBook& book, Span<const int64_t> order,
                                       int64_t begin, int64_t end, int part, int share, int shares);

}  // namespace partita
