#include "graph/disk_rows.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "base/error.h"
#include "base/file_util.h"

namespace partita {

namespace {

// Memory alignment of O_DIRECT buffers: a page satisfies every device's DMA alignment.
constexpr size_t kBufferAlign = 4096;
// The most one read takes when it merges neighbouring rows (see the header).
constexpr size_t kMaxReadBytes = 64 << 10;
// A gather whose reads stop completing for this long is an error, not a hang.
constexpr int kCompletionDeadlineSeconds = 60;

// Each fallback is worth one line per process, not one per file or gather.
std::atomic<bool> said_no_uring{false};
std::atomic<bool> said_init_failed{false};
std::atomic<bool> said_submit_failed{false};
std::atomic<bool> said_buffered{false};

bool first_time(std::atomic<bool>& said) { return !said.exchange(true); }

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, FreeDeleter>;

AlignedBuffer aligned_buffer(size_t bytes, const std::string& path) {
  void* p = nullptr;
  if (::posix_memalign(&p, kBufferAlign, std::max(bytes, kBufferAlign)) != 0) {
    throw file_error(path, "cannot allocate " + std::to_string(bytes) + " bytes of read buffers");
  }
  return AlignedBuffer(static_cast<char*>(p));
}

uint64_t round_down(uint64_t x, uint64_t a) { return x / a * a; }
uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

const char* disk_backend_name(DiskBackend backend) {
  return backend == DiskBackend::kIoUring ? "io_uring" : "pread";
}

// One gather's ring and its slot buffers, one read's worth each.
struct DiskRows::Ring {
  io_uring ring{};
  bool ready = false;  // set up by io_uring_queue_init
  bool stuck = false;  // reads were still in flight when a gather gave up on them
  AlignedBuffer buffers;
  ~Ring() {
    if (ready) io_uring_queue_exit(&ring);
  }
};

DiskRows::DiskRows(MappedArray array, DiskReadOptions options)
    : path_(array.path()), dtype_(array.dtype()), shape_(array.shape()), options_(options) {
  int64_t width = 1;
  for (size_t i = 1; i < shape_.size(); ++i) width *= shape_[i];
  row_bytes_ = static_cast<size_t>(width) * dtype_size(dtype_);
  file_bytes_ = sizeof(ArrayHeader) + array.data_bytes();
  array = MappedArray();  // the header is checked; rows are read, not mapped
  if (options_.merge_gap_bytes > kMaxReadBytes) {
    throw UsageError("disk rows of " + path_ + ": merge gap " + std::to_string(options_.merge_gap_bytes) +
                     " bytes is more than a read (" + std::to_string(kMaxReadBytes) + ")");
  }
  if (options_.queue_depth < 1 || options_.queue_depth > 4096) {
    throw UsageError("disk rows of " + path_ + ": queue depth " + std::to_string(options_.queue_depth) +
                     " is outside [1, 4096]");
  }
  const char* no_uring = std::getenv("PARTITA_NO_IO_URING");
  if (no_uring != nullptr && std::string(no_uring) == "1") {
    uring_ok_ = false;
    if (first_time(said_no_uring)) spdlog::info("PARTITA_NO_IO_URING=1: feature rows on disk are read with pread");
  }
  if (options_.direct) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
    // The smallest block the device takes: a read of one block at offset one block.
    AlignedBuffer probe = aligned_buffer(kBufferAlign, path_);
    for (size_t a : {size_t{512}, size_t{4096}}) {
      if (fd_ < 0 || align_ > 1) break;
      const off_t at = file_bytes_ >= 2 * a ? static_cast<off_t>(a) : 0;
      if (::pread(fd_, probe.get(), a, at) >= 0) align_ = a;
    }
    direct_ = align_ > 1;
    if (!direct_ && fd_ >= 0) ::close(fd_);
    if (!direct_) fd_ = -1;
  }
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw file_error(path_, "cannot open: " + errno_text());
    if (options_.direct && first_time(said_buffered)) {
      spdlog::info("{}: the file system refuses O_DIRECT; feature rows on disk are read through the page cache", path_);
    }
  }
  span_bytes_ = row_bytes_;
  if (direct_) {
    // Row offsets repeat their alignment every `align_` rows: the widest span is among those.
    span_bytes_ = 0;
    for (int64_t r = 0; r < std::min<int64_t>(rows(), static_cast<int64_t>(align_)); ++r) {
      const uint64_t at = row_offset(r);
      span_bytes_ = std::max<size_t>(span_bytes_, round_up(at + row_bytes_, align_) - round_down(at, align_));
    }
  }
  // Every slot starts page-aligned, as O_DIRECT wants (a span can exceed kMaxReadBytes).
  slot_bytes_ = round_up(std::max(kMaxReadBytes, span_bytes_), kBufferAlign);
}

