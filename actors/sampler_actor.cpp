#include "actors/sampler_actor.h"

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "actors/feature_channel.h"
#include "actors/batch_messages.h"
#include "base/error.h"
#include "graph/epoch_plan.h"
#include "messages/codec.h"
#include "messages/sampled_batch.h"
#include "runtime/address.h"

namespace partita {

namespace {

using io_done_atom = caf::atom_constant<caf::atom("p_iodone")>;
using resume_atom = caf::atom_constant<caf::atom("p_resume")>;

// The actor's own interface: the protocol, plus what it tells itself. A channel thread
// reports an exchange with (io_done, flight, part) (flight 0: the channel's connection); a
// finished batch makes the actor send itself (resume) to start the next ones, so that a
// run of batches that need no remote answer still lets the mailbox in between.
using sampler_impl =
    sampler_actor::extend<caf::reacts_to<io_done_atom, uint64_t, int32_t>, caf::reacts_to<resume_atom>>;

constexpr Rows kRows[] = {Rows::kX, Rows::kY};

// One batch being sampled.
struct BatchInFlight {
  BatchInFlight(const PartitionBook& book, const SamplerOptions& options, std::vector<PartitionStores> local)
      : assembly(book, options.config, options.names, std::move(local)), fetches(book.num_parts()) {}
  uint64_t id = 0;
  uint64_t generation = 0;  // of the epoch it belongs to
  int64_t batch = -1;
  BatchAssembly assembly;
  int pending = 0;         // answers the current step awaits
  int io_outstanding = 0;  // fetches with channel threads, not yet reported
  bool dead = false;       // failed or discarded: kept only until its fetches come back
  std::vector<ChannelFetch> fetches;  // by part
};

struct Part {
  partition_actor actor;
  bool other_process = false;
  std::unique_ptr<ChannelWorker> channel;
  bool connection_reported = false;
  std::string lost;  // why the partition is gone; "" while it is there
};

struct SamplerState {
  PartitionBook book;
  int part = 0;
  PartitionStores stores;
  SamplerSeeds seeds;
  SamplerOptions options;

  Encoder encoder;
  uint64_t next_request_id = 1;
  uint64_t next_flight_id = 1;  // 0 is the channels' connection report

  // Wiring: the partitions message, answered once every channel is connected.
  bool wired = false;
  int connecting = 0;
  std::string wiring_failure;
  std::optional<caf::typed_response_promise<Encoded>> wiring;

  // The epoch: batches are started in plan order, at most `prefetch` beyond those claimed
  // by next messages and at most `prefetch` at once (the backpressure bound: CAF has none
  // of its own, and an unbounded queue of mini-batches exhausts memory).
  std::optional<EpochPlan> plan;
  uint64_t generation = 0;
  int64_t next_to_start = 0;
  int64_t claimed = 0;
  int live = 0;  // batches in flight, not dead
  std::map<int64_t, SampledBatch> ready;
  std::map<int64_t, caf::typed_response_promise<SampledBatch>> waiting;
  std::string failure;  // the first failed batch of the epoch, and why; later ones fail too
  int64_t failed_batch = -1;
  bool resume_pending = false;

  // Feature buffers, back from the consumers in this process: a few per batch in flight.
  std::shared_ptr<BufferPool> pool;
  std::map<uint64_t, std::unique_ptr<BatchInFlight>> flights;  // live and dead
  std::vector<std::unique_ptr<BatchInFlight>> spare_flights;
  // Last: destroyed first, so the channel threads are joined before the flights they fill.
  std::vector<Part> parts;

