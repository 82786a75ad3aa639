// The node's side of data staging as an actor type: a job's driver spawns a "stager" on
// each node it places partitions on (runtime::Runtime::spawn, owned by the driver like the
// job's other actors) and asks it to stage, with one message:
//
//   stage(request) -> outcome
//
// where request is JSON {"units": the manifest (runtime/staging/folder_manifest.h), "host",
// "port", "token", "client": the request channel to fetch from (a ChannelOffer of the
// driver's StageServer)} and outcome is JSON of a StageOutcome (runtime/staging/
// stage_cache.h). A request that is not such JSON, or a staging that fails, is answered
// with an error naming the problem (the file, the unit, the server). Both are text, so
// nothing needs registering with CAF.
//
// The stager is a detached actor: a staging blocks its own thread (every wait with the
// cache's deadline), not the daemon's scheduler. It answers one stage request and stops.
#pragma once

#include <caf/atom.hpp>

#include <string>

#include "runtime/host.h"
#include "runtime/staging/stage_cache.h"

namespace partita::runtime {

using stage_atom = caf::atom_constant<caf::atom("p_stage")>;

constexpr const char* kStagerType = "stager";

// Registers the stager, staging into one cache with `options`, shared by the daemon's
// stagers and made at the first spawn (a daemon that stages nothing creates no folder);
// a cache that cannot be made fails that spawn with the error naming the folder.
void add_stager_type(ActorTypeRegistry& registry, StageCacheOptions options);

// The request and the outcome as JSON, for the driver and the stager alike.
std::string stage_request_json(const std::vector<StagedUnit>& units, const ChannelOffer& offer);
StageOutcome stage_outcome_from_json(const std::string& text);

}  // namespace partita::runtime
