// The sampler actor's partitions: their actors, the feature channels and direct connections
// to the nodes of those in other processes, and their losses.
#include <caf/io/middleman.hpp>
#include <spdlog/spdlog.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/sampler_state.h"
#include "base/error.h"
#include "runtime/tls/caf_gateway.h"

namespace partita::sampler_internal {

void finish_wiring_if_done(Pointer self) {
  auto& s = self->state;
  if (s.connecting > 0 || !s.wiring) return;
  if (s.wiring_failure.empty()) {
    s.wiring->deliver(ack(s, 0));
  } else {
    // The partitions whose connection failed are lost: their batches fail, naming them.
    s.wiring->deliver(error_reply(s, WireErrorCode::kInternal, s.wiring_failure));
  }
  s.wiring.reset();
  self->become(ready(self));
}

namespace {

void channel_failed(SamplerState& s, int part, const std::string& why) {
  if (s.wiring_failure.empty()) s.wiring_failure = why;
  if (s.parts[part].lost.empty()) s.parts[part].lost = why;
}

}  // namespace

void on_channel_connected(Pointer self, int32_t part) {
  auto& s = self->state;
  if (part < 0 || part >= static_cast<int>(s.parts.size()) || !s.parts[part].channel) return;
  ChannelWorker& worker = *s.parts[part].channel;
  if (!worker.connected() || s.parts[part].connection_reported) return;  // not from the channel's thread
  s.parts[part].connection_reported = true;
  --s.connecting;
  if (std::string why = worker.failure(); !why.empty()) channel_failed(s, part, why);
  finish_wiring_if_done(self);
}

// Connects this node to the node of partition `part` at `address`, so that messages to its
// actor go there directly; answered like a channel (one less connection to wait for).
void connect_directly(Pointer self, int part, const runtime::Endpoint& address, const caf::node_id& expected) {
  auto& s = self->state;
  ++s.connecting;
  const std::string where = address.to_string();
  self->request(runtime::tls::middleman_actor(self->system()), s.options.deadline, caf::connect_atom::value, address.host,
                address.port)
      .then(
          [self, part, where, expected](const caf::node_id& node, caf::strong_actor_ptr&, std::set<std::string>&) {
            auto& st = self->state;
            --st.connecting;
            if (node != expected && st.wiring_failure.empty()) {
              st.wiring_failure = part_name(part) + ": " + where + " is not the node its actor lives on";
            }
            finish_wiring_if_done(self);
          },
          [self, part, where](caf::error& e) {
            auto& st = self->state;
            --st.connecting;
            if (st.wiring_failure.empty()) {
              st.wiring_failure = part_name(part) + ": cannot connect to its node at " + where + ": " +
                                  request_failure(self->system(), e, st.options.deadline);
            }
            finish_wiring_if_done(self);
          });
}

caf::result<Encoded> on_partitions(Pointer self, const std::vector<caf::actor>& actors,
                                   const std::vector<std::string>& addresses) {
  auto& s = self->state;
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
                    [owner = self->address(), part](uint64_t flight) {
                      if (auto actor = caf::actor_cast<caf::actor>(owner)) {
                        caf::anon_send(actor, io_done_atom::value, flight, static_cast<int32_t>(part));
                      }
                    });
              } catch (const Error& e) {
                --st.connecting;
                channel_failed(st, part, part_name(part) + ": channel request failed: " + e.what());
                finish_wiring_if_done(self);
              }
            },
            [self, part](caf::error& e) {
              auto& st = self->state;
              --st.connecting;
              channel_failed(st, part, part_name(part) + ": channel request failed: " +
                                           request_failure(self->system(), e, st.options.deadline));
              finish_wiring_if_done(self);
            });
  }
  if (s.connecting == 0) {
    self->become(ready(self));
    return ack(s, 0);
  }
  auto promise = self->make_response_promise<Encoded>();
  s.wiring = promise;
  self->become(wiring(self));
  return promise;
}

void check_not_lost(const SamplerState& s, int part) {
  if (!s.parts[part].lost.empty()) throw Error(s.parts[part].lost);
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
    bool busy = false;
    for (auto& [id, flight] : s.flights) busy = busy || (!flight->dead && flight->generation == s.generation);
    // A partition stopped on purpose (user_shutdown: its job ends, done or cancelled) is no
    // fault of the cluster: info. Any other reason is a lost partition: a warning. Either way
    // a batch still waiting on it fails its epoch.
    if (msg.reason == caf::exit_reason::user_shutdown) {
      spdlog::info("sampler of partition {}: {}", s.part, p.lost);
    } else {
      spdlog::warn("sampler of partition {}: {}", s.part, p.lost);
    }
    if (busy) {
      int64_t first = s.next_to_start;
      for (auto& [id, flight] : s.flights) {
        if (!flight->dead && flight->generation == s.generation) first = std::min(first, flight->batch);
      }
      fail_epoch(self, first, p.lost);
    }
  }
}

}  // namespace partita::sampler_internal
