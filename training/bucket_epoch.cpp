#include "training/bucket_epoch.h"

#include <algorithm>

#include "base/error.h"
#include "base/random.h"

namespace partita {

size_t BucketEpoch::state_of_step(int64_t step) const {
  if (step < 0 || step >= steps) throw Error("bucket epoch: no step " + std::to_string(step) + " of " + std::to_string(steps));
  return static_cast<size_t>(std::upper_bound(first_step.begin(), first_step.end(), step) - first_step.begin()) - 1;
}

std::vector<int64_t> table_ids(const KgTriples& triples, uint64_t seed) {
  std::vector<int64_t> row_of_original(static_cast<size_t>(triples.num_entities()));
  for (int64_t o = 0; o < triples.num_entities(); ++o) row_of_original[static_cast<size_t>(o)] = o;
  Rng rng(mix64(seed, 0x726f7773ull /* "rows" */));
  shuffle(row_of_original, rng);
  std::vector<int64_t> out(static_cast<size_t>(triples.num_entities()));
  for (int64_t o = 0; o < triples.num_entities(); ++o) {
    out[static_cast<size_t>(triples.global_of_original(o))] = row_of_original[static_cast<size_t>(o)];
  }
  return out;
}

std::vector<int64_t> original_ids_of_rows(const KgTriples& triples, const std::vector<int64_t>& table_id) {
  std::vector<int64_t> out(table_id.size());
  for (int64_t o = 0; o < triples.num_entities(); ++o) {
    out[static_cast<size_t>(table_id[static_cast<size_t>(triples.global_of_original(o))])] = o;
  }
  return out;
}

BucketEpoch plan_bucket_epoch(const KgTriples& triples, const std::vector<int64_t>& table_id,
                              const EmbeddingPartitions::Shape& shape, int capacity, uint64_t seed, uint64_t epoch,
                              int64_t batch_size) {
  if (batch_size < 1) throw UsageError("sampling.batch_size: must be at least 1");
  const int p = shape.num_partitions;
  std::vector<int> labels(static_cast<size_t>(p));
  for (int i = 0; i < p; ++i) labels[i] = i;
  Rng rng(mix64(seed, 0x62756b6574ull /* "bucket" */, epoch));
  shuffle(labels, rng);
  BucketEpoch plan;
  plan.order = relabel(beta_order(p, capacity), labels);
  const size_t states = plan.order.states.size();
  // Per bucket, the states holding both its ends: its first (where the walk trains it) first.
  std::vector<std::vector<size_t>> states_of_bucket(static_cast<size_t>(p) * p);
  for (size_t k = 0; k < states; ++k) {
    for (const auto& [a, b] : plan.order.buckets[k]) states_of_bucket[static_cast<size_t>(a) * p + b].push_back(k);
  }
  for (size_t k = 0; k < states; ++k) {
    const std::vector<int>& state = plan.order.states[k];
    for (int a : state) {
      for (int b : state) {
        std::vector<size_t>& holders = states_of_bucket[static_cast<size_t>(a) * p + b];
        if (holders.front() != k) holders.push_back(k);
      }
    }
  }
  Rng spread_rng(mix64(seed, 0x737072656164ull /* "spread" */, epoch));
  plan.edges.resize(states);
  const TripleList& train = triples.train();
  for (int64_t e : triples.epoch_order(seed, epoch)) {
    const int a = shape.partition_of(table_id[static_cast<size_t>(train.head[e])]);
    const int b = shape.partition_of(table_id[static_cast<size_t>(train.tail[e])]);
    const std::vector<size_t>& holders = states_of_bucket[static_cast<size_t>(a) * p + b];
    const size_t k = holders[spread_rng.below(holders.size())];
    plan.edges[k].push_back(e);
  }
  plan.first_step.push_back(0);
  for (const auto& edges : plan.edges) {
    plan.first_step.push_back(plan.first_step.back() + (static_cast<int64_t>(edges.size()) + batch_size - 1) / batch_size);
  }
  plan.steps = plan.first_step.back();
  return plan;
}

std::vector<int64_t> draw_buffer_negatives(const KgTriples& triples, const KgNegatives& negatives,
                                           const BucketEpoch& plan, size_t state, const std::vector<int64_t>& edges,
                                           const std::vector<int64_t>& table_id,
                                           const EmbeddingPartitions::Shape& shape, uint64_t seed, uint64_t epoch,
                                           uint64_t step, uint64_t chunk) {
  if (negatives.k > triples.num_entities()) {
    throw UsageError("negatives.k: " + std::to_string(negatives.k) + " is more than the graph's " +
                     std::to_string(triples.num_entities()) + " entities");
  }
  std::vector<char> is_resident(static_cast<size_t>(shape.num_partitions), 0);
  for (int part : plan.order.states.at(state)) is_resident[static_cast<size_t>(part)] = 1;
  const uint64_t entities = static_cast<uint64_t>(triples.num_entities());
  const TripleList& train = triples.train();
  // The generator and the order of draws of KgTriples::draw_negatives.
  Rng rng(mix64(mix64(seed, 0x6b676e6567ull /* "kgneg" */), mix64(epoch, step), chunk));
  std::vector<int64_t> out(static_cast<size_t>(negatives.k));
  const uint64_t num_degree = edges.empty() ? 0 : static_cast<uint64_t>(static_cast<double>(negatives.k) * negatives.degree_fraction);
  for (size_t j = 0; j < out.size(); ++j) {
    if (j < num_degree) {
      const int64_t e = edges[rng.below(static_cast<uint64_t>(edges.size()))];
      out[j] = (rng.next() & 1) ? train.head[e] : train.tail[e];
    } else {
      // The in-memory draw, drawn again until it is resident (p / c draws on average).
      for (;;) {
        const int64_t g = triples.global_of_original(static_cast<int64_t>(rng.below(entities)));
        if (is_resident[static_cast<size_t>(shape.partition_of(table_id[static_cast<size_t>(g)]))]) {
          out[j] = g;
          break;
        }
      }
    }
  }
  return out;
}

std::vector<int64_t> bucket_sizes(const KgTriples& triples, const std::vector<int64_t>& table_id,
                                  const EmbeddingPartitions::Shape& shape) {
  const int p = shape.num_partitions;
  std::vector<int64_t> sizes(static_cast<size_t>(p) * p, 0);
  const TripleList& train = triples.train();
  for (int64_t e = 0; e < train.size(); ++e) {
    const int a = shape.partition_of(table_id[static_cast<size_t>(train.head[e])]);
    const int b = shape.partition_of(table_id[static_cast<size_t>(train.tail[e])]);
    ++sizes[static_cast<size_t>(a) * p + b];
  }
  return sizes;
}

}  // namespace partita
