#include "training/bucket_epoch.h"

#include <algorithm>

#include "base/error.h"
#include "base/random.h"

namespace partita {

size_t BucketEpoch::state_of_step(int64_t step) const {
  if (step < 0 || step >= steps) throw Error("bucket epoch: no step " + std::to_string(step) + " of " + std::to_string(steps));
  return static_cast<size_t>(std::upper_bound(first_step.begin(), first_step.end(), step) - first_step.begin()) - 1;
}

std::vector<int64_t> table_ids(const KgTriples& triples) {
  std::vector<int64_t> out(static_cast<size_t>(triples.num_entities()));
  for (int64_t o = 0; o < triples.num_entities(); ++o) out[static_cast<size_t>(triples.global_of_original(o))] = o;
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
  std::vector<size_t> state_of_bucket(static_cast<size_t>(p) * p);
  for (size_t k = 0; k < states; ++k) {
    for (const auto& [a, b] : plan.order.buckets[k]) state_of_bucket[static_cast<size_t>(a) * p + b] = k;
  }
  plan.edges.resize(states);
  const TripleList& train = triples.train();
  for (int64_t e : triples.epoch_order(seed, epoch)) {
    const int a = shape.partition_of(table_id[static_cast<size_t>(train.head[e])]);
    const int b = shape.partition_of(table_id[static_cast<size_t>(train.tail[e])]);
    plan.edges[state_of_bucket[static_cast<size_t>(a) * p + b]].push_back(e);
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
                                           const EmbeddingPartitions::Shape& shape, uint64_t seed, uint64_t epoch,
                                           uint64_t step, uint64_t chunk) {
  if (negatives.k > triples.num_entities()) {
    throw UsageError("negatives.k: " + std::to_string(negatives.k) + " is more than the graph's " +
                     std::to_string(triples.num_entities()) + " entities");
  }
  std::vector<int> resident = plan.order.states.at(state);
  std::sort(resident.begin(), resident.end());
  int64_t resident_entities = 0;
  for (int part : resident) resident_entities += shape.end(part) - shape.begin(part);
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
      int64_t u = static_cast<int64_t>(rng.below(static_cast<uint64_t>(resident_entities)));
      for (int part : resident) {
        const int64_t rows = shape.end(part) - shape.begin(part);
        if (u < rows) {
          out[j] = triples.global_of_original(shape.begin(part) + u);
          break;
        }
        u -= rows;
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
