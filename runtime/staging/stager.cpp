#include "runtime/staging/stager.h"

#include <spdlog/spdlog.h>

#include <caf/all.hpp>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "runtime/staging/stage_server.h"

namespace partita::runtime {

using nlohmann::json;

namespace {

std::string outcome_json(const StageOutcome& o) {
  return json{{"folder", o.folder},
              {"bytes_copied", o.bytes_copied},
              {"files_copied", o.files_copied},
              {"units_copied", o.units_copied},
              {"units_reused", o.units_reused},
              {"damaged", o.damaged},
              {"cache_bytes", o.cache_bytes},
              {"evicted_units", o.evicted_units}}
      .dump();
}

// Throws Error naming the field for anything but a request as stage_request_json writes it.
std::pair<std::vector<StagedUnit>, ChannelOffer> parse_request(const std::string& text) {
  const json in = json::parse(text, nullptr, false);
  const auto bad = [](const std::string& what) { return Error("staging request: " + what); };
  if (!in.is_object()) throw bad("not a JSON object");
  for (const char* field : {"port", "token", "client"}) {
    if (!in.contains(field) || !in[field].is_number_unsigned()) throw bad(std::string("needs '") + field + "' (an unsigned number)");
  }
  if (!in.contains("host") || !in["host"].is_string()) throw bad("needs 'host' (text)");
  if (!in.contains("units")) throw bad("needs 'units'");
  ChannelOffer offer;
  offer.host = in["host"].get<std::string>();
  const uint64_t port = in["port"].get<uint64_t>();
  if (port == 0 || port > 65535) throw bad("'port' " + std::to_string(port) + " is not a TCP port");
  offer.port = static_cast<uint16_t>(port);
  offer.token = in["token"].get<uint64_t>();
  const uint64_t client = in["client"].get<uint64_t>();
  if (client > UINT32_MAX) throw bad("'client' is out of range");
  offer.client = static_cast<uint32_t>(client);
  return {units_from_json(in["units"].dump()), offer};
}

caf::behavior stager(caf::event_based_actor* self, std::shared_ptr<StageCache> cache) {
  return {
      [self, cache](stage_atom, const std::string& request) -> caf::result<std::string> {
        // One staging per stager: it stops once this answer is sent, so that it never
        // lingers on the node beside the job's actors (whoever spawned it need not stop it).
        self->quit(caf::exit_reason::user_shutdown);  // the reason the host forgets a child by (runtime/host.cpp)
        try {
          const auto [units, offer] = parse_request(request);
          const StageOutcome outcome = cache->stage(units, offer, StageServer::kServerId);
          spdlog::info("staging: {} into {}: {} byte(s) in {} file(s) copied, {} unit(s) reused; cache {} bytes",
                       offer.host, outcome.folder, outcome.bytes_copied, outcome.files_copied, outcome.units_reused,
                       outcome.cache_bytes);
          return outcome_json(outcome);
        } catch (const std::exception& e) {
          spdlog::warn("staging failed: {}", e.what());
          return caf::make_error(caf::sec::runtime_error, std::string(e.what()));
        }
      },
  };
}

}  // namespace

void add_stager_type(ActorTypeRegistry& registry, StageCacheOptions options) {
  struct Shared {
    StageCacheOptions options;
    std::mutex mutex;
    std::shared_ptr<StageCache> cache;
  };
  auto shared = std::make_shared<Shared>();
  shared->options = std::move(options);
  registry.add(kStagerType, [shared](caf::actor_system& system, const Settings&) {
    std::shared_ptr<StageCache> cache;
    {
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (!shared->cache) shared->cache = std::make_shared<StageCache>(shared->options);
      cache = shared->cache;
    }
    return system.spawn<caf::detached>(stager, cache);
  });
}

std::string stage_request_json(const std::vector<StagedUnit>& units, const ChannelOffer& offer) {
  return json{{"units", json::parse(units_to_json(units))},
              {"host", offer.host},
              {"port", offer.port},
              {"token", offer.token},
              {"client", offer.client}}
      .dump();
}

StageOutcome stage_outcome_from_json(const std::string& text) {
  const json in = json::parse(text, nullptr, false);
  StageOutcome o;
  try {
    o.folder = in.at("folder").get<std::string>();
    o.bytes_copied = in.at("bytes_copied").get<uint64_t>();
    o.files_copied = in.at("files_copied").get<int64_t>();
    o.units_copied = in.at("units_copied").get<int64_t>();
    o.units_reused = in.at("units_reused").get<int64_t>();
    o.damaged = in.at("damaged").get<std::vector<std::string>>();
    o.cache_bytes = in.at("cache_bytes").get<uint64_t>();
    o.evicted_units = in.at("evicted_units").get<int64_t>();
  } catch (const json::exception& e) {
    throw Error(std::string("a stager's answer is not a staging outcome: ") + e.what());
  }
  return o;
}

}  // namespace partita::runtime
