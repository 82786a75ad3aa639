#include "runtime/collective/ring.h"

#include <algorithm>
#include <thread>

#include "runtime/transport/wire_format.h"

namespace partita::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Segments of a chunk stream one after the other; a received segment is summed while the
// next is in flight, and forwarded while later ones arrive. At most 1 MiB keeps the
// receive buffer in L2 and syscalls few (gloo uses the same), and bounds the memory a
// member needs beyond the caller's buffer; at least 4 segments per chunk (down to 64 KiB)
// keep a small buffer's steps overlapping.
constexpr size_t kSegmentFloats = (size_t{1} << 20) / sizeof(float);
constexpr size_t kMinSegmentFloats = (size_t{64} << 10) / sizeof(float);
constexpr size_t kSegmentsPerChunk = 4;
// How long run() waits past its deadline for the send half to stop by itself.
constexpr milliseconds kSendGrace{1000};

int mod(int a, int n) { return ((a % n) + n) % n; }

void add_segments(std::vector<RingSegment>& out, size_t n, int size, int c, size_t segment, bool reduce) {
  const size_t begin = chunk_begin(n, size, c), end = chunk_begin(n, size, c + 1);
  for (size_t at = begin; at < end; at += segment) out.push_back({at, std::min(segment, end - at), reduce});
}

// The received partial sum first: the documented order is ((x[c] + x[c+1]) + ...).
void add_into(float* __restrict own, const float* __restrict partial, size_t n) {
  for (size_t i = 0; i < n; ++i) own[i] = partial[i] + own[i];
}

}  // namespace

std::string rank_name(int rank) { return "allreduce rank " + std::to_string(rank); }

size_t chunk_begin(size_t n, int parts, int c) {
  return static_cast<size_t>((static_cast<__uint128_t>(n) * static_cast<unsigned>(c)) / static_cast<unsigned>(parts));
}

RingSchedule ring_schedule(size_t n, int rank, int size) {
  RingSchedule s;
  const size_t segment =
      std::clamp(n / static_cast<size_t>(size) / kSegmentsPerChunk, kMinSegmentFloats, kSegmentFloats);
  for (int k = 0; k < 2 * size - 2; ++k) {
    add_segments(s.sends, n, size, mod(rank - k, size), segment, false);
    add_segments(s.recvs, n, size, mod(rank - k - 1, size), segment, k < size - 1);
  }
  std::vector<RingSegment> step0;
  add_segments(step0, n, size, rank, segment, false);
  s.first = step0.size();
  return s;
}

Ring::Ring(int rank, int size)
    : rank_(rank), size_(size), left_rank_(mod(rank - 1, size)), right_rank_(mod(rank + 1, size)) {}

Ring::~Ring() { abort("the member stopped"); }

void Ring::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) return;
    abort_reason_ = why;
    aborted_ = true;
  }
  wakeup_.notify();
  cv_.notify_all();
}

std::string Ring::abort_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abort_reason_;
}

void Ring::rethrow(const Error& e, const std::string& waiting_for) const {
  if (aborted()) throw Error(abort_reason());
  if (dynamic_cast<const TimedOut*>(&e) != nullptr) {
    throw Error("timed out after " + std::to_string(budget_.count()) + " ms waiting for " + waiting_for +
                " (a member is slow, stuck, or not calling sum)");
  }
  throw Error(e.what());
}

void Ring::wire(Listener& listener, const Endpoint& right, uint64_t group, Deadline deadline) {
  // Connecting includes the TLS handshake, which needs the right neighbour to be accepting
  // meanwhile; every member connects and accepts at once, so both run side by side (on a
  // thread of their own that ends here), or a ring of members would wait in a circle. A
  // failure of either aborts the other through wakeup_.
  std::string connect_error;
  std::thread connecting([&] {
    try {
      right_ = Connection::connect(right, group, static_cast<uint32_t>(rank_), rank_name(right_rank_), deadline,
                                   &wakeup_);
    } catch (const Error& e) {
      connect_error = e.what();
      abort(connect_error);
    }
  });
  try {
    left_ = listener.accept(group, static_cast<uint32_t>(left_rank_), static_cast<uint32_t>(rank_),
                            rank_name(left_rank_), deadline, &wakeup_);
  } catch (const Error& e) {
    abort(e.what());
    connecting.join();
    throw Error(abort_reason());
  }
  connecting.join();
  try {
    if (!connect_error.empty()) throw Error(connect_error);
    right_.confirm(group, static_cast<uint32_t>(right_rank_), deadline, &wakeup_);
  } catch (const Error& e) {
    if (aborted()) throw Error(abort_reason());
    throw;
  }
  scratch_.resize(kSegmentFloats);
  // The send half reports to run(), which waits for it to let go of the buffer.
  sender_ = std::make_unique<Worker>(
      "allreduce.send",
      [this](uint64_t, std::string failure) {
        std::lock_guard<std::mutex> lock(mutex_);
        op_->send_error = std::move(failure);
        op_->sending = false;
        cv_.notify_all();
      },
      [this] { abort("the member stopped"); });
}