DiskRows::~DiskRows() {
  idle_rings_.clear();
  if (fd_ >= 0) ::close(fd_);
}

uint64_t DiskRows::row_offset(int64_t row) const {
  return sizeof(ArrayHeader) + static_cast<uint64_t>(row) * row_bytes_;
}

void DiskRows::fail_short(uint64_t offset, int64_t got, size_t wanted) const {
  throw file_error(path_, "short read at offset " + std::to_string(offset) + ": " + std::to_string(std::max<int64_t>(got, 0)) + " of " +
                              std::to_string(wanted) + " bytes (the file is shorter than its header says: truncated?)");
}

std::unique_ptr<DiskRows::Ring> DiskRows::take_ring() const {
  {
    std::lock_guard<std::mutex> lock(rings_mutex_);
    if (!idle_rings_.empty()) {
      std::unique_ptr<Ring> ring = std::move(idle_rings_.back());
      idle_rings_.pop_back();
      return ring;
    }
  }
  auto ring = std::make_unique<Ring>();
  const int rc = io_uring_queue_init(static_cast<unsigned>(options_.queue_depth), &ring->ring, 0);
  if (rc < 0) {
    uring_ok_ = false;
    if (first_time(said_init_failed)) {
      spdlog::warn("io_uring is unavailable (io_uring_queue_init: {}): feature rows on disk are read with pread",
                   std::strerror(-rc));
    }
    return nullptr;
  }
  ring->ready = true;
  ring->buffers = aligned_buffer(slot_bytes_ * static_cast<size_t>(options_.queue_depth), path_);
  return ring;
}

void DiskRows::give_back(std::unique_ptr<Ring> ring) const {
  std::lock_guard<std::mutex> lock(rings_mutex_);
  idle_rings_.push_back(std::move(ring));
}

void DiskRows::read(Span<const int64_t> ids, int64_t first_id, char* out) const {
  for (size_t k = 0; k < ids.size(); ++k) {
    const int64_t row = ids[k] - first_id;
    if (row < 0 || row >= rows()) {
      throw file_error(path_, "row " + std::to_string(row) + " (id " + std::to_string(ids[k]) + ", position " +
                                  std::to_string(k) + ") is outside the file's " + std::to_string(rows()) + " rows");
    }
  }
  if (ids.empty()) return;
  const Plan reads = plan(ids, first_id);
  if (uring_ok_.load()) {
    std::unique_ptr<Ring> ring = take_ring();
    if (ring != nullptr) {
      // A read error throws with the ring drained, so it goes back either way; a refused
      // submission leaves it unusable, and it is dropped.
      bool done = false;
      try {
        done = read_uring(*ring, reads, ids, first_id, out);
      } catch (...) {
        if (!ring->stuck) {
          give_back(std::move(ring));
        } else {
          // The kernel may still complete its reads into the ring's buffers, and a later
          // gather would take those completions for its own: the ring is never used or freed
          // again, and this file is read with pread from now on.
          (void)ring.release();
          uring_ok_ = false;
        }
        throw;
      }
      if (done) {
        give_back(std::move(ring));
        return;
      }
    }
  }
  read_pread(reads, ids, first_id, out);
}

