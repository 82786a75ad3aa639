// Rows of an array file read from disk on request: where a job keeps its features when they
// do not fit in memory (`features: {storage: disk}`, partitioner/partition_stores.h).
//
// A mapping of a file larger than memory reads it through page faults: one 4 KB fault per
// random row, one at a time on the faulting thread, and the page cache evicts under pressure
// on its own terms. This reader instead sends a gather's rows to the device as one stream of
// reads with io_uring: up to `queue_depth` reads in flight, every slot the completions free
// refilled and handed to the kernel in one submission. With O_DIRECT (where the file system
// allows it) the rows bypass the page cache: features take no memory but the reader's
// buffers (queue_depth x request_bytes() per concurrent gather), whatever their size, and a
// row costs the device's own random read. Measured in `partita bench disk` (BENCHMARKS.md,
// "Features on disk") next to the device's rate for the same request size.
//
// O_DIRECT wants file offsets, lengths and memory aligned to the device's logical block: a
// row is read as the aligned span of blocks that holds it (512-byte rows after the 64-byte
// array header: 1 KB with 512-byte blocks), into an aligned slot buffer, and copied out.
// Where the file system refuses O_DIRECT rows are read buffered, exactly their bytes; the
// log says so once per process.
//
// A gather reads its rows in file order, and rows less than `merge_gap_bytes` apart (and
// repeats) share one read of up to 64 KB, the bytes between them read and dropped: a device
// answers a bounded number of reads per second, each of up to tens of KB for about the cost
// of one, and a sampled batch's rows are dense (a fifth of the shared graph's rows per batch,
// its hubs at the low ids). Measured in `partita bench disk` (BENCHMARKS.md, "Features on
// disk"): on the project's machine a batch's rows come 1.35x faster than one read per row
// with gap 0 (touching spans only), 2.6x with 2 KB and 9.2x with 8 KB.
//
// A read the kernel completes with fewer bytes than asked (io_uring and pread both may, for
// reasons other than the file's end) is finished with pread from where it stopped; only
// what is still missing then is a short read, an Error naming the file and the offset.
//
// Where io_uring is unavailable (io_uring_queue_init fails: an old kernel, a seccomp filter,
// io_uring_disabled; or PARTITA_NO_IO_URING=1 in the environment) rows are read with one
// pread each, and the log says so once. A submission the kernel refuses mid-gather ends the
// reader's use of io_uring: the reads in flight are drained, the gather is read again with
// pread, and so is every later one (logged once).
//
// Thread safety: read() may run concurrently; each running call holds one ring of its own
// (rings are kept for reuse, at most one per concurrent caller).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/array_file.h"
#include "base/dtype.h"
#include "base/span.h"

namespace partita {

// One read a gather issues: `length` bytes at byte `offset` of the file.
struct DiskRequest {
  uint64_t offset = 0;
  uint32_t length = 0;
};

// How a DiskRows reads.
struct DiskReadOptions {
  // Reads in flight per gather: deep enough to keep an NVMe or virtio queue busy, small
  // enough that the slot buffers stay a few hundred KB.
  int queue_depth = 64;
  // Bypass the page cache with O_DIRECT where the file system allows it.
  bool direct = true;
  // Rows whose spans are at most this many bytes apart share one read (at most 64 KB).
  uint64_t merge_gap_bytes = 8192;
  // For tests of the fallback: submission number `fail_submission` (from 1) of this reader
  // fails as if the kernel had refused it (EIO). 0: none.
  int fail_submission = 0;
  // For tests of short completions: completion number `short_completion` (from 1) of this
  // reader reports half its bytes (rounded down to the block), as the kernel may. 0: none.
  int short_completion = 0;
};

enum class DiskBackend { kIoUring, kPread };
// "io_uring", "pread".
const char* disk_backend_name(DiskBackend backend);

class DiskRows {
 public:
  // The rows of `array`'s file (its header already checked by MappedArray); the mapping
  // is released. Throws Error naming the file when it cannot be opened.
  explicit DiskRows(MappedArray array, DiskReadOptions options = {});
  ~DiskRows();
  DiskRows(const DiskRows&) = delete;
  DiskRows& operator=(const DiskRows&) = delete;

