// The driver's side of data staging, whole: stage some folders on every node of a runtime
// at once (a stager per node, runtime/staging/stager.h, each fetching from this process's
// StageServer) and wait for every node's outcome. What a YAML job stages (its partitions,
// training/cluster_job.h) and what a Python job stages (its working folder,
// training/python_job.h) both go through here.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/runtime.h"
#include "runtime/staging/stage_cache.h"
#include "runtime/staging/stage_server.h"

namespace partita::runtime {

// Stages `served[node]` on each node of `rt` (one list per node), served on `host` (an
// address of this machine the nodes reach) with `deadline` for each node's staging, and
// returns each node's outcome. The stagers are gone when it returns (a node lists the
// actors it runs by owner: one left over would show as another job), waited for at most
// 5 s. Throws Error "staging WHAT on NODE failed: ..." naming the node.
std::vector<StageOutcome> stage_on_nodes(Runtime& rt, const std::vector<std::vector<ServedUnit>>& served,
                                         const std::string& host, std::chrono::milliseconds deadline,
                                         const std::string& what);

}  // namespace partita::runtime