DiskRows::Plan DiskRows::plan(Span<const int64_t> ids, int64_t first_id) const {
  Plan plan;
  plan.order.resize(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) plan.order[k] = k;
  std::sort(plan.order.begin(), plan.order.end(), [&](size_t a, size_t b) { return ids[a] < ids[b]; });
  uint64_t begin = 0, end = 0;
  for (size_t j = 0; j < plan.order.size(); ++j) {
    const uint64_t at = row_offset(ids[plan.order[j]] - first_id);
    const uint64_t span_begin = round_down(at, align_), span_end = round_up(at + row_bytes_, align_);
    if (j > 0 && span_begin <= end + options_.merge_gap_bytes && span_end - begin <= slot_bytes_) {
      end = std::max(end, span_end);  // close enough to the read so far: the same read
      continue;
    }
    if (j > 0) plan.reads.push_back({begin, static_cast<uint32_t>(end - begin)});
    plan.first.push_back(j);
    begin = span_begin;
    end = span_end;
  }
  if (!plan.order.empty()) plan.reads.push_back({begin, static_cast<uint32_t>(end - begin)});
  plan.first.push_back(plan.order.size());
  return plan;
}

std::vector<DiskRequest> DiskRows::requests(Span<const int64_t> ids, int64_t first_id) const {
  return plan(ids, first_id).reads;
}

std::string DiskRows::place(const Plan& plan, size_t read, const char* data, int64_t got, Span<const int64_t> ids,
                            int64_t first_id, char* out) const {
  const DiskRequest& request = plan.reads[read];
  const uint64_t valid_end = request.offset + static_cast<uint64_t>(std::max<int64_t>(got, 0));
  for (size_t j = plan.first[read]; j < plan.first[read + 1]; ++j) {
    const size_t pos = plan.order[j];
    const uint64_t at = row_offset(ids[pos] - first_id);
    if (at + row_bytes_ > valid_end) {
      try {
        fail_short(at, static_cast<int64_t>(valid_end) - static_cast<int64_t>(at), row_bytes_);
      } catch (const Error& e) {
        return e.what();
      }
    }
    std::memcpy(out + pos * row_bytes_, data + (at - request.offset), row_bytes_);
  }
  return "";
}

