// The sampler actor's phases, as behaviours switched with `become`: unwired (waiting for
// its partitions), wiring (connecting to those in other processes), ready (epochs and
// batches). Each handler is one line into sampler_wiring.cpp or sampler_pipeline.cpp.
#include "actors/sampler_actor.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>
#include <vector>

#include "actors/sampler_state.h"
#include "base/error.h"

namespace partita {

namespace sampler_internal {

Encoded error_reply(SamplerState& s, WireErrorCode code, const std::string& message) {
  Encoded e;
  s.encoder.error_reply(0, code, message, e.bytes);
  return e;
}

Encoded ack(SamplerState& s, int64_t num_batches) {
  Encoded e;
  s.encoder.sampler_ack(num_batches, e.bytes);
  return e;
}

std::string request_failure(caf::actor_system& system, const caf::error& e, std::chrono::milliseconds deadline) {
  return e == caf::sec::request_timeout ? "no reply within " + std::to_string(deadline.count()) + " ms"
                                        : system.render(e);
}

namespace {

Encoded not_wired(Pointer self) {
  return error_reply(self->state, WireErrorCode::kBadRequest, "sampler: epoch before its partitions are set up");
}
Encoded wired_already(Pointer self) {
  return error_reply(self->state, WireErrorCode::kBadRequest, "sampler: it has its partitions already");
}
SampledBatch no_epoch() { return SampledBatch::failed(WireErrorCode::kBadRequest, "sampler: next before an epoch"); }

}  // namespace

// Waiting for its partitions.
sampler_impl::behavior_type unwired(Pointer self) {
  return {
      [self](partitions_atom, const std::vector<caf::actor>& actors, const std::vector<std::string>& addresses) {
        return on_partitions(self, actors, addresses);
      },
      [self](epoch_atom, const std::string&, uint64_t, uint64_t, int64_t, bool) { return not_wired(self); },
      [self](link_plan_atom, const Encoded&) { return not_wired(self); },
      [](next_atom) { return no_epoch(); },
      [](io_done_atom, uint64_t, int32_t) {},  // no channel yet: not from one
      [](resume_atom) {},
  };
}

// Connecting to the partitions in other processes; finish_wiring_if_done moves on.
sampler_impl::behavior_type wiring(Pointer self) {
  return {
      [self](partitions_atom, const std::vector<caf::actor>&, const std::vector<std::string>&) {
        return wired_already(self);
      },
      [self](epoch_atom, const std::string&, uint64_t, uint64_t, int64_t, bool) { return not_wired(self); },
      [self](link_plan_atom, const Encoded&) { return not_wired(self); },
      [](next_atom) { return no_epoch(); },
      [self](io_done_atom, uint64_t, int32_t part) { on_channel_connected(self, part); },
      [](resume_atom) {},
  };
}

// Sampling epochs.
sampler_impl::behavior_type ready(Pointer self) {
  return {
      [self](partitions_atom, const std::vector<caf::actor>&, const std::vector<std::string>&) {
        return wired_already(self);
      },
      [self](epoch_atom, const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
             bool shuffle) { return on_epoch(self, split, plan_seed, epoch, batch_size, shuffle); },
      [self](link_plan_atom, const Encoded& plan) { return on_link_plan(self, plan); },
      [self](next_atom) { return on_next(self); },
      [self](io_done_atom, uint64_t flight, int32_t part) { on_fetch_done(self, flight, part); },
      [self](resume_atom) {
        self->state.resume_pending = false;
        top_up(self);
      },
  };
}

namespace {

sampler_impl::behavior_type sampler(Pointer self, PartitionBook book, int part, PartitionStores stores,
                                    SamplerSeeds seeds, SamplerOptions options) {
  auto& s = self->state;
  s.book = std::move(book);
  s.part = part;
  s.stores = std::move(stores);
  s.seeds = std::move(seeds);
  s.options = std::move(options);
  s.pool = std::make_shared<BufferPool>(static_cast<size_t>(s.options.prefetch) + 2);
  s.parts.resize(s.book.num_parts());
  self->set_down_handler([self](caf::down_msg& msg) { on_down(self, msg); });
  // Stopping releases every consumer waiting for a batch at once, rather than at its
  // deadline (CAF 0.17 drops an undelivered promise silently).
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& st = self->state;
    const std::string why = "sampler of " + part_name(st.part) + ": stopped (" + self->system().render(msg.reason) + ")";
    release_waiting(st, why);
    if (st.wiring) st.wiring->deliver(error_reply(st, WireErrorCode::kInternal, why));
    st.wiring.reset();
    self->quit(msg.reason);
  });
  return unwired(self);
}

}  // namespace

}  // namespace sampler_internal

sampler_actor spawn_sampler_actor(caf::actor_system& system, PartitionBook book, int part, PartitionStores stores,
                                  SamplerSeeds seeds, SamplerOptions options) {
  if (part < 0 || part >= book.num_parts()) {
    throw UsageError("sampler: partition " + std::to_string(part) + " is not in a book of " +
                     std::to_string(book.num_parts()));
  }
  if (!stores.topology || !stores.features) throw UsageError("sampler: the stores of its partition are required");
  if (options.prefetch < 1) throw UsageError("sampler: prefetch must be at least 1");
  for (const std::vector<int64_t>* split : {&seeds.train, &seeds.val, &seeds.test}) {
    for (int64_t seed : *split) {
      if (seed < book.begin(part) || seed >= book.end(part)) {
        throw UsageError("sampler: seed " + std::to_string(seed) + " is not a node of " + part_name(part));
      }
    }
  }
  if (options.cache) {
    // The cache's rows must be the batch's: the wanted attributes' row bytes, x then y.
    std::vector<size_t> columns;
    for (const std::string* name : {&options.names.x, &options.names.y}) {
      if (name->empty()) continue;
      const ArrayRef* a = stores.features->get("node", *name);
      if (a == nullptr) throw UsageError("sampler: its partition has no attribute 'node/" + *name + "'");
      columns.push_back(a->row_bytes());
    }
    if (columns != options.cache->column_bytes()) {
      throw UsageError("sampler: the feature cache's rows are not the batch's (other attributes or widths)");
    }
  }
  // Checks the stores against the book and the config now, not at the first batch.
  std::vector<PartitionStores> local(book.num_parts());
  local[part] = stores;
  BatchAssembly check(book, options.config, options.names, std::move(local));
  (void)check;
  return caf::actor_cast<sampler_actor>(system.spawn(sampler_internal::sampler, std::move(book), part, std::move(stores),
                                                     std::move(seeds), std::move(options)));
}

}  // namespace partita
