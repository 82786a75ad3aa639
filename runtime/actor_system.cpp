#include "runtime/actor_system.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <thread>

#include "runtime/cluster/cluster_protocol.h"
#include "runtime/errors.h"
#include "runtime/tls/caf_gateway.h"

namespace partita::runtime {

void configure(caf::actor_system_config& config, const ActorSystemOptions& options) {
  // Work sharing (one shared queue) instead of CAF's default work stealing: our actors
  // mostly wait on each other's replies, and stealing threads spin and sleep in turns, which
  // adds latency to every hop. Measured on this machine class (2 cores, loopback), together
  // with middleman.workers=0 below: a 64-byte round trip drops from ~275 us to ~90 us.
  config.set("scheduler.policy", caf::atom("sharing"));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  config.set("scheduler.max-threads",
             static_cast<size_t>(options.threads > 0 ? static_cast<unsigned>(options.threads) : cores));
  if (options.networking) {
    config.load<caf::io::middleman>();
    // Deserialise in the multiplexer thread instead of handing every message to a
    // middleman worker pool: the hand-off costs a context switch per message, and on two
    // cores the extra threads compete with the scheduler. Measured: large-message
    // throughput rises from ~0.35x to ~0.5x raw TCP on loopback.
    config.set("middleman.workers", static_cast<size_t>(0));
    // CAF leaves heartbeats off, so a peer that vanishes without closing its socket (a
    // machine that loses power, a network partition) goes unnoticed until the next write
    // fails, possibly never. With heartbeats every interval and connections dropped after
    // connection_timeout of silence, every proxy of the lost node receives a down/exit
    // message within seconds, which is what turns a lost daemon into an error, not a hang.
    // (A killed process is noticed at once either way: its kernel closes the socket.)
    config.set("middleman.heartbeat-interval", caf::timespan{options.heartbeat_interval});
    config.set("middleman.connection-timeout", caf::timespan{options.connection_timeout});
  }
  config.add_error_category(kErrorCategory, [](uint8_t code, caf::atom_value, const caf::message& context) {
    return render_runtime_error(code, context);
  });
  add_cluster_types(config);
  for (const auto& hook : options.hooks) hook(config);
}

ActorSystem::ActorSystem(const ActorSystemOptions& options)
    : config_(std::make_unique<caf::actor_system_config>()) {
  configure(*config_, options);
  system_ = std::make_unique<caf::actor_system>(*config_);
  if (options.networking) {
    gateway_ = tls::start_gateway(*system_, tls::process_credentials());
  }
}

ActorSystem::~ActorSystem() {
  if (gateway_) tls::stop_gateway(*system_, std::move(gateway_));
  system_.reset();  // before the config it refers to
}

}  // namespace partita::runtime

namespace partita::runtime {

caf::error make_runtime_error(RuntimeErrc code, std::string what) {
  return caf::error(static_cast<uint8_t>(code), kErrorCategory, caf::make_message(std::move(what)));
}

std::string render_runtime_error(uint8_t code, const caf::message& context) {
  if (context.match_elements<std::string>()) return context.get_as<std::string>(0);
  return "partita runtime error " + std::to_string(code);
}

std::string describe(caf::actor_system& system, const caf::error& error) {
  if (error.category() == kErrorCategory) return render_runtime_error(error.code(), error.context());
  return system.render(error);
}

}  // namespace partita::runtime
