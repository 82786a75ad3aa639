// What a folder holds, as data staging ships it (runtime/staging/): a unit is one folder's
// files (a partition's part<i>/, or the top files of a partition folder), each with its
// size and a content checksum, and the unit's key, a checksum over all of them. A node keeps
// units in its cache under their key (runtime/staging/stage_cache.h), so the same content is
// copied once, whatever path or job it came from.
//
// A file's checksum reuses what the file records: an array file (base/array_file.h, every
// .bin of the partition format) stores the checksum of its data in its 64-byte header, so
// its checksum here is that of the header bytes (which hold the data's): describing a unit
// reads 64 bytes per array file, and verifying a copy reads every byte (the header against
// this checksum, the data against the header's). Any other file (META.json) is checksummed
// whole. Checksums are base/checksum.h's: they catch truncation, bit rot and torn or
// corrupted transfers, not an adversary (the transport's TLS keeps those out).
//
// Manifests travel in JSON inside CAF messages. Parsing one is parsing network bytes:
// every name is a plain file name, counts and sizes are bounded, and an error names the
// field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/checksum.h"

namespace partita::runtime {

struct StagedFile {
  std::string name;  // a plain file name inside its unit's folder
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};

struct StagedUnit {
  std::string mount;  // where the unit appears in the staged folder: "" (its files at the top) or a folder name
  std::vector<StagedFile> files;  // sorted by name
  uint64_t key() const;           // the checksum of every file's name, size and checksum
  uint64_t bytes() const;
};

// Limits of a manifest read from the network.
constexpr size_t kMaxStagedUnits = 1 << 16;
constexpr size_t kMaxStagedFilesPerUnit = 256;

// The unit of `dir`'s regular files (not its sub-folders; only those named in `only`, when
// given, each of which must exist), mounted at `mount`. Throws Error naming a file that is
// missing or cannot be read.
StagedUnit describe_unit(const std::string& dir, const std::string& mount, const std::vector<std::string>& only = {});

// The checksum of one file as above. Throws Error naming the file when it cannot be read.
uint64_t file_checksum(const std::string& path);

// The checks of verify_file on bytes fed in order (as they are read, or as they arrive:
// how a node checks a file it receives without reading it again).
class FileCheck {
 public:
  void update(const void* data, size_t bytes);
  // The file's checksum as above, of the bytes fed so far.
  uint64_t checksum() const;
  // Throws Error naming `path` and what differs, as verify_file.
  void check(const std::string& path, const StagedFile& expected) const;

 private:
  bool is_array_file() const;

  uint64_t size_ = 0;
  unsigned char head_[64] = {};  // the first bytes: an array file's header
  size_t head_bytes_ = 0;
  Checksum rest_, whole_;  // of the bytes after the header, and of all
};

// Checks the file at `path` against `expected`: its size, then every byte (an array file's
// header against the checksum, its data against the header's). Throws Error naming `path`
// and what differs.
void verify_file(const std::string& path, const StagedFile& expected);

// "0123456789abcdef": a key as a folder name.
std::string key_text(uint64_t key);

std::string units_to_json(const std::vector<StagedUnit>& units);
// Throws Error naming the field for anything but a manifest as units_to_json writes it
// within the limits above (a file name with '/', "." or "..", a repeated mount, ...).
std::vector<StagedUnit> units_from_json(const std::string& text);

}  // namespace partita::runtime