bool DiskRows::read_uring(Ring& ring, const Plan& plan, Span<const int64_t> ids, int64_t first_id, char* out) const {
  const size_t n = plan.reads.size();
  const int depth = options_.queue_depth;
  std::vector<size_t> slot_read(static_cast<size_t>(depth));
  std::vector<int> free_slots;
  for (int s = depth - 1; s >= 0; --s) free_slots.push_back(s);
  size_t next = 0;      // the first read not yet queued
  int pending = 0;      // queued, not yet submitted
  int in_flight = 0;    // submitted, not yet completed
  std::string error;    // the first failed read; thrown once the reads in flight are drained

  const auto complete = [&](const io_uring_cqe* cqe) {
    // liburing's wait with a timeout queues a request of its own on kernels without
    // IORING_FEAT_EXT_ARG (before 5.11); its completion is not a read.
    if (cqe->user_data >= static_cast<uint64_t>(depth)) return;
    const int slot = static_cast<int>(cqe->user_data);
    const size_t read = slot_read[static_cast<size_t>(slot)];
    free_slots.push_back(slot);
    --in_flight;
    if (!error.empty()) return;
    if (cqe->res < 0) {
      error = path_ + ": read at offset " + std::to_string(plan.reads[read].offset) + " failed: " + std::strerror(-cqe->res);
      return;
    }
    const DiskRequest& request = plan.reads[read];
    char* data = ring.buffers.get() + static_cast<size_t>(slot) * slot_bytes_;
    size_t got = static_cast<size_t>(cqe->res);
    // The test hook only: no shared counter on the hot path (and none to wrap, after 2^32
    // completions, into a cut of a real one).
    if (options_.short_completion > 0 && completions_.fetch_add(1) + 1 == options_.short_completion) {
      got = round_down(got / 2, align_);
    }
    if (got < request.length) {
      // Short: the rest is read here (the file's end, or a completion cut short).
      try {
        got = read_rest(data, request, got);
      } catch (const Error& e) {
        error = e.what();
        return;
      }
    }
    error = place(plan, read, data, static_cast<int64_t>(got), ids, first_id, out);
  };
  // Waits for one completion, then takes every one that is there.
  const auto reap = [&]() {
    io_uring_cqe* cqe = nullptr;
    __kernel_timespec deadline{kCompletionDeadlineSeconds, 0};
    int rc;
    do {
      rc = io_uring_wait_cqe_timeout(&ring.ring, &cqe, &deadline);
    } while (rc == -EINTR);
    if (rc < 0) {
      ring.stuck = true;
      throw file_error(path_, "no read completed within " + std::to_string(kCompletionDeadlineSeconds) +
                                  " s (" + std::to_string(in_flight) + " in flight): " + std::strerror(-rc));
    }
    unsigned head = 0, seen = 0;
    io_uring_for_each_cqe(&ring.ring, head, cqe) {
      complete(cqe);
      ++seen;
    }
    io_uring_cq_advance(&ring.ring, seen);
  };

  while ((next < n && error.empty()) || in_flight > 0) {
    while (next < n && error.empty() && !free_slots.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring.ring);
      if (sqe == nullptr) break;  // the submission queue is full until the next submit
      const int slot = free_slots.back();
      free_slots.pop_back();
      slot_read[static_cast<size_t>(slot)] = next;
      const DiskRequest& request = plan.reads[next];
      io_uring_prep_read(sqe, fd_, ring.buffers.get() + static_cast<size_t>(slot) * slot_bytes_, request.length,
                         request.offset);
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
      ++next;
      ++pending;
    }
    if (pending > 0) {
      int submitted;
      const int number = submissions_.fetch_add(1) + 1;
      do {
        submitted = number == options_.fail_submission ? -EIO : io_uring_submit(&ring.ring);
      } while (submitted == -EINTR);
      if (submitted < 0) {
        // What was submitted completes into this ring's buffers: wait for it before the
        // ring goes and the rows are read again.
        while (in_flight > 0) reap();
        uring_ok_ = false;
        if (first_time(said_submit_failed)) {
          spdlog::warn("{}: io_uring refused a submission ({}): feature rows on disk are read with pread from now on",
                       path_, std::strerror(-submitted));
        }
        return false;
      }
      pending -= submitted;
      in_flight += submitted;
    }
    if (in_flight > 0) reap();
  }
  if (!error.empty()) throw Error(error);
  return true;
}

void DiskRows::read_pread(const Plan& plan, Span<const int64_t> ids, int64_t first_id, char* out) const {
  AlignedBuffer buffer = aligned_buffer(slot_bytes_, path_);
  for (size_t read = 0; read < plan.reads.size(); ++read) {
    const size_t got = read_rest(buffer.get(), plan.reads[read], 0);
    const std::string error = place(plan, read, buffer.get(), static_cast<int64_t>(got), ids, first_id, out);
    if (!error.empty()) throw Error(error);
  }
}

size_t DiskRows::read_rest(char* buffer, const DiskRequest& request, size_t got) const {
  while (got < request.length) {
    if (direct_ && got % align_ != 0) break;  // O_DIRECT stops short of a block only at the file's end
    const ssize_t r = ::pread(fd_, buffer + got, request.length - got, static_cast<off_t>(request.offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw file_error(path_, "read at offset " + std::to_string(request.offset + got) + " failed: " + errno_text());
    if (r == 0) break;  // the file's end: place() names the first row it cut
    got += static_cast<size_t>(r);
  }
  return got;
}

}  // namespace partita