void Ring::run(float* data, size_t n, uint64_t seq, Deadline deadline) {
  if (size_ == 1) return;
  if (!sender_) throw Error(rank_name(rank_) + " is not wired into its ring");
  budget_ = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  Op op;
  op.data = reinterpret_cast<char*>(data);
  op.n = n;
  op.seq = seq;
  op.deadline = deadline;
  op.schedule = ring_schedule(n, rank_, size_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op.sending = true;
    op_ = &op;
  }
  sender_->post(seq, [this, &op] {
    try {
      send_half(op);
    } catch (const Error& e) {
      abort(e.what());  // the group is broken anyway; this stops the receive half at once
      throw;
    }
  });
  std::string failure;
  try {
    receive_half(op);
  } catch (const Error& e) {
    failure = e.what();
    abort(failure);  // stops the send half at once
  }
  // The send half ends by itself (done, failed, aborted or at the deadline); give it a
  // moment past the deadline before stopping it, then wait for it to let go of `data`.
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_until(lock, deadline + kSendGrace, [&] { return !op.sending; })) {
    lock.unlock();
    abort("the send half did not stop at the deadline");
    lock.lock();
    cv_.wait(lock, [&] { return !op.sending; });  // its waits end at once after abort()
  }
  op_ = nullptr;
  if (failure.empty()) failure = op.send_error;
  lock.unlock();
  if (!failure.empty()) throw Error(aborted() ? abort_reason() : failure);
}

void Ring::receive_half(Op& op) {
  const std::string from_left = "data from " + rank_name(left_rank_);
  try {
    unsigned char header_bytes[wire::kOpHeaderBytes];
    left_.recv_all(header_bytes, sizeof(header_bytes), op.deadline, &wakeup_, "waiting for an operation header");
    wire::OpHeader theirs;
    if (!wire::decode_op_header(header_bytes, theirs) || theirs.rank != static_cast<uint32_t>(left_rank_)) {
      throw Error(rank_name(left_rank_) + " sent a malformed operation header");
    }
    if (theirs.seq != op.seq || theirs.floats != op.n) {
      throw Error(rank_name(left_rank_) + " is at operation " + std::to_string(theirs.seq) + " with " +
                  std::to_string(theirs.floats) + " floats, " + rank_name(rank_) + " at operation " +
                  std::to_string(op.seq) + " with " + std::to_string(op.n) +
                  " floats: every member must sum the same number of floats in the same operation");
    }
    const std::vector<RingSegment>& recvs = op.schedule.recvs;
    for (size_t j = 0; j < recvs.size(); ++j) {
      const RingSegment& s = recvs[j];
      char* into = s.reduce ? reinterpret_cast<char*>(scratch_.data()) : op.data + s.offset * sizeof(float);
      left_.recv_all(into, s.count * sizeof(float), op.deadline, &wakeup_, "receiving");
      if (s.reduce) add_into(reinterpret_cast<float*>(op.data) + s.offset, scratch_.data(), s.count);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        op.received = j + 1;
      }
      cv_.notify_all();
    }
  } catch (const Error& e) {
    rethrow(e, from_left);
  }
}

void Ring::send_half(Op& op) {
  unsigned char header[wire::kOpHeaderBytes];
  wire::encode_op_header({static_cast<uint32_t>(rank_), op.seq, op.n}, header);
  std::string waiting_for = rank_name(right_rank_) + " to take our data";
  try {
    right_.send_all(header, sizeof(header), op.deadline, &wakeup_, "sending an operation header");
    const std::vector<RingSegment>& sends = op.schedule.sends;
    for (size_t i = 0; i < sends.size(); ++i) {
      {
        // The segment must have come in (and been summed) first.
        std::unique_lock<std::mutex> lock(mutex_);
        if (!cv_.wait_until(lock, op.deadline, [&] { return aborted_ || i < op.schedule.first + op.received; })) {
          waiting_for = "data from " + rank_name(left_rank_);
          throw TimedOut("timed out");
        }
        if (aborted_) throw Interrupted("aborted");
      }
      right_.send_all(op.data + sends[i].offset * sizeof(float), sends[i].count * sizeof(float), op.deadline,
                      &wakeup_, "sending");
    }
  } catch (const Error& e) {
    rethrow(e, waiting_for);
  }
}

}  // namespace partita::runtime
