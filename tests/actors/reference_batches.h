// Talking to a sampler actor from a test, and the single-partition reference of the batches
// it must give.
#pragma once

#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "actors/protocol.h"
#include "base/error.h"
#include "graph/batch_features.h"
#include "graph/epoch_plan.h"
#include "graph/neighbor_sampler.h"
#include "messages/codec.h"
#include "partitioned_graph.h"
#include "partitioner/partition_stores.h"

namespace partita::testing {

// Sends `args` to the sampler and waits (at most 60 s) for its encoded reply (partitions,
// epoch). Throws Error when the transport fails; the reply may be an error reply.
template <typename... Args>
Encoded ask(caf::actor_system& system, const sampler_actor& sampler, Args... args) {
  caf::scoped_actor self{system};
  Encoded reply;
  std::string failure;
  self->request(sampler, std::chrono::seconds(60), args...)
      .receive([&](Encoded& r) { reply = std::move(r); }, [&](caf::error& e) { failure = system.render(e); });
  if (!failure.empty()) throw Error("the sampler did not answer: " + failure);
  return reply;
}

// The sampler's next batch (or its failure), waiting at most 60 s.
inline SampledBatch next_of(caf::actor_system& system, const sampler_actor& sampler) {
  caf::scoped_actor self{system};
  SampledBatch reply;
  std::string failure;
  self->request(sampler, std::chrono::seconds(60), next_atom::value)
      .receive([&](SampledBatch& r) { reply = std::move(r); }, [&](caf::error& e) { failure = system.render(e); });
  if (!failure.empty()) throw Error("the sampler did not answer: " + failure);
  return reply;
}

// The message of the error reply in `reply` ("" if it is not one).
inline std::string error_of(const Encoded& reply) {
  try {
    if (peek_message(Span<const char>(reply.bytes)).kind != MessageKind::kErrorReply) return "";
    return decode_error_reply(Span<const char>(reply.bytes)).message;
  } catch (const Error& e) {
    return std::string("unreadable reply: ") + e.what();
  }
}

// The epoch message of `split`, shuffled.
inline Encoded start_epoch(caf::actor_system& system, const sampler_actor& sampler, uint64_t plan_seed, uint64_t epoch,
                           int64_t batch_size, const std::string& split = "train", bool shuffle = true) {
  return ask(system, sampler, epoch_atom::value, split, plan_seed, epoch, batch_size, shuffle);
}

// The batches a sampler of a partition folder must give: the whole dataset sampled by the
// single-partition NeighborSampler, features attached, in original ids.
class ReferenceBatches {
 public:
  ReferenceBatches(const Dataset& dataset, const std::string& dir, const SamplerConfig& config)
      : graph_(dir),
        whole_(topology_from_dataset(dataset)),
        features_(features_from_dataset(dataset)),
        sampler_(whole_, config) {
    PartitionFolder folder(dir);
    for (int p = 0; p < folder.meta().num_parts; ++p) {
      PartitionData data = folder.load_part(p);
      const auto ids = [](const MappedArray& a) {
        Span<const int64_t> s = a.as<int64_t>();
        return std::vector<int64_t>(s.begin(), s.end());
      };
      seeds_.push_back({ids(data.train_idx), ids(data.val_idx), ids(data.test_idx)});
    }
  }

  const PartitionedGraph& graph() const { return graph_; }
  // Part p's training nodes (global ids): the seeds of its sampler.
  const std::vector<int64_t>& train_seeds(int part) const { return seeds_[part][0]; }
  // Part p's nodes of `split` ("train", "val", "test").
  const std::vector<int64_t>& seeds(int part, const std::string& split) const {
    return seeds_[part][split == "train" ? 0 : split == "val" ? 1 : 2];
  }

  // Batch b of `plan` (seeds in global ids) as the reference samples it.
  OriginalBatch expected(const EpochPlan& plan, int64_t b) {
    std::vector<int64_t> seeds;
    for (int64_t g : plan.batch(b)) seeds.push_back(graph_.original_of_global()[g]);
    MiniBatch want = sampler_.sample(seeds, plan.key(b));
    attach_features(want, whole_.book(), {&features_});
    return to_original(want, [](int64_t v) { return v; }, [&](int64_t e) { return whole_.original_edge_id(e); });
  }

  // A batch of the partitioned graph in original ids.
  OriginalBatch original(const MiniBatch& got) const {
    return to_original(got, [&](int64_t v) { return graph_.original_of_global()[v]; },
                       [&](int64_t e) { return graph_.original_edge(e); });
  }

 private:
  PartitionedGraph graph_;
  Topology whole_;
  FeatureStore features_;
  NeighborSampler sampler_;
  std::vector<std::vector<std::vector<int64_t>>> seeds_;  // part, split
};

// Asks `sampler` for every batch of an epoch of `split` and checks each against the
// reference. `partitions` must have been sent already.
inline void expect_reference_epoch(caf::actor_system& system, const sampler_actor& sampler, int part,
                                   ReferenceBatches& reference, uint64_t plan_seed, uint64_t epoch,
                                   int64_t batch_size, const std::string& split = "train", bool shuffle = true) {
  Encoded started = start_epoch(system, sampler, plan_seed, epoch, batch_size, split, shuffle);
  ASSERT_EQ(error_of(started), "");
  const EpochPlan plan = plan_epoch(reference.seeds(part, split), batch_size, plan_seed, epoch, shuffle);
  ASSERT_EQ(decode_sampler_ack(Span<const char>(started.bytes)), plan.num_batches());
  ASSERT_GT(plan.num_batches(), 1);
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    SampledBatch got = next_of(system, sampler);
    ASSERT_TRUE(got.ok()) << "batch " << b << ": " << got.error;
    EXPECT_EQ(got.key.batch, static_cast<uint64_t>(b));
    ASSERT_GT(got.batch->feature_dim, 0);
    EXPECT_TRUE(reference.original(*got.batch) == reference.expected(plan, b)) << "part " << part << ", batch " << b;
  }
  SampledBatch beyond = next_of(system, sampler);
  EXPECT_FALSE(beyond.ok());
  EXPECT_NE(beyond.error.find("were taken"), std::string::npos) << beyond.error;
}

}  // namespace partita::testing
