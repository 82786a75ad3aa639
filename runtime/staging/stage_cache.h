// The receiving end of data staging: a node's cache of staged folders. A job's driver sends
// a node the manifest of what it will read (runtime/staging/folder_manifest.h: units, e.g.
// the top files of a partition folder and the part<i>/ folders the node hosts) and a
// request channel to fetch them from (runtime/staging/stage_server.h); the cache fetches
// the units it lacks and answers with a folder that holds them all, which the job's actors
// then open as if it were the driver's.
//
//   CACHE/units/KEY/          one unit's files (KEY: the unit's key, 16 hex digits) and
//                             MANIFEST.json, its description
//   CACHE/folders/KEY/        a staged folder: for each unit a relative symlink at its
//                             mount (a unit mounted at "" links each of its files), and
//                             STAGED.json, the units it links
//
// Invariants: a unit folder appears under its key only complete and verified (it is
// written in a temporary sibling and renamed, base/staging_dir.h: a crash leaves a
// temporary name, removed later, never a half unit under a valid one); every file is
// checked against the manifest before use, both when it arrives (a mismatch is an Error
// naming the file, and nothing is kept) and when a cached unit is reused (a mismatch is
// logged naming the file, and the unit is fetched again). A unit already cached is not
// copied again, whatever job or path it came from. Stagings are serialised per cache
// folder (a lock file, across processes). The cache is bounded: after a staging, the
// least recently used units that staging did not use are removed until the cache holds at
// most `max_bytes` (0: no bound), with the folders that linked them; a unit in use by a
// running job may go (its open files stay readable until closed; a later staging fetches
// it again).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/staging/folder_manifest.h"
#include "runtime/transport/request_channel.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {

struct StageCacheOptions {
  std::string dir;  // created if missing
  uint64_t max_bytes = 0;  // 0: unbounded
  std::chrono::milliseconds deadline{60000};  // connecting, each chunk, and waiting for the lock
  // The bytes one request asks for: a file is fetched in ranges of this size (at most
  // wire::kMaxStageChunkBytes).
  uint64_t request_bytes = wire::kMaxStageChunkBytes;
  // Requests sent before the reply to the first of them is read (at least 1): the server
  // then starts on the next range (or the next file) while this end still receives the last.
  size_t requests_in_flight = 4;
};

// What a staging did.
struct StageOutcome {
  std::string folder;         // absolute: the staged folder
  uint64_t bytes_copied = 0;  // fetched from the server
  int64_t files_copied = 0;
  int64_t units_copied = 0, units_reused = 0;
  std::vector<std::string> damaged;  // cached files that failed their check (fetched again)
  uint64_t cache_bytes = 0;   // the cache's units after the staging (and its eviction)
  int64_t evicted_units = 0;
};

// The keys of the complete units in the cache at `dir` (at most `limit`; none when it does
// not exist): what a node reports to its head. Reads the folder's names, not the files.
std::vector<std::string> list_cached_units(const std::string& dir, size_t limit);
// The bytes of the units in the cache at `dir` (0 when it does not exist), as
// StageCache::cached_bytes: what a node reports to its head.
uint64_t cached_unit_bytes(const std::string& dir);

class StageCache {
 public:
  // Creates the folder, removes temporary folders left by processes that died. Throws
  // Error naming the folder when it cannot.
  explicit StageCache(StageCacheOptions options);
  StageCache(const StageCache&) = delete;
  StageCache& operator=(const StageCache&) = delete;

  const StageCacheOptions& options() const { return options_; }

  // Stages `units` (mounts distinct) from the server at `offer` as above. Throws Error
  // naming the server, the unit or the file when a fetch or a check fails, or when a file
  // or a mount is named as the cache's own (MANIFEST.json, STAGED.json at the top) or
  // a top file as a mount, or, before anything is fetched, when the units it lacks would
  // not fit on the cache's file system (naming the bytes needed and free).
  StageOutcome stage(const std::vector<StagedUnit>& units, const ChannelOffer& offer, uint32_t server);

  // The bytes of the units in the cache now.
  uint64_t cached_bytes() const;

 private:
  StageCacheOptions options_;
};

}  // namespace partita::runtime
