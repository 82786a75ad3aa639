// The sampler actor's epochs and batches in flight: plans, the steps of each batch as its
// answers arrive (graph/batch_assembly.h, with the messages of actors/batch_messages.h),
// the prefetch bound, and the hand-over of finished batches in plan order.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "actors/batch_messages.h"
#include "actors/sampler_state.h"
#include "runtime/answered_request.h"
#include "base/error.h"

namespace partita::sampler_internal {

namespace {

BatchInFlight* find_flight(SamplerState& s, uint64_t id) {
  auto it = s.flights.find(id);
  return it == s.flights.end() ? nullptr : it->second.get();
}

// Back to the spare list once nothing (no channel thread) refers to it any more.
void recycle_if_idle(SamplerState& s, BatchInFlight& flight) {
  if (!flight.dead || flight.io_outstanding > 0) return;
  auto it = s.flights.find(flight.id);
  s.spare_flights.push_back(std::move(it->second));
  s.flights.erase(it);
}

void kill(SamplerState& s, BatchInFlight& flight) {
  if (flight.dead) return;
  flight.dead = true;
  --s.live;
  recycle_if_idle(s, flight);
}

void schedule_resume(Pointer self) {
  if (self->state.resume_pending) return;
  self->state.resume_pending = true;
  self->send(caf::actor_cast<sampler_impl>(self), resume_atom::value);
}

void fail_flight(Pointer self, BatchInFlight& flight, const std::string& message) {
  auto& s = self->state;
  const int64_t batch = flight.batch;
  const bool current = flight.generation == s.generation;
  kill(s, flight);
  if (current) fail_epoch(self, batch, message);
}

void flight_done(Pointer self, BatchInFlight& flight) {
  auto& s = self->state;
  MiniBatch batch = flight.assembly.finish();
  const int64_t index = flight.batch;
  const SampleKey key = flight.assembly.key();
  const bool current = flight.generation == s.generation;
  kill(s, flight);
  if (current) {
    // Handed over by move: only a consumer in another process makes CAF encode it.
    SampledBatch done = SampledBatch::of(std::move(batch), key);
    done.pool = s.pool;
    auto waiting = s.waiting.find(index);
    if (waiting != s.waiting.end()) {
      waiting->second.deliver(std::move(done));
      s.waiting.erase(waiting);
    } else {
      s.ready.emplace(index, std::move(done));
    }
  }
  schedule_resume(self);
}

// The batch's columns for the node's cache: where each wanted attribute's rows go, x then y.
std::vector<CacheColumn> cache_columns(BatchAssembly& a, int part) {
  std::vector<CacheColumn> columns;
  for (Rows rows : kRows) {
    if (!a.wants(rows)) continue;
    const RowsTarget t = a.rows_target(part, rows);
    columns.push_back({t.base, t.row_bytes});
  }
  return columns;
}

// Adds the rows and bytes `fetch` asks for to `counts`.
void count_asked(const ChannelFetch& fetch, RemoteRowCounts& counts) {
  bool rows_counted = false;
  for (int k = 0; k < 2; ++k) {
    if (!fetch.asked[k]) continue;
    counts.bytes += fetch.targets[k].bytes();
    if (!rows_counted) counts.rows += fetch.targets[k].positions.size();
    rows_counted = true;
  }
}

// Submits `part`'s rows to its feature channel. With the node's cache, the channel's thread
// looks them up first (the hits land in the batch while this thread gathers its own rows),
// requests only the misses, and offers them to the cache once they landed.
void fetch_over_channel(SamplerState& s, BatchInFlight& flight, int part) {
  BatchAssembly& a = flight.assembly;
  ChannelFetch& fetch = flight.fetches[part];
  const std::shared_ptr<RemoteRowCounts>& counts = s.options.remote_counts;
  for (Rows r : kRows) {
    const int k = static_cast<int>(r);
    fetch.asked[k] = a.wants(r);
    if (!fetch.asked[k]) continue;
    fetch.ids[k] = s.next_request_id++;
    fetch.targets[k] = a.rows_target(part, r);
    if (!s.options.cache) encode_feature_request(a, part, r, fetch.ids[k], s.encoder, fetch.requests[k]);
  }
  fetch.prepare = nullptr;
  fetch.finish = nullptr;
  if (s.options.cache) {
    CacheMisses& m = flight.misses[part];
    m.columns = cache_columns(a, part);
    const Span<const int64_t> ids = a.rows_of(part), positions = a.positions_of(part);
    fetch.prepare = [cache = s.options.cache, counts, &m, &a, ids, positions](ChannelFetch& f) {
      m.which.clear();
      cache->lookup(ids, positions, m.columns, m.which);
      m.ids.resize(m.which.size());
      m.positions.resize(m.which.size());
      for (size_t j = 0; j < m.which.size(); ++j) {
        m.ids[j] = ids[m.which[j]];
        m.positions[j] = positions[m.which[j]];
      }
      for (Rows r : kRows) {
        const int k = static_cast<int>(r);
        if (!f.asked[k]) continue;
        f.targets[k].positions = Span<const int64_t>(m.positions);
        f.asked[k] = !m.ids.empty();  // every row cached: nothing to ask
        if (f.asked[k]) encode_feature_request(a, r, Span<const int64_t>(m.ids), f.ids[k], m.encoder, f.requests[k]);
      }
      if (counts) count_asked(f, *counts);
    };
    fetch.finish = [cache = s.options.cache, &m, ids, positions](ChannelFetch&) {
      cache->admit(ids, positions, m.columns, Span<const size_t>(m.which));
    };
  }
  if (counts && !s.options.cache) count_asked(fetch, *counts);
  ++flight.pending;
  ++flight.io_outstanding;
  s.parts[part].channel->submit(flight.id, &fetch);
}

void on_feature_answer(Pointer self, BatchInFlight& flight) {
  if (--flight.pending == 0) flight_done(self, flight);
}

void start_rows(Pointer self, BatchInFlight& flight) {
  auto& s = self->state;
  BatchAssembly& a = flight.assembly;
  a.start_rows();
  flight.pending = 0;
  if (s.options.remote_counts) ++s.options.remote_counts->batches;
  for (int part = 0; part < a.num_parts(); ++part) {
    if (a.is_local(part) || a.rows_of(part).empty()) continue;
    check_not_lost(s, part);
    if (s.parts[part].other_process) {
      fetch_over_channel(s, flight, part);
      continue;
    }
    for (Rows rows : kRows) {
      if (!a.wants(rows)) continue;
      Encoded request;
      const uint64_t id = s.next_request_id++;
      encode_feature_request(a, part, rows, id, s.encoder, request.bytes);
      ++flight.pending;
      auto handle = self->request(s.parts[part].actor, s.options.deadline, feature_atom::value, std::move(request));
      const caf::message_id mid = handle.id();
      std::move(handle).then(
              [self, flight_id = flight.id, part, rows, id, mid](Encoded& reply) {
                runtime::forget_request_timeout(self, mid);
                BatchInFlight* j = find_flight(self->state, flight_id);
                if (j == nullptr || j->dead) return;
                try {
                  take_feature_reply(j->assembly, part, rows, id, Span<const char>(reply.bytes));
                } catch (const Error& e) {
                  fail_flight(self, *j, e.what());
                  return;
                }
                on_feature_answer(self, *j);
              },
              [self, flight_id = flight.id, part, mid](caf::error& e) {
                runtime::forget_request_timeout(self, mid);
                BatchInFlight* j = find_flight(self->state, flight_id);
                if (j == nullptr || j->dead) return;
                fail_flight(self, *j, part_name(part) + ": feature request failed: " +
                                       request_failure(self->system(), e, self->state.options.deadline));
              });
    }
  }
  // Our own rows while the others are fetched.
  for (int part = 0; part < a.num_parts(); ++part) {
    if (a.is_local(part)) a.gather_local(part);
  }
  if (flight.pending == 0) flight_done(self, flight);
}

void run_hop(Pointer self, BatchInFlight& flight);

void hop_done(Pointer self, BatchInFlight& flight) {
  try {
    flight.assembly.finish_hop();
    if (flight.assembly.sampling()) {
      run_hop(self, flight);
    } else {
      start_rows(self, flight);
    }
  } catch (const Error& e) {
    fail_flight(self, flight, e.what());
  }
}

void run_hop(Pointer self, BatchInFlight& flight) {
  auto& s = self->state;
  BatchAssembly& a = flight.assembly;
  flight.pending = 0;
  for (int part = 0; part < a.num_parts(); ++part) {
    if (!a.hop_needs(part) || a.is_local(part)) continue;
    check_not_lost(s, part);
    Encoded request;
    const uint64_t id = s.next_request_id++;
    encode_hop_request(a, part, id, s.encoder, request.bytes);
    ++flight.pending;
    auto handle = self->request(s.parts[part].actor, s.options.deadline, hop_atom::value, std::move(request));
    const caf::message_id mid = handle.id();
    std::move(handle).then(
            [self, flight_id = flight.id, part, id, mid](Encoded& reply) {
              runtime::forget_request_timeout(self, mid);
              BatchInFlight* j = find_flight(self->state, flight_id);
              if (j == nullptr || j->dead) return;
              try {
                take_hop_reply(j->assembly, part, id, Span<const char>(reply.bytes));
              } catch (const Error& e) {
                fail_flight(self, *j, e.what());
                return;
              }
              if (--j->pending == 0) hop_done(self, *j);
            },
            [self, flight_id = flight.id, part, mid](caf::error& e) {
              runtime::forget_request_timeout(self, mid);
              BatchInFlight* j = find_flight(self->state, flight_id);
              if (j == nullptr || j->dead) return;
              fail_flight(self, *j, part_name(part) + ": hop request failed: " +
                                     request_failure(self->system(), e, self->state.options.deadline));
            });
  }
  // Our own part while the others work.
  for (int part = 0; part < a.num_parts(); ++part) {
    if (a.hop_needs(part) && a.is_local(part)) a.sample_local(part);
  }
  if (flight.pending == 0) hop_done(self, flight);
}

void start_flight(Pointer self, int64_t batch) {
  auto& s = self->state;
  std::unique_ptr<BatchInFlight> fresh;
  if (!s.spare_flights.empty()) {
    fresh = std::move(s.spare_flights.back());
    s.spare_flights.pop_back();
  } else {
    std::vector<PartitionStores> local(s.book.num_parts());
    local[s.part] = s.stores;
    fresh = std::make_unique<BatchInFlight>(s.book, s.options, std::move(local));
  }
  BatchInFlight& flight = *fresh;
  flight.id = s.next_flight_id++;
  flight.generation = s.generation;
  flight.batch = batch;
  flight.pending = 0;
  flight.io_outstanding = 0;
  flight.dead = false;
  s.flights.emplace(flight.id, std::move(fresh));
  ++s.live;
  try {
    MiniBatch recycled;
    recycled.x = s.pool->take();
    flight.assembly.start(s.plan->batch(batch), s.plan->key(batch), std::move(recycled), s.plan->times_of(batch));
    if (s.plan->excludes_edges()) {
      flight.assembly.exclude_edges(s.plan->excluded_src_of(batch), s.plan->excluded_dst_of(batch));
    }
    run_hop(self, flight);
  } catch (const Error& e) {
    fail_flight(self, flight, e.what());
  }
}

}  // namespace

void fail_epoch(Pointer self, int64_t batch, const std::string& message) {
  auto& s = self->state;
  // The epoch cannot go on: stop every batch in flight (their answers are dropped), and
  // fail from the first of them, so that no consumer waits for a batch that was stopped.
  std::vector<BatchInFlight*> live;
  int64_t first_stopped = batch;
  for (auto& [id, flight] : s.flights) {
    if (flight->dead || flight->generation != s.generation) continue;
    live.push_back(flight.get());
    first_stopped = std::min(first_stopped, flight->batch);
  }
  for (BatchInFlight* flight : live) kill(s, *flight);
  if (s.failure.empty()) {
    s.failure = "batch " + std::to_string(batch) + " of epoch " + std::to_string(s.plan ? s.plan->epoch : 0) + ": " +
                message;
    s.failed_batch = first_stopped;
  } else {
    s.failed_batch = std::min(s.failed_batch, first_stopped);
  }
  for (auto it = s.waiting.begin(); it != s.waiting.end();) {
    if (it->first >= s.failed_batch) {
      it->second.deliver(SampledBatch::failed(WireErrorCode::kInternal, s.failure));
      it = s.waiting.erase(it);
    } else {
      ++it;
    }
  }
}

void top_up(Pointer self) {
  auto& s = self->state;
  if (!s.plan || !s.failure.empty()) return;
  const int64_t limit = std::min<int64_t>(s.plan->num_batches(), s.claimed + s.options.prefetch);
  while (s.next_to_start < limit && s.live < s.options.prefetch && s.failure.empty()) {
    start_flight(self, s.next_to_start++);
  }
}

// The partitions message is answered once every channel reported its connection.
void on_fetch_done(Pointer self, uint64_t flight_id, int32_t part) {
  auto& s = self->state;
  if (part < 0 || part >= static_cast<int>(s.parts.size()) || !s.parts[part].channel) return;
  BatchInFlight* flight = find_flight(s, flight_id);
  if (flight == nullptr) return;
  ChannelFetch& fetch = flight->fetches[part];
  if (!fetch.reported.exchange(false)) return;  // not from the channel thread
  --flight->io_outstanding;
  if (flight->dead) {
    recycle_if_idle(s, *flight);
    return;
  }
  if (!fetch.error.empty()) {
    fail_flight(self, *flight, fetch.error);
    return;
  }
  on_feature_answer(self, *flight);
}

namespace {

// Makes `plan` the sampler's epoch: what is left of the previous one is superseded, and
// sampling starts at once, ahead of the first next.
Encoded begin_epoch(Pointer self, EpochPlan plan) {
  auto& s = self->state;
  ++s.generation;
  std::vector<BatchInFlight*> live;
  for (auto& [id, flight] : s.flights) {
    if (!flight->dead) live.push_back(flight.get());
  }
  for (BatchInFlight* flight : live) kill(s, *flight);
  for (auto& [batch, promise] : s.waiting) {
    promise.deliver(SampledBatch::failed(WireErrorCode::kBadRequest, "sampler: batch " + std::to_string(batch) +
                                                                         " was superseded by epoch " +
                                                                         std::to_string(plan.epoch)));
  }
  s.waiting.clear();
  s.ready.clear();
  s.failure.clear();
  s.failed_batch = -1;
  s.plan = std::move(plan);
  s.next_to_start = 0;
  s.claimed = 0;
  top_up(self);
  return ack(s, s.plan->num_batches());
}

}  // namespace

Encoded on_epoch(Pointer self, const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
                 bool shuffle) {
  auto& s = self->state;
  const std::vector<int64_t>* seeds = s.seeds.of(split);
  if (seeds == nullptr) {
    return error_reply(s, WireErrorCode::kBadRequest, "sampler: no split '" + split + "' (train, val or test)");
  }
  if (batch_size < 1) {
    return error_reply(s, WireErrorCode::kBadRequest, "sampler: batch size " + std::to_string(batch_size));
  }
  EpochPlan plan = plan_epoch(Span<const int64_t>(*seeds), batch_size, plan_seed, epoch, shuffle);
  if (s.options.config.temporal != TemporalMode::kNone) {
    // A node seed's neighbourhood is bounded by its own time.
    if (s.options.config.node_time.empty()) {
      return error_reply(s, WireErrorCode::kBadRequest,
                         "sampler: temporal sampling of node seeds reads each seed's time from the node times, and "
                         "the graph has none");
    }
    Span<const int64_t> time = s.options.config.node_time.as<int64_t>();
    plan.times.reserve(plan.order.size());
    for (int64_t seed : plan.order) plan.times.push_back(time[seed]);
  }
  return begin_epoch(self, std::move(plan));
}

Encoded on_link_plan(Pointer self, const Encoded& message) {
  auto& s = self->state;
  EpochPlan plan;
  try {
    plan = decode_link_plan(Span<const char>(message.bytes));
  } catch (const Error& e) {
    return error_reply(s, WireErrorCode::kBadRequest, std::string("sampler: ") + e.what());
  }
  // Seeds may be any partition's nodes (a link batch samples around both ends of its
  // edges and its negatives), but must be the graph's.
  const int64_t n = s.book.num_nodes();
  if (s.options.config.temporal != TemporalMode::kNone && plan.times.size() != plan.order.size()) {
    return error_reply(s, WireErrorCode::kBadRequest, "sampler: link plan: temporal sampling needs a time per seed");
  }
  for (const std::vector<int64_t>* ids : {&plan.order, &plan.excluded_src, &plan.excluded_dst}) {
    for (int64_t id : *ids) {
      if (id < 0 || id >= n) {
        return error_reply(s, WireErrorCode::kOutOfRange,
                           "sampler: link plan: node " + std::to_string(id) + " is outside the graph's " +
                               std::to_string(n) + " nodes");
      }
    }
  }
  return begin_epoch(self, std::move(plan));
}

caf::result<SampledBatch> on_next(Pointer self) {
  auto& s = self->state;
  if (!s.plan) return SampledBatch::failed(WireErrorCode::kBadRequest, "sampler: next before an epoch");
  const int64_t batch = s.claimed;
  if (batch >= s.plan->num_batches()) {
    return SampledBatch::failed(WireErrorCode::kBadRequest,
                                "sampler: all " + std::to_string(s.plan->num_batches()) + " batches of epoch " +
                                    std::to_string(s.plan->epoch) + " were taken");
  }
  ++s.claimed;
  auto ready = s.ready.find(batch);
  if (ready != s.ready.end()) {
    SampledBatch reply = std::move(ready->second);
    s.ready.erase(ready);
    // The next batch starts after this reply is out: a batch of local parts is built within
    // one handler, and topping up here would keep the consumer waiting for that build too
    // (its own work on the batch would then follow the build instead of overlapping it).
    schedule_resume(self);
    return reply;
  }
  if (!s.failure.empty() && batch >= s.failed_batch) return SampledBatch::failed(WireErrorCode::kInternal, s.failure);
  auto promise = self->make_response_promise<SampledBatch>();
  s.waiting.emplace(batch, promise);
  top_up(self);
  return promise;
}

void release_waiting(SamplerState& s, const std::string& why) {
  for (auto& [batch, promise] : s.waiting) promise.deliver(SampledBatch::failed(WireErrorCode::kInternal, why));
  s.waiting.clear();
}

}  // namespace partita::sampler_internal
