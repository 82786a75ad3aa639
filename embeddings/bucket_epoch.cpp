#include "embeddings/bucket_epoch.h"

#include <algorithm>
#include <cmath>

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

EmbeddingPartitions::Shape buffer_table_shape(int64_t num_entities, int partitions, int64_t dim) {
  if (partitions < 1 || partitions > num_entities) {
    throw UsageError("embeddings.partitions: " + std::to_string(partitions) + " partitions for " +
                     std::to_string(num_entities) + " entities");
  }
  EmbeddingPartitions::Shape shape;
  shape.num_entities = num_entities;
  shape.num_partitions = partitions * static_cast<int>(std::min<int64_t>(kLogicalPerPhysical, num_entities / partitions));
  shape.dim = dim;
  return shape;
}

BucketEpoch plan_bucket_epoch(const KgTriples& triples, const std::vector<int64_t>& table_id,
                              const EmbeddingPartitions::Shape& shape, int partitions, int capacity, uint64_t seed,
                              uint64_t epoch, int64_t batch_size) {
  if (batch_size < 1) throw UsageError("sampling.batch_size: must be at least 1");
  const int logical = shape.num_partitions;
  if (partitions < 1 || logical % partitions != 0) {
    throw Error("bucket epoch: " + std::to_string(logical) + " logical partitions do not group into " +
                std::to_string(partitions) + " physical ones");
  }
  const int p = partitions;
  BucketEpoch plan;
  plan.order = beta_order(p, capacity);
  // The epoch's grouping: a seeded permutation of the logical partitions, cut in p runs.
  std::vector<int> logical_ids(static_cast<size_t>(logical));
  for (int i = 0; i < logical; ++i) logical_ids[static_cast<size_t>(i)] = i;
  Rng rng(mix64(seed, 0x62756b6574ull /* "bucket" */, epoch));
  shuffle(logical_ids, rng);
  plan.group_of.resize(static_cast<size_t>(logical));
  for (int i = 0; i < logical; ++i) plan.group_of[static_cast<size_t>(logical_ids[static_cast<size_t>(i)])] = i / (logical / p);
  const size_t states = plan.order.states.size();
  for (const std::vector<int>& state : plan.order.states) {
    std::vector<int> resident;
    for (int l = 0; l < logical; ++l) {
      if (std::find(state.begin(), state.end(), plan.group_of[static_cast<size_t>(l)]) != state.end()) resident.push_back(l);
    }
    plan.resident.push_back(std::move(resident));
  }
  // Per physical bucket, the states holding both its ends: its first (where the walk lists it) first.
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
  if (states > 1) {
    std::vector<int64_t> resident_rows(states, 0);
    for (size_t k = 0; k < states; ++k) {
      for (int l : plan.resident[k]) resident_rows[k] += shape.end(l) - shape.begin(l);
    }
    plan.log_rate.assign(static_cast<size_t>(p) * p * p, 0.0);
    for (size_t bucket = 0; bucket < states_of_bucket.size(); ++bucket) {
      const std::vector<size_t>& holders = states_of_bucket[bucket];
      for (int x = 0; x < p; ++x) {
        double sum = 0;
        for (size_t k : holders) {
          const std::vector<int>& state = plan.order.states[k];
          if (std::find(state.begin(), state.end(), x) != state.end()) sum += 1.0 / static_cast<double>(resident_rows[k]);
        }
        // 0: never drawn for this bucket (the entry is never read).
        if (sum > 0) {
          plan.log_rate[bucket * p + x] =
              std::log(static_cast<double>(shape.num_entities) * sum / static_cast<double>(holders.size()));
        }
      }
    }
  }
  Rng spread_rng(mix64(seed, 0x737072656164ull /* "spread" */, epoch));
  plan.edges.resize(states);
  const TripleList& train = triples.train();
  for (int64_t e : triples.epoch_order(seed, epoch)) {
    const int a = plan.group_of[static_cast<size_t>(shape.partition_of(table_id[static_cast<size_t>(train.head[e])]))];
    const int b = plan.group_of[static_cast<size_t>(shape.partition_of(table_id[static_cast<size_t>(train.tail[e])]))];
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
  for (int part : plan.resident.at(state)) is_resident[static_cast<size_t>(part)] = 1;
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
