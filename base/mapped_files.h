// Which file a mapped address belongs to, so that a file shrinking under its mapping ends
// the process with an error naming the file instead of a bare "Bus error".
//
// Partition files are memory-mapped (base/array_file.h). If one is truncated or rewritten
// in place while a job runs, the next read of a page past its new end raises SIGBUS, and
// the process used to die with no message at all. Every mapping registers its range and
// path here; the SIGBUS handler (installed with the first registration) looks the faulting
// address up and writes
//   partita: error: DIR/part0/x.bin: the file was truncated while mapped (rewritten under a running job?)
// to stderr, then exits with status 1, the CLI's runtime-error code. A fault outside every
// registered mapping is not ours: the handler passes it to the action installed before it,
// or ends the process with the signal as it would have. Nothing can resume a read whose page is gone, so
// exiting is the only safe continuation; the driver of a job on daemons then reports the
// daemon as lost, naming it.
//
// Async-signal safety: the handler only reads a fixed table of atomics and calls write(2)
// and _exit(2). The table holds kMaxMappedFiles entries; a mapping beyond that is not
// registered (its fault is reported without the path).
#pragma once

#include <cstddef>
#include <string>

namespace partita {

constexpr int kMaxMappedFiles = 4096;

// Registers [start, start + bytes) as a mapping of `path` for as long as it lives.
class MappedFileRegistration {
 public:
  MappedFileRegistration() = default;
  MappedFileRegistration(const void* start, size_t bytes, const std::string& path);
  ~MappedFileRegistration() { reset(); }
  MappedFileRegistration(MappedFileRegistration&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  MappedFileRegistration& operator=(MappedFileRegistration&& other) noexcept;
  MappedFileRegistration(const MappedFileRegistration&) = delete;
  MappedFileRegistration& operator=(const MappedFileRegistration&) = delete;

  // Unregisters now (before the range is unmapped).
  void reset();

 private:
  int slot_ = -1;  // -1: not registered
};

}  // namespace partita