  static inline const char* name = "partita.sampler";
};

using Pointer = sampler_impl::stateful_pointer<SamplerState>;

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

BatchInFlight* find_flight(SamplerState& s, uint64_t id) {
  auto it = s.flights.find(id);
  return it == s.flights.end() ? nullptr : it->second.get();
}

// Back to the spare list once nothing (no channel thread) refers to it any more.
void recycle_if_idle(SamplerState& s, BatchInFlight& job) {
  if (!job.dead || job.io_outstanding > 0) return;
  auto it = s.flights.find(job.id);
  s.spare_flights.push_back(std::move(it->second));
  s.flights.erase(it);
}

void kill(SamplerState& s, BatchInFlight& job) {
  if (job.dead) return;
  job.dead = true;
  --s.live;
  recycle_if_idle(s, job);
}

void schedule_resume(Pointer self) {
  if (self->state.resume_pending) return;
  self->state.resume_pending = true;
  self->send(caf::actor_cast<sampler_impl>(self), resume_atom::value);
}

void fail_epoch(Pointer self, int64_t batch, const std::string& message) {
  auto& s = self->state;
  if (s.failure.empty()) {
    s.failure = "batch " + std::to_string(batch) + " of epoch " + std::to_string(s.plan ? s.plan->epoch : 0) + ": " +
                message;
    s.failed_batch = batch;
  }
  // The epoch cannot go on: stop every batch in flight (their answers are dropped).
  std::vector<BatchInFlight*> live;
  for (auto& [id, job] : s.flights) {
    if (!job->dead && job->generation == s.generation) live.push_back(job.get());
  }
  for (BatchInFlight* job : live) kill(s, *job);
  for (auto it = s.waiting.begin(); it != s.waiting.end();) {
    if (it->first >= s.failed_batch) {
      it->second.deliver(SampledBatch::failed(WireErrorCode::kInternal, s.failure));
      it = s.waiting.erase(it);
    } else {
      ++it;
    }
  }
}

void fail_job(Pointer self, BatchInFlight& job, const std::string& message) {
  auto& s = self->state;
  const int64_t batch = job.batch;
  const bool current = job.generation == s.generation;
  kill(s, job);
  if (current) fail_epoch(self, batch, message);
}

void check_not_lost(const SamplerState& s, int part) {
  if (!s.parts[part].lost.empty()) throw Error(s.parts[part].lost);
}

void job_done(Pointer self, BatchInFlight& job) {
  auto& s = self->state;
  MiniBatch batch = job.assembly.finish();
  const int64_t index = job.batch;
  const SampleKey key = job.assembly.key();
  const bool current = job.generation == s.generation;
  kill(s, job);
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

void on_feature_answer(Pointer self, BatchInFlight& job) {
  if (--job.pending == 0) job_done(self, job);
}

void start_rows(Pointer self, BatchInFlight& job) {
  auto& s = self->state;
  BatchAssembly& a = job.assembly;
  a.start_rows();
  job.pending = 0;
  for (int part = 0; part < a.num_parts(); ++part) {
    if (a.is_local(part) || a.rows_of(part).empty()) continue;
    check_not_lost(s, part);
    if (s.parts[part].other_process) {
      ChannelFetch& fetch = job.fetches[part];
      for (Rows rows : kRows) {
        const int k = static_cast<int>(rows);
        fetch.asked[k] = a.wants(rows);
        if (!fetch.asked[k]) continue;
        fetch.ids[k] = s.next_request_id++;
        fetch.targets[k] = a.rows_target(part, rows);
        encode_feature_request(a, part, rows, fetch.ids[k], s.encoder, fetch.requests[k]);
      }
      ++job.pending;
      ++job.io_outstanding;
      s.parts[part].channel->submit(job.id, &fetch);
      continue;
    }
    for (Rows rows : kRows) {
      if (!a.wants(rows)) continue;
      Encoded request;
      const uint64_t id = s.next_request_id++;
      encode_feature_request(a, part, rows, id, s.encoder, request.bytes);
      ++job.pending;
      self->request(s.parts[part].actor, s.options.deadline, feature_atom::value, std::move(request))
          .then(
              [self, job_id = job.id, part, rows, id](Encoded& reply) {
                BatchInFlight* j = find_flight(self->state, job_id);
                if (j == nullptr || j->dead) return;
                try {
                  take_feature_reply(j->assembly, part, rows, id, Span<const char>(reply.bytes));
                } catch (const Error& e) {
                  fail_job(self, *j, e.what());
                  return;
                }
                on_feature_answer(self, *j);
              },
              [self, job_id = job.id, part](caf::error& e) {
                BatchInFlight* j = find_flight(self->state, job_id);
                if (j == nullptr || j->dead) return;
                fail_job(self, *j, part_name(part) + ": feature request failed: " +
                                       request_failure(self->system(), e, self->state.options.deadline));
              });
    }
  }
  // Our own rows while the others are fetched.
  for (int part = 0; part < a.num_parts(); ++part) {
    if (a.is_local(part)) a.gather_local(part);
  }
  if (job.pending == 0) job_done(self, job);
}

void run_hop(Pointer self, BatchInFlight& job);

void hop_done(Pointer self, BatchInFlight& job) {
  try {
    job.assembly.finish_hop();
    if (job.assembly.sampling()) {
      run_hop(self, job);
    } else {
      start_rows(self, job);
    }
  } catch (const Error& e) {
    fail_job(self, job, e.what());
  }
}

void run_hop(Pointer self, BatchInFlight& job) {
  auto& s = self->state;
  BatchAssembly& a = job.assembly;
  job.pending = 0;
  for (int part = 0; part < a.num_parts(); ++part) {
    if (!a.hop_needs(part) || a.is_local(part)) continue;
    check_not_lost(s, part);
    Encoded request;
    const uint64_t id = s.next_request_id++;
    encode_hop_request(a, part, id, s.encoder, request.bytes);
    ++job.pending;
    self->request(s.parts[part].actor, s.options.deadline, hop_atom::value, std::move(request))
        .then(
            [self, job_id = job.id, part, id](Encoded& reply) {
              BatchInFlight* j = find_flight(self->state, job_id);
              if (j == nullptr || j->dead) return;
              try {
                take_hop_reply(j->assembly, part, id, Span<const char>(reply.bytes));
              } catch (const Error& e) {
                fail_job(self, *j, e.what());
                return;
              }
              if (--j->pending == 0) hop_done(self, *j);
            },
            [self, job_id = job.id, part](caf::error& e) {
              BatchInFlight* j = find_flight(self->state, job_id);
              if (j == nullptr || j->dead) return;
              fail_job(self, *j, part_name(part) + ": hop request failed: " +
                                     request_failure(self->system(), e, self->state.options.deadline));
            });
  }
  // Our own part while the others work.
  for (int part = 0; part < a.num_parts(); ++part) {
    if (a.hop_needs(part) && a.is_local(part)) a.sample_local(part);
  }
  if (job.pending == 0) hop_done(self, job);
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
  BatchInFlight& job = *fresh;
  job.id = s.next_flight_id++;
  job.generation = s.generation;
  job.batch = batch;
  job.pending = 0;
  job.io_outstanding = 0;
  job.dead = false;
  s.flights.emplace(job.id, std::move(fresh));
  ++s.live;
  try {
    MiniBatch recycled;
    recycled.x = s.pool->take();
    job.assembly.start(s.plan->batch(batch), s.plan->key(batch), std::move(recycled));
    run_hop(self, job);
  } catch (const Error& e) {
    fail_job(self, job, e.what());
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
void finish_wiring_if_done(SamplerState& s) {
  if (s.connecting > 0 || !s.wiring) return;
  if (s.wiring_failure.empty()) {
    s.wiring->deliver(ack(s, 0));
  } else {
    s.wiring->deliver(error_reply(s, WireErrorCode::kInternal, s.wiring_failure));
  }
  s.wiring.reset();
}

void channel_failed(SamplerState& s, int part, const std::string& why) {
  if (s.wiring_failure.empty()) s.wiring_failure = why;
  if (s.parts[part].lost.empty()) s.parts[part].lost = why;
}

void on_io_done(Pointer self, uint64_t job_id, int32_t part) {
  auto& s = self->state;
  if (part < 0 || part >= static_cast<int>(s.parts.size()) || !s.parts[part].channel) return;
  if (job_id == 0) {
    ChannelWorker& worker = *s.parts[part].channel;
    if (!worker.connected() || s.parts[part].connection_reported) return;
    s.parts[part].connection_reported = true;
    --s.connecting;
    if (std::string why = worker.failure(); !why.empty()) channel_failed(s, part, why);
    finish_wiring_if_done(s);
    return;
  }
  BatchInFlight* job = find_flight(s, job_id);
  if (job == nullptr) return;
  ChannelFetch& fetch = job->fetches[part];
  if (!fetch.reported.exchange(false)) return;  // not from the channel thread
  --job->io_outstanding;
  if (job->dead) {
    recycle_if_idle(s, *job);
    return;
  }
  if (!fetch.error.empty()) {
    fail_job(self, *job, fetch.error);
    return;
  }
  on_feature_answer(self, *job);
}

// Connects this node to the node of partition `part` at `address`, so that messages to its
// actor go there directly; answered like a channel (one less connection to wait for).
void connect_directly(Pointer self, int part, const runtime::Endpoint& address, const caf::node_id& expected) {
  auto& s = self->state;
  ++s.connecting;
  const std::string where = address.to_string();
  self->request(self->system().middleman().actor_handle(), s.options.deadline, caf::connect_atom::value, address.host,
                address.port)
      .then(
          [self, part, where, expected](const caf::node_id& node, caf::strong_actor_ptr&, std::set<std::string>&) {
            auto& st = self->state;
            --st.connecting;
            if (node != expected && st.wiring_failure.empty()) {
              st.wiring_failure = part_name(part) + ": " + where + " is not the node its actor lives on";
            }
            finish_wiring_if_done(st);
          },
          [self, part, where](caf::error& e) {
            auto& st = self->state;
            --st.connecting;
            if (st.wiring_failure.empty()) {
              st.wiring_failure = part_name(part) + ": cannot connect to its node at " + where + ": " +
                                  request_failure(self->system(), e, st.options.deadline);
            }
            finish_wiring_if_done(st);
          });
}

caf::result<Encoded> on_partitions(Pointer self, const std::vector<caf::actor>& actors,
                                   const std::vector<std::string>& addresses) {
  auto& s = self->state;
  if (s.wired) return error_reply(s, WireErrorCode::kBadRequest, "sampler: it has its partitions already");
  if (actors.size() != static_cast<size_t>(s.book.num_parts())) {
    return error_reply(s, WireErrorCode::kBadRequest,
                       "sampler: " + std::to_string(actors.size()) + " partition actors given for " +
                           std::to_string(s.book.num_parts()) + " partitions");
  }
  if (!addresses.empty() && addresses.size() != actors.size()) {
    return error_reply(s, WireErrorCode::kBadRequest,
                       "sampler: " + std::to_string(addresses.size()) + " addresses given for " +
                           std::to_string(actors.size()) + " partitions");
  }
  std::vector<std::optional<runtime::Endpoint>> endpoints(actors.size());
  for (int part = 0; part < s.book.num_parts(); ++part) {
    if (part != s.part && !actors[part]) {
      return error_reply(s, WireErrorCode::kBadRequest, "sampler: no actor given for " + part_name(part));
    }
    if (part == s.part || addresses.empty() || addresses[part].empty()) continue;
    try {
      endpoints[part] = runtime::parse_endpoint(addresses[part], "the address of " + part_name(part));
    } catch (const Error& e) {
      return error_reply(s, WireErrorCode::kBadRequest, std::string("sampler: ") + e.what());
    }
    if (!self->system().has_middleman()) {
      return error_reply(s, WireErrorCode::kBadRequest,
                         "sampler: an address for " + part_name(part) + ", but this process has no networking");
    }
  }
  s.wired = true;
  for (int part = 0; part < s.book.num_parts(); ++part) {
    if (part == s.part) continue;
    Part& p = s.parts[part];
    p.actor = caf::actor_cast<partition_actor>(actors[part]);
    p.other_process = actors[part].node() != self->node();
    self->monitor(actors[part]);
    if (!p.other_process) continue;
    // Of two nodes that both host samplers only one dials, so that they never connect to
    // each other at the same time; the connection serves both directions.
    if (endpoints[part] && self->node() < actors[part].node()) {
      connect_directly(self, part, *endpoints[part], actors[part].node());
    }
    ++s.connecting;
    self->request(p.actor, s.options.deadline, channel_atom::value)
        .then(
            [self, part](Encoded& reply) {
              auto& st = self->state;
              try {
                DecodedChannelOffer offer = decode_channel_offer(Span<const char>(reply.bytes));
                // The worker connects on its own thread and reports (io_done, 0, part).
                st.parts[part].channel =
                    std::make_unique<ChannelWorker>(
                    part, std::move(offer), st.options.deadline,
                    [owner = self->address(), part](uint64_t job) {
                      if (auto actor = caf::actor_cast<caf::actor>(owner)) {
                        caf::anon_send(actor, io_done_atom::value, job, static_cast<int32_t>(part));
                      }
                    });
              } catch (const Error& e) {
                --st.connecting;
                channel_failed(st, part, part_name(part) + ": channel request failed: " + e.what());
                finish_wiring_if_done(st);
              }
            },
            [self, part](caf::error& e) {
              auto& st = self->state;
              --st.connecting;
              channel_failed(st, part, part_name(part) + ": channel request failed: " +
                                           request_failure(self->system(), e, st.options.deadline));
              finish_wiring_if_done(st);
            });
  }
  if (s.connecting == 0) return ack(s, 0);
  s.wiring = self->make_response_promise<Encoded>();
  return caf::delegated<Encoded>();
}

Encoded on_epoch(Pointer self, const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
                 bool shuffle) {
  auto& s = self->state;
  if (!s.wired || s.wiring) {
    return error_reply(s, WireErrorCode::kBadRequest, "sampler: epoch before its partitions are set up");
  }
  const std::vector<int64_t>* seeds = s.seeds.of(split);
  if (seeds == nullptr) {
    return error_reply(s, WireErrorCode::kBadRequest, "sampler: no split '" + split + "' (train, val or test)");
  }
  if (batch_size < 1) {
    return error_reply(s, WireErrorCode::kBadRequest, "sampler: batch size " + std::to_string(batch_size));
  }
  // A new epoch supersedes what is left of the last one.
  ++s.generation;
  std::vector<BatchInFlight*> live;
  for (auto& [id, flight] : s.flights) {
    if (!flight->dead) live.push_back(flight.get());
  }
  for (BatchInFlight* flight : live) kill(s, *flight);
  for (auto& [batch, promise] : s.waiting) {
    promise.deliver(SampledBatch::failed(WireErrorCode::kBadRequest, "sampler: batch " + std::to_string(batch) +
                                                                         " was superseded by epoch " +
                                                                         std::to_string(epoch)));
  }
  s.waiting.clear();
  s.ready.clear();
  s.failure.clear();
  s.failed_batch = -1;
  s.plan = plan_epoch(Span<const int64_t>(*seeds), batch_size, plan_seed, epoch, shuffle);
  s.next_to_start = 0;
  s.claimed = 0;
  top_up(self);  // sampling starts now, ahead of the first next
  return ack(s, s.plan->num_batches());
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
    top_up(self);
    return reply;
  }
  if (!s.failure.empty() && batch >= s.failed_batch) return SampledBatch::failed(WireErrorCode::kInternal, s.failure);
  auto promise = self->make_response_promise<SampledBatch>();
  s.waiting.emplace(batch, promise);
  top_up(self);
  return promise;
}

void on_down(Pointer self, const caf::down_msg& msg) {
  auto& s = self->state;
  for (int part = 0; part < static_cast<int>(s.parts.size()); ++part) {
    Part& p = s.parts[part];
    if (!p.actor || p.actor.address() != msg.source) continue;
    if (p.lost.empty()) {
      p.lost = part_name(part) + ": lost: " +
               (msg.reason == caf::exit_reason::user_shutdown ? std::string("it shut down")
                                                               : self->system().render(msg.reason));
    }
    spdlog::warn("sampler of partition {}: {}", s.part, p.lost);
    bool busy = false;
    for (auto& [id, job] : s.flights) busy = busy || (!job->dead && job->generation == s.generation);
    if (busy) {
      int64_t first = s.next_to_start;
      for (auto& [id, job] : s.flights) {
        if (!job->dead && job->generation == s.generation) first = std::min(first, job->batch);
      }
      fail_epoch(self, first, p.lost);
    }
  }
}

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
    for (auto& [batch, promise] : st.waiting) promise.deliver(SampledBatch::failed(WireErrorCode::kInternal, why));
    st.waiting.clear();
    self->quit(msg.reason);
  });
  return {
      [self](partitions_atom, const std::vector<caf::actor>& actors, const std::vector<std::string>& addresses) {
        return on_partitions(self, actors, addresses);
      },
      [self](epoch_atom, const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
             bool shuffle) { return on_epoch(self, split, plan_seed, epoch, batch_size, shuffle); },
      [self](next_atom) { return on_next(self); },
      [self](io_done_atom, uint64_t job, int32_t part) { on_io_done(self, job, part); },
      [self](resume_atom) {
        self->state.resume_pending = false;
        top_up(self);
      },
  };
}

}  // namespace

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
  // Checks the stores against the book and the config now, not at the first batch.
  std::vector<PartitionStores> local(book.num_parts());
  local[part] = stores;
  BatchAssembly check(book, options.config, options.names, std::move(local));
  (void)check;
  return caf::actor_cast<sampler_actor>(system.spawn(sampler, std::move(book), part, std::move(stores),
                                                     std::move(seeds), std::move(options)));
}

}  // namespace partita
