// The dataset cache: where named datasets (datasets/registry.h) are downloaded to, checked
// and unpacked, one folder per dataset that a reader reads as it is.
//
//   CACHE/NAME/                 the dataset, complete and verified (it holds kMarkerFile)
//   CACHE/.downloads/NAME/      downloads in progress: FILE.part resumes, FILE is verified
//   CACHE/.staging-NAME-XXXXXX  unpacking: renamed to CACHE/NAME when whole, else removed
//
// A dataset's folder appears by one rename, only once every file is downloaded, matches
// its recorded SHA-256 and is unpacked, so a killed or failed download never leaves a
// folder a job could mistake for the dataset; a download cut short is resumed by the next.
#pragma once

#include <string>

#include "datasets/http_download.h"
#include "datasets/registry.h"

namespace partita::datasets {

// Written last into a dataset's folder: its name, URLs and the sums checked or computed.
constexpr const char* kMarkerFile = ".partita-dataset.json";

// Environment variables the defaults come from.
constexpr const char* kCacheEnv = "PARTITA_DATASETS_DIR";
constexpr const char* kMirrorEnv = "PARTITA_DATASETS_MIRROR";
// A folder of local copies, NAME/ each, in the dataset's layout (the project's test data):
// a copy there holding every content file is used instead of the cache, as it is.
constexpr const char* kLocalCopiesEnv = "PARTITA_DATA_DIR";

struct FetchOptions {
  std::string cache_dir;  // empty: default_cache_dir()
  // A base URL serving every file as MIRROR/NAME/FILE (FILE: the last component of its
  // canonical URL), instead of the publishers. Empty: $PARTITA_DATASETS_MIRROR, if set.
  std::string mirror;
  DownloadOptions download;
  int lock_timeout_s = 3600;  // waiting for another process downloading the same dataset
};

// $PARTITA_DATASETS_DIR, else $XDG_CACHE_HOME/partita/datasets, else
// ~/.cache/partita/datasets. UsageError when none can be formed (no HOME).
std::string default_cache_dir();

// `cache_dir`, or default_cache_dir() when empty.
std::string cache_dir_or_default(const std::string& cache_dir);

// Where `d` lives in the cache (whether or not it is there yet).
std::string dataset_dir(const NamedDataset& d, const std::string& cache_dir);

// True when the cache holds `d` whole (its folder with its marker).
bool is_cached(const NamedDataset& d, const std::string& cache_dir);

// $PARTITA_DATA_DIR/NAME when that folder holds every content file of `d`, else "".
std::string local_copy(const NamedDataset& d);

// Where a job reads `d` from: local_copy(d) if there is one, else its cache folder.
std::string named_dataset_dir(const NamedDataset& d, const std::string& cache_dir);

// The URL `file` is fetched from: `mirror` (or $PARTITA_DATASETS_MIRROR when empty) with
// the dataset's name and the file's name, or the canonical URL.
std::string source_url(const NamedDataset& d, const RemoteFile& file, const std::string& mirror);

// Makes sure the cache holds `d` and returns its folder: nothing to do when it is cached;
// else downloads each file (resuming a partial download), checks every recorded SHA-256,
// unpacks into a staging folder, checks the contents' sums and that every content file is
// there, and renames the folder into place. Throws Error naming the URL or file and the
// problem (unreachable server, HTTP error, a download cut short, a checksum mismatch: the
// bad download is removed, an archive lacking a file the reader needs); the cache then
// holds no folder for `d`, only what a later call resumes from. A dataset with no recorded
// sum (needs_first_sum) is accepted as downloaded, with a warning; the marker keeps the sums
// computed. Concurrent calls for the same dataset wait for each other (a file lock).
std::string fetch_dataset(const NamedDataset& d, const FetchOptions& options = {});

}  // namespace partita::datasets
