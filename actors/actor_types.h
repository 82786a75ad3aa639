// The actor types a node daemon can spawn for a job, by name (runtime/host.h).
#pragma once

#include "graph/hop_sampler.h"
#include "runtime/host.h"

namespace partita {

// Registers:
//   "partition": one part of a partition folder, served by a partition actor. Settings:
//     dir (the folder, as the daemon's machine sees it), part, fanouts ("15,10,5"),
//     replace, disjoint and hop_independent ("true"/"false", default false; SamplerConfig),
//     temporal (none, node or edge: temporal sampling, which needs disjoint; the folder's
//     node times of every part and the part's edge times are loaded for it) and
//     temporal_strategy (uniform or last), channel_host (where its
//     feature channel listens, an address the samplers reach; default 127.0.0.1),
//     features (where its attributes are kept: auto, memory, mapped or disk, default auto;
//     partitioner/partition_stores.h).
//   "sampler": the sampler of the trainer placed with one part (actors/sampler_actor.h),
//     which reads that part directly (sharing a partition actor's stores on the same
//     daemon) and samples its training nodes. Settings: dir, part, fanouts, replace,
//     disjoint as for "partition"; prefetch (batches in flight, default 2), deadline_ms
//     (per remote request, default 60000); share and shares (default 0 and 1): it serves
//     the share-th of `shares` contiguous slices of the part's train, val and test nodes
//     (trainer t of k per partition gets share t % k of k); features as for "partition";
//     feature_cache_mb (default 0: none) and feature_cache_policy (degree or sieve,
//     default degree): the node's cache of other partitions' rows (graph/row_cache.h),
//     one per partition and process, shared by the samplers of that partition; labels
//     (default true; false: batches carry no labels, as link prediction's); seed_order (id,
//     the default, or time: each split's seeds by their node time, so that an unshuffled
//     epoch cuts its batches in time order).
void register_actor_types(runtime::ActorTypeRegistry& registry);

// The setting 'dir' of a spawn request: a partition folder on this machine. The path must
// pass runtime::path_setting (absolute, no '.' or '..' components), and the folder must hold
// a META.json file. Every folder that is not a partition folder (missing, unreadable, a
// file, a folder without META.json) gets the same UsageError, "setting 'dir': '/x' is not
// a partition folder on this node", so a spawn request cannot probe which files exist;
// only inside a real partition folder do errors say more. Used by every actor type that
// opens a partition folder (the partition, the sampler, the trainers, the embedding shard).
std::string partition_dir_setting(const runtime::Settings& settings);
// The same check for a folder a setting carries inside another value (a trainer's job).
void require_partition_folder(const std::string& dir, const std::string& setting);

// The sampler config of a partition actor's settings for its part's topology (the one
// fanout list applies to each of its edge types); throws UsageError naming the setting.
SamplerConfig sampler_config_from(const runtime::Settings& settings, const Topology& topology);

}  // namespace partita