  const std::string& path() const { return path_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rows() const { return shape_.empty() ? 0 : shape_[0]; }
  size_t row_bytes() const { return row_bytes_; }
  // How rows are read now (io_uring until it fails, then pread for good).
  DiskBackend backend() const { return uring_ok_.load() ? DiskBackend::kIoUring : DiskBackend::kPread; }
  // Whether reads bypass the page cache (O_DIRECT).
  bool direct() const { return direct_; }
  // The largest read one row alone costs: its aligned span with O_DIRECT, row_bytes() otherwise.
  size_t request_bytes() const { return span_bytes_; }
  // The reads read(ids, first_id, ...) issues, in the order it issues them (ids as read()
  // takes them, not checked): for benchmarks that replay them against the bare device.
  std::vector<DiskRequest> requests(Span<const int64_t> ids, int64_t first_id) const;
  // The block size O_DIRECT reads are aligned to (1 when buffered).
  size_t alignment() const { return align_; }

  // Copies row ids[k] - first_id to out + k * row_bytes() for every k; each must be in
  // [0, rows()) (the feature store checks ids first; this throws Error if not). Throws
  // Error naming the file and the byte offset of the row on an I/O error or a short read
  // (a file truncated since it was opened). After an error `out` holds unspecified bytes.
  void read(Span<const int64_t> ids, int64_t first_id, char* out) const;

 private:
  struct Ring;
  // A gather's reads: positions sorted by row; reads[i] serves order[first[i], first[i + 1]).
  struct Plan {
    std::vector<size_t> order;
    std::vector<DiskRequest> reads;
    std::vector<size_t> first;
  };
  Plan plan(Span<const int64_t> ids, int64_t first_id) const;
  // Copies the rows of read `read` (whose first `got` bytes arrived at `data`) to their
  // positions; returns the short-read error of the first row cut off, or "".
  std::string place(const Plan& plan, size_t read, const char* data, int64_t got, Span<const int64_t> ids,
                    int64_t first_id, char* out) const;
  // Returns false when io_uring gave up (the caller reads with pread).
  bool read_uring(Ring& ring, const Plan& plan, Span<const int64_t> ids, int64_t first_id, char* out) const;
  void read_pread(const Plan& plan, Span<const int64_t> ids, int64_t first_id, char* out) const;
  // Reads the bytes of `request` after the first `got` (already in `buffer`) with pread until
  // all are there or the file ends; returns how many `buffer` holds. Throws Error naming the
  // file and offset on an I/O error.
  size_t read_rest(char* buffer, const DiskRequest& request, size_t got) const;
  std::unique_ptr<Ring> take_ring() const;
  void give_back(std::unique_ptr<Ring> ring) const;
  uint64_t row_offset(int64_t row) const;
  [[noreturn]] void fail_short(uint64_t offset, int64_t got, size_t wanted) const;

  std::string path_;
  DType dtype_;
  std::vector<int64_t> shape_;
  size_t row_bytes_ = 0;
  uint64_t file_bytes_ = 0;
  int fd_ = -1;
  bool direct_ = false;
  size_t align_ = 1;
  size_t span_bytes_ = 0;
  size_t slot_bytes_ = 0;  // the most one read takes: 64 KB, or one row's span if larger
  DiskReadOptions options_;
  mutable std::atomic<bool> uring_ok_{true};
  mutable std::atomic<int> submissions_{0};
  mutable std::atomic<int> completions_{0};
  mutable std::mutex rings_mutex_;
  mutable std::vector<std::unique_ptr<Ring>> idle_rings_;
};

}  // namespace partita
