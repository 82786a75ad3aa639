#include "actors/allreduce.h"

#include <caf/all.hpp>
#include <poll.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "base/error.h"
#include "runtime/bulk_channel.h"
#include "runtime/errors.h"

namespace partita {

namespace {

using Clock = std::chrono::steady_clock;
using runtime::Deadline;
using std::chrono::milliseconds;

// Segments of a chunk stream one after the other; a received segment is summed while the
// next is in flight, and forwarded while later ones arrive. At most 1 MiB keeps the
// receive buffer in L2 and syscalls few (gloo uses the same), and bounds the memory a
// member needs beyond the caller's buffer; at least 4 segments per chunk (down to 64 KiB)
// keep a small buffer's steps overlapping.
constexpr size_t kSegmentFloats = (size_t{1} << 20) / sizeof(float);
constexpr size_t kMinSegmentFloats = (size_t{64} << 10) / sizeof(float);
constexpr size_t kSegmentsPerChunk = 4;
// How long a caller waits past its deadline for the member's own verdict (which names the
// cause) before reporting a bare timeout.
constexpr milliseconds kReplyGrace{1000};
// Reasons from other members are shown to users: keep them to one readable line.
constexpr size_t kMaxReasonBytes = 1000;

std::string rank_name(int rank) { return "allreduce rank " + std::to_string(rank); }

std::string clip(std::string text) {
  if (text.size() > kMaxReasonBytes) text.resize(kMaxReasonBytes);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// The text of an error reply: ours carry one string; CAF's (timeouts, lost receivers) are
// rendered.
std::string error_text(caf::actor_system& system, const caf::error& error) {
  if (error.category() == caf::atom("system") && error.context().match_elements<std::string>()) {
    return error.context().get_as<std::string>(0);
  }
  return runtime::describe(system, error);
}

caf::error refuse(std::string why) { return caf::make_error(caf::sec::invalid_argument, std::move(why)); }

int64_t remaining_ms(Deadline deadline) {
  return std::max<int64_t>(0, std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
}

// --- The ring: one member's two connections and the algorithm over them ---

// Chunk c of n floats cut into `parts` contiguous chunks: [c*n/parts, (c+1)*n/parts).
size_t chunk_begin(size_t n, int parts, int c) {
  return static_cast<size_t>((static_cast<__uint128_t>(n) * static_cast<unsigned>(c)) / static_cast<unsigned>(parts));
}

struct Piece {
  size_t offset = 0;  // in floats
  size_t count = 0;   // > 0
  bool reduce = false;
};

// Appends chunk c's segments of at most `segment` floats.
void add_segments(std::vector<Piece>& pieces, size_t n, int size, int c, size_t segment, bool reduce) {
  const size_t begin = chunk_begin(n, size, c), end = chunk_begin(n, size, c + 1);
  for (size_t at = begin; at < end; at += segment) pieces.push_back({at, std::min(segment, end - at), reduce});
}

// What a member sends first in each operation, so that its neighbour checks both are in the
// same operation with the same buffer size before a single float is summed. In host byte
// order, like the floats that follow.
struct OpHeader {
  static constexpr uint32_t kMagic = 0x52415450;  // "PTAR"
  uint32_t magic = kMagic;
  uint32_t rank = 0;
  uint64_t seq = 0;
  uint64_t floats = 0;
};
static_assert(sizeof(OpHeader) == 24, "the header is sent as its bytes");

// The received partial sum first: the documented order is ((x[c] + x[c+1]) + ...).
void add_into(float* __restrict own, const float* __restrict partial, size_t n) {
  for (size_t i = 0; i < n; ++i) own[i] = partial[i] + own[i];
}

// The ring state shared by a member actor and its threads. An operation runs in two halves:
// the receive half (reading the left neighbour's stream, summing) on the ring thread that
// calls run(), the send half (writing to the right neighbour) on a thread of the Ring's own,
// so that each direction moves whenever it can, and a member gets the CPU share of two
// threads on a busy machine, as gloo's two do. abort() may be called from any thread.
class Ring {
 public:
  Ring(int rank, int size)
      : rank_(rank), size_(size), left_rank_((rank + size - 1) % size), right_rank_((rank + 1) % size) {}
  ~Ring() {
    if (!sender_.joinable()) return;
    abort("the member stopped");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    sender_.join();
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Makes the current and every later wait fail with `why`.
  void abort(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_) return;
      abort_reason_ = why;
      aborted_ = true;
    }
    wakeup_.notify();
    cv_.notify_all();
  }
  bool aborted() const { return aborted_.load(); }
  std::string abort_reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return abort_reason_;
  }

  // Ring thread: connects to the right neighbour and accepts the left one's connection.
  void wire(runtime::BulkListener& listener, const runtime::Endpoint& right, uint64_t group, Deadline deadline) {
    right_ = runtime::BulkChannel::connect(right, group, static_cast<uint32_t>(rank_), rank_name(right_rank_),
                                           deadline, &wakeup_);
    left_ = listener.accept(group, static_cast<uint32_t>(left_rank_), static_cast<uint32_t>(rank_),
                            rank_name(left_rank_), deadline, &wakeup_);
    right_.confirm(group, static_cast<uint32_t>(right_rank_), deadline, &wakeup_);
    scratch_.resize(kSegmentFloats);
    sender_ = std::thread([this] { send_loop(); });
  }

  // Ring thread: sums data[0..n) over the group (see allreduce.h for the order). Returns
  // (or throws) only once neither half touches `data` any more.
  void run(float* data, size_t n, uint64_t seq, Deadline deadline);

 private:
  // One operation, as both halves see it (guarded by mutex_).
  struct Op {
    char* data = nullptr;
    size_t n = 0;
    uint64_t seq = 0;
    Deadline deadline;
    std::vector<Piece> sends, recvs;
    size_t first = 0;       // sends[first + j] may go once recvs[j] is done
    size_t received = 0;    // recvs done
    bool sending = false;   // the send half has work
    std::string send_error;  // why the send half stopped early
  };

  void receive_half(Op& op);
  void send_half(Op& op);
  void send_loop();
  [[noreturn]] void time_out(const std::string& waiting_for) const;

  const int rank_, size_, left_rank_, right_rank_;
  runtime::Wakeup wakeup_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
  bool stopping_ = false;
  Op* op_ = nullptr;  // the running operation, for the send half
  milliseconds budget_{0};
  runtime::BulkChannel left_;   // the receive half's
  runtime::BulkChannel right_;  // the send half's
  std::vector<float> scratch_;  // the receive half's
  std::thread sender_;          // last: started once the rest exists
};

void Ring::run(float* data, size_t n, uint64_t seq, Deadline deadline) {
  if (size_ == 1) return;
  if (!sender_.joinable()) throw Error(rank_name(rank_) + " is not wired into its ring");
  budget_ = milliseconds(remaining_ms(deadline));
  // Step k (0..2N-3) sends chunk (rank - k) and receives chunk (rank - k - 1), summing it in
  // the first N-1 steps (reduce-scatter) and keeping it in the others (allgather). A step's
  // sent chunk is the one received in the step before, so the send stream is the receive
  // stream shifted by the first step: sends[first + j] may go once recvs[j] is done.
  Op op;
  op.data = reinterpret_cast<char*>(data);
  op.n = n;
  op.seq = seq;
  op.deadline = deadline;
  // A function of n and the size only, so that both ends of a connection cut alike.
  const size_t segment = std::clamp(n / static_cast<size_t>(size_) / kSegmentsPerChunk, kMinSegmentFloats, kSegmentFloats);
  for (int k = 0; k < 2 * size_ - 2; ++k) {
    add_segments(op.sends, n, size_, ((rank_ - k) % size_ + size_) % size_, segment, false);
    add_segments(op.recvs, n, size_, ((rank_ - k - 1) % size_ + 2 * size_) % size_, segment, k < size_ - 1);
  }
  std::vector<Piece> step0;
  add_segments(step0, n, size_, rank_, segment, false);
  op.first = step0.size();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op.sending = true;
    op_ = &op;
  }
  cv_.notify_all();
  std::string failure;
  try {
    receive_half(op);
  } catch (const std::exception& e) {
    failure = e.what();
    abort(failure);  // the group is broken anyway; this stops the send half at once
  }
  // The send half ends by itself (done, failed, aborted or at the deadline); give it a
  // moment past the deadline before stopping it, then wait for it to let go of `data`.
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_until(lock, deadline + kReplyGrace, [&] { return !op.sending; })) {
    lock.unlock();
    abort("the send half did not stop at the deadline");
    lock.lock();
    cv_.wait(lock, [&] { return !op.sending; });  // poll() waits end at once after abort()
  }
  op_ = nullptr;
  if (failure.empty() && !op.send_error.empty()) failure = op.send_error;
  lock.unlock();
  if (!failure.empty()) throw Error(aborted() ? abort_reason() : failure);
}

void Ring::receive_half(Op& op) {
  OpHeader theirs;
  constexpr size_t kHeader = sizeof(OpHeader);
  size_t header_got = 0;
  size_t ri = 0, got = 0;  // piece being received, bytes of it received
  while (header_got < kHeader || ri < op.recvs.size()) {
    if (aborted_) throw Error(abort_reason());
    if (Clock::now() >= op.deadline) time_out("data from " + rank_name(left_rank_));
    size_t k = 0;
    if (header_got < kHeader) {
      k = left_.recv_some(reinterpret_cast<char*>(&theirs) + header_got, kHeader - header_got);
      header_got += k;
      if (header_got == kHeader) {
        if (theirs.magic != OpHeader::kMagic || theirs.rank != static_cast<uint32_t>(left_rank_)) {
          throw Error(rank_name(left_rank_) + " sent a malformed operation header");
        }
        if (theirs.seq != op.seq || theirs.floats != op.n) {
          throw Error(rank_name(left_rank_) + " is at operation " + std::to_string(theirs.seq) + " with " +
                      std::to_string(theirs.floats) + " floats, " + rank_name(rank_) + " at operation " +
                      std::to_string(op.seq) + " with " + std::to_string(op.n) +
                      " floats: every member must sum the same number of floats in the same operation");
        }
      }
    } else {
      const Piece& p = op.recvs[ri];
      const size_t bytes = p.count * sizeof(float);
      char* into = p.reduce ? reinterpret_cast<char*>(scratch_.data()) : op.data + p.offset * sizeof(float);
      k = left_.recv_some(into + got, bytes - got);
      got += k;
      if (got == bytes) {
        if (p.reduce) add_into(reinterpret_cast<float*>(op.data) + p.offset, scratch_.data(), p.count);
        ++ri;
        got = 0;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          op.received = ri;
        }
        cv_.notify_all();
      }
    }
    if (k > 0) continue;
    pollfd fds[2] = {{left_.fd(), POLLIN, 0}, {wakeup_.fd(), POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(std::min<int64_t>(remaining_ms(op.deadline), 1 << 30))) < 0 &&
        errno != EINTR) {
      throw Error("allreduce: poll failed: " + std::string(std::strerror(errno)));
    }
  }
}

void Ring::send_half(Op& op) {
  OpHeader mine;
  mine.rank = static_cast<uint32_t>(rank_);
  mine.seq = op.seq;
  mine.floats = op.n;
  constexpr size_t kHeader = sizeof(OpHeader);
  size_t header_sent = 0;
  size_t si = 0, sent = 0;  // piece being sent, bytes of it sent
  while (header_sent < kHeader || si < op.sends.size()) {
    if (aborted_) throw Error(abort_reason());
    if (Clock::now() >= op.deadline) {
      std::lock_guard<std::mutex> lock(mutex_);
      const bool starved = header_sent == kHeader && si >= op.first + op.received;
      time_out(starved ? "data from " + rank_name(left_rank_) : rank_name(right_rank_) + " to take our data");
    }
    if (header_sent == kHeader) {
      // The next piece must have come in (and been summed) first.
      std::unique_lock<std::mutex> lock(mutex_);
      if (si >= op.first + op.received) {
        cv_.wait_until(lock, op.deadline, [&] { return aborted_ || si < op.first + op.received; });
        continue;
      }
    }
    size_t k = 0;
    if (header_sent < kHeader) {
      k = right_.send_some(reinterpret_cast<const char*>(&mine) + header_sent, kHeader - header_sent);
      header_sent += k;
    } else {
      const Piece& p = op.sends[si];
      const size_t bytes = p.count * sizeof(float);
      k = right_.send_some(op.data + p.offset * sizeof(float) + sent, bytes - sent);
      sent += k;
      if (sent == bytes) {
        ++si;
        sent = 0;
      }
    }
    if (k > 0) continue;
    // Room towards the right neighbour, or its hang-up: its connection carries nothing
    // back, so readable means closed.
    pollfd fds[2] = {{right_.fd(), POLLOUT | POLLIN, 0}, {wakeup_.fd(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(remaining_ms(op.deadline), 1 << 30)));
    if (ready < 0 && errno != EINTR) throw Error("allreduce: poll failed: " + std::string(std::strerror(errno)));
    if (ready > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) right_.check_silent_peer();
  }
}

void Ring::send_loop() {
  ::pthread_setname_np(::pthread_self(), "allreduce.send");  // for top and perf
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || (op_ != nullptr && op_->sending); });
    if (stopping_) return;
    Op& op = *op_;
    lock.unlock();
    std::string error;
    try {
      send_half(op);
    } catch (const std::exception& e) {
      error = e.what();
      abort(error);  // stops the receive half at once
    }
    lock.lock();
    op.send_error = error;
    op.sending = false;
    cv_.notify_all();
  }
}

void Ring::time_out(const std::string& waiting_for) const {
  throw Error("timed out after " + std::to_string(budget_.count()) + " ms waiting for " + waiting_for +
              " (a member is slow, stuck, or not calling sum)");
}

// The member's own thread for the ring's blocking work, so the actor stays responsive
// (down messages, aborts) while an operation runs. Tasks run in order; stopping aborts the
// ring, finishes the running task and drops the rest.
class RingThread {
 public:
  explicit RingThread(std::shared_ptr<Ring> ring) : ring_(std::move(ring)), thread_([this] { loop(); }) {}
  ~RingThread() {
    ring_->abort("the member stopped");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  RingThread(const RingThread&) = delete;
  RingThread& operator=(const RingThread&) = delete;

  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    ::pthread_setname_np(::pthread_self(), "allreduce.ring");  // for top and perf
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (stopping_) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::shared_ptr<Ring> ring_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

// --- The member actor ---

// An operation a caller asked for: waiting for the wiring, or running on the ring thread.
struct Operation {
  uint64_t seq = 0;
  caf::actor caller;
  Deadline deadline;
  std::vector<char> bytes;     // a remote caller's floats, summed in place and sent back
  AllreduceLocalBuffer local;  // or a caller's buffer in this process
  bool running = false;
};

enum class Phase { idle, listening, wiring, wired };

struct MemberState {
  AllreduceConfig config;
  Phase phase = Phase::idle;
  uint64_t group = 0;
  std::vector<caf::actor> members;
  std::unique_ptr<runtime::BulkListener> listener;
  caf::typed_response_promise<bool> wired_promise;
  std::string failure;  // why the group failed; empty while it works
  uint64_t next_seq = 1;
  std::optional<Operation> op;
  std::shared_ptr<Ring> ring;
  std::unique_ptr<RingThread> thread;  // last: joined before the buffers above go away

  static inline const char* name = "partita.allreduce";
};

using MemberPointer = allreduce_member::stateful_pointer<MemberState>;

std::string me(const MemberState& s) { return rank_name(s.config.rank); }

// Reports the ring thread's outcome of `job` (0: wiring, else an operation) to the member.
void report(const caf::actor_addr& owner, uint64_t job, std::string why) {
  if (auto strong = caf::actor_cast<caf::strong_actor_ptr>(owner)) {
    caf::anon_send(caf::actor_cast<allreduce_member>(strong), allreduce_ring_atom::value, job, std::move(why));
  }
}

void finish(MemberPointer self, const std::string& why) {
  auto& s = self->state;
  Operation& op = *s.op;
  if (why.empty()) {
    caf::anon_send(op.caller, allreduce_done_atom::value, op.seq, std::move(op.bytes));
  } else {
    caf::anon_send(op.caller, allreduce_failed_atom::value, op.seq,
                   "allreduce operation " + std::to_string(op.seq) + " failed on rank " +
                       std::to_string(s.config.rank) + ": " + why);
  }
  s.op.reset();
}

// The group cannot go on: record why, stop the ring's waits, tell the other members (unless
// one of them told us), and fail an operation that is not running (a running one fails
// through its ring thread's report).
void fail_group(MemberPointer self, const std::string& why, bool tell_others) {
  auto& s = self->state;
  if (!s.failure.empty()) return;
  s.failure = why;
  // Between operations this is usually the job stopping its members; it matters (and is
  // reported to the caller as well) when an operation is under way.
  if (s.op) {
    spdlog::warn("{}: the group failed: {}", me(s), why);
  } else {
    spdlog::debug("{}: the group failed: {}", me(s), why);
  }
  s.ring->abort(why);
  if (tell_others) {
    const uint64_t seq = s.op ? s.op->seq : s.next_seq - 1;
    for (const auto& m : s.members) {
      if (m && m.address() != self->address()) {
        self->send(caf::actor_cast<allreduce_member>(m), allreduce_abort_atom::value, s.group, seq, why);
      }
    }
  }
  if (s.op && !s.op->running) finish(self, why);
}

void start(MemberPointer self) {
  auto& s = self->state;
  Operation& op = *s.op;
  op.running = true;
  float* data = op.local.lease ? op.local.data : reinterpret_cast<float*>(op.bytes.data());
  const size_t n = op.local.lease ? op.local.size : op.bytes.size() / sizeof(float);
  s.thread->post([ring = s.ring, data, n, seq = op.seq, deadline = op.deadline, lease = op.local.lease,
                  owner = self->address()] {
    std::string why;
    {
      std::unique_lock<std::mutex> lock;
      if (lease) {
        lock = std::unique_lock<std::mutex>(lease->mutex);
        if (lease->abandoned) why = "the caller gave up before the operation started";
      }
      if (why.empty()) {
        try {
          ring->run(data, n, seq, deadline);
        } catch (const std::exception& e) {
          why = ring->aborted() ? ring->abort_reason() : e.what();
        }
      }
    }
    report(owner, seq, std::move(why));
  });
}

// Validates and accepts an operation; returns why it is refused (the group stays usable).
std::string accept(MemberPointer self, Operation op, int64_t deadline_ms) {
  auto& s = self->state;
  const std::string what = "operation " + std::to_string(op.seq);
  if (!s.failure.empty()) return "the group failed earlier: " + s.failure;
  if (op.seq != s.next_seq) {
    return what + " is out of order: " + me(s) + " expects operation " + std::to_string(s.next_seq);
  }
  if (s.op) return what + " arrived while operation " + std::to_string(s.op->seq) + " is in progress";
  if (deadline_ms <= 0) return what + ": the deadline must be positive, got " + std::to_string(deadline_ms) + " ms";
  if (op.local.lease == nullptr && op.bytes.size() % sizeof(float) != 0) {
    return what + ": " + std::to_string(op.bytes.size()) + " bytes are not a whole number of float32";
  }
  if (op.local.lease != nullptr && op.local.data == nullptr && op.local.size > 0) return what + ": no buffer";
  ++s.next_seq;
  op.deadline = Clock::now() + milliseconds(deadline_ms);
  s.op = std::move(op);
  if (s.phase == Phase::wired) {
    start(self);
  } else {
    self->delayed_send(self, milliseconds(deadline_ms), allreduce_timeout_atom::value, s.op->seq);
  }
  return "";
}

void on_sum(MemberPointer self, Operation op, int64_t deadline_ms) {
  const uint64_t seq = op.seq;
  const caf::actor caller = op.caller;
  std::string refused = accept(self, std::move(op), deadline_ms);
  if (!refused.empty()) {
    spdlog::warn("{}: refused a sum: {}", me(self->state), refused);
    caf::anon_send(caller, allreduce_failed_atom::value, seq,
                   "allreduce operation " + std::to_string(seq) + " refused by rank " +
                       std::to_string(self->state.config.rank) + ": " + refused);
  }
}

caf::result<bool> on_wire(MemberPointer self, uint64_t group, std::vector<caf::actor>& members,
                          const std::string& right_host, uint16_t right_port, int64_t deadline_ms) {
  auto& s = self->state;
  const int size = s.config.size, rank = s.config.rank;
  if (s.phase != Phase::listening || group != s.group) {
    return refuse(me(s) + ": wire for a group it is not listening for (listen first; a member joins one group once)");
  }
  if (static_cast<int>(members.size()) != size) {
    return refuse(me(s) + ": wired with " + std::to_string(members.size()) + " members, its group has " +
                  std::to_string(size));
  }
  if (members[rank].address() != self->address()) {
    return refuse(me(s) + ": members[" + std::to_string(rank) + "] is another actor");
  }
  for (size_t r = 0; r < members.size(); ++r) {
    if (!members[r]) return refuse(me(s) + ": member " + std::to_string(r) + " is not an actor");
  }
  if (size > 1 && (right_host.empty() || right_port == 0)) {
    return refuse(me(s) + ": no address for its right neighbour");
  }
  if (deadline_ms <= 0) return refuse(me(s) + ": the wiring deadline must be positive");
  s.members = std::move(members);
  for (const auto& m : s.members) {
    if (m.address() != self->address()) self->monitor(m);
  }
  if (size == 1) {
    s.phase = Phase::wired;
    if (s.op) start(self);
    return true;
  }
  s.phase = Phase::wiring;
  s.wired_promise = self->make_response_promise<bool>();  // delivered by on_ring
  s.thread->post([ring = s.ring, listener = std::shared_ptr<runtime::BulkListener>(std::move(s.listener)),
                  right = runtime::Endpoint{right_host, right_port}, group,
                  deadline = Clock::now() + milliseconds(deadline_ms),
                  owner = self->address()] {
    std::string why;
    try {
      ring->wire(*listener, right, group, deadline);
    } catch (const std::exception& e) {
      why = ring->aborted() ? ring->abort_reason() : e.what();
    }
    report(owner, 0, std::move(why));
  });
  return caf::delegated<bool>();
}

void on_ring(MemberPointer self, uint64_t job, const std::string& why) {
  auto& s = self->state;
  if (job == 0) {
    if (s.phase != Phase::wiring) return;
    if (why.empty()) {
      s.phase = Phase::wired;
      spdlog::debug("{}: ring connections up", me(s));
      s.wired_promise.deliver(true);
      if (s.op) start(self);
    } else {
      fail_group(self, "wiring failed: " + why, true);
      s.wired_promise.deliver(refuse(me(s) + ": " + s.failure));
    }
    return;
  }
  if (!s.op || !s.op->running || s.op->seq != job) return;  // a stale report
  if (!why.empty()) fail_group(self, why, true);
  // The group's first failure is the cause; the ring's own error may just be "aborted".
  finish(self, why.empty() ? "" : s.failure);
}

allreduce_member::behavior_type member(MemberPointer self, AllreduceConfig config) {
  auto& s = self->state;
  s.config = std::move(config);
  s.ring = std::make_shared<Ring>(s.config.rank, s.config.size);
  s.thread = std::make_unique<RingThread>(s.ring);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& s = self->state;
    for (size_t r = 0; r < s.members.size(); ++r) {
      if (s.members[r].address() == msg.source) {
        const std::string why = msg.reason == caf::exit_reason::user_shutdown
                                    ? "it was stopped"
                                    : runtime::describe(self->system(), msg.reason);
        fail_group(self, rank_name(static_cast<int>(r)) + " was lost (" + why + ")", true);
        return;
      }
    }
  });
  return {
      [self](allreduce_info_atom) -> caf::result<int32_t, int32_t, uint64_t> {
        auto& s = self->state;
        return {static_cast<int32_t>(s.config.rank), static_cast<int32_t>(s.config.size), s.next_seq};
      },
      [self](allreduce_listen_atom, uint64_t group) -> caf::result<std::string, uint16_t> {
        auto& s = self->state;
        if (group == 0) return refuse(me(s) + ": group token 0 is reserved");
        if (s.phase != Phase::idle) return refuse(me(s) + ": already in a group (a member joins one group once)");
        s.group = group;
        s.phase = Phase::listening;
        if (s.config.size == 1) return {std::string(), uint16_t{0}};
        try {
          s.listener = std::make_unique<runtime::BulkListener>(s.config.host);
        } catch (const Error& e) {
          s.phase = Phase::idle;
          return refuse(me(s) + ": " + e.what());
        }
        return {s.listener->endpoint().host, s.listener->endpoint().port};
      },
      [self](allreduce_wire_atom, uint64_t group, std::vector<caf::actor>& members, const std::string& host,
             uint16_t port, int64_t deadline_ms) { return on_wire(self, group, members, host, port, deadline_ms); },
      [self](allreduce_sum_atom, uint64_t seq, int64_t deadline_ms, std::vector<char>& bytes) {
        Operation op;
        op.seq = seq;
        op.caller = caf::actor_cast<caf::actor>(self->current_sender());
        op.bytes = std::move(bytes);
        on_sum(self, std::move(op), deadline_ms);
      },
      [self](allreduce_sum_atom, uint64_t seq, int64_t deadline_ms, AllreduceLocalBuffer& buffer) {
        Operation op;
        op.seq = seq;
        op.caller = caf::actor_cast<caf::actor>(self->current_sender());
        op.local = std::move(buffer);
        if (!op.local.lease) op.local.lease = std::make_shared<AllreduceLease>();
        on_sum(self, std::move(op), deadline_ms);
      },
      [self](allreduce_abort_atom, uint64_t group, uint64_t seq, const std::string& why) {
        auto& s = self->state;
        if (group != s.group || s.members.empty()) {
          spdlog::warn("{}: ignored an abort for another group", me(s));
          return;
        }
        std::string from = "another member";
        for (size_t r = 0; r < s.members.size(); ++r) {
          if (s.members[r].address() == self->current_sender()) from = rank_name(static_cast<int>(r));
        }
        fail_group(self, from + " failed operation " + std::to_string(seq) + ": " + clip(why), false);
      },
      [self](allreduce_ring_atom, uint64_t job, const std::string& why) { on_ring(self, job, why); },
      [self](allreduce_timeout_atom, uint64_t seq) {
        auto& s = self->state;
        if (s.op && s.op->seq == seq && !s.op->running) {
          finish(self, "not wired into a group within the deadline (" + std::to_string(remaining_ms(s.op->deadline)) +
                           " ms left)");
        }
      },
  };
}

int setting_int(const runtime::Settings& settings, const std::string& key) {
  auto it = settings.find(key);
  if (it == settings.end() || it->second.empty()) throw UsageError("setting '" + key + "' is missing");
  size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size()) throw UsageError("setting '" + key + "': '" + it->second + "' is not a number");
  return value;
}

}  // namespace

allreduce_member spawn_allreduce_member(caf::actor_system& system, const AllreduceConfig& config) {
  if (config.size < 1) throw UsageError("allreduce member: size must be at least 1, got " + std::to_string(config.size));
  if (config.rank < 0 || config.rank >= config.size) {
    throw UsageError("allreduce member: rank " + std::to_string(config.rank) + " is not in 0.." +
                     std::to_string(config.size - 1));
  }
  if (config.host.empty()) throw UsageError("allreduce member: no host to accept ring connections on");
  return system.spawn(member, config);
}

AllreduceConfig allreduce_config_from(const runtime::Settings& settings) {
  AllreduceConfig config;
  config.rank = setting_int(settings, "rank");
  config.size = setting_int(settings, "size");
  if (config.size < 1) throw UsageError("setting 'size': must be at least 1");
  if (config.rank < 0 || config.rank >= config.size) {
    throw UsageError("setting 'rank': " + std::to_string(config.rank) + " is not in 0.." +
                     std::to_string(config.size - 1));
  }
  if (auto it = settings.find("host"); it != settings.end()) {
    if (it->second.empty()) throw UsageError("setting 'host' is empty");
    config.host = it->second;
  }
  return config;
}

void connect_allreduce_group(caf::actor_system& system, const std::vector<caf::actor>& members,
                             std::chrono::milliseconds deadline) {
  if (members.empty()) throw UsageError("allreduce group: no members");
  for (size_t r = 0; r < members.size(); ++r) {
    if (!members[r]) throw UsageError("allreduce group: member " + std::to_string(r) + " is not an actor");
  }
  const size_t n = members.size();
  // A fresh token per wiring: ring connections from another group (or an earlier wiring of
  // these members) are refused.
  std::random_device random;
  const uint64_t group = ((uint64_t{random()} << 32) | random()) | 1;
  const Deadline until = Clock::now() + deadline;
  caf::scoped_actor self{system};
  auto typed = [&](size_t r) { return caf::actor_cast<allreduce_member>(members[r]); };
  std::optional<Error> failure;
  auto fail = [&](size_t r, const std::string& doing, const caf::error& e) {
    if (!failure) {
      failure = Error("allreduce group: " + rank_name(static_cast<int>(r)) + " " + doing + ": " + error_text(system, e));
    }
  };

  std::vector<runtime::Endpoint> endpoints(n);
  for (size_t r = 0; r < n && !failure; ++r) {
    self->request(typed(r), milliseconds(remaining_ms(until)), allreduce_listen_atom::value, group)
        .receive([&](std::string& host, uint16_t port) { endpoints[r] = {std::move(host), port}; },
                 [&](caf::error& e) { fail(r, "cannot listen", e); });
  }
  if (failure) throw *failure;
  // Every member must be asked before any answers: each waits for its left neighbour.
  using Handle = decltype(self->request(typed(0), deadline, allreduce_wire_atom::value, group, members,
                                        std::string(), uint16_t{0}, int64_t{0}));
  std::vector<Handle> handles;
  const int64_t wiring_ms = std::max<int64_t>(1, remaining_ms(until));
  for (size_t r = 0; r < n; ++r) {
    const runtime::Endpoint& right = endpoints[(r + 1) % n];
    handles.push_back(self->request(typed(r), milliseconds(wiring_ms + kReplyGrace.count()), allreduce_wire_atom::value,
                                    group, members, right.host, right.port, wiring_ms));
  }
  for (size_t r = 0; r < n; ++r) {
    handles[r].receive([](bool) {}, [&](caf::error& e) { fail(r, "cannot join the ring", e); });
  }
  if (failure) throw *failure;
  spdlog::debug("allreduce group of {} wired", n);
}

// --- The blocking client ---

Allreduce::Allreduce(caf::actor_system& system, caf::actor member, std::chrono::milliseconds deadline)
    : system_(system), member_(std::move(member)), deadline_(deadline), local_(false) {
  if (!member_) throw UsageError("allreduce: no member");
  if (deadline_.count() <= 0) throw UsageError("allreduce: the deadline must be positive");
  local_ = member_.node() == system_.node();
}

void Allreduce::introduce(caf::scoped_actor& self) {
  std::optional<caf::error> failed;
  self->request(caf::actor_cast<allreduce_member>(member_), deadline_, allreduce_info_atom::value)
      .receive(
          [&](int32_t rank, int32_t, uint64_t next_seq) {
            rank_ = rank;
            next_seq_ = next_seq;
          },
          [&](caf::error& e) { failed = e; });
  if (failed) throw Error("allreduce: its member does not answer: " + error_text(system_, *failed));
}

void Allreduce::sum(float* data, size_t n) {
  if (data == nullptr && n > 0) throw UsageError("allreduce: no buffer for " + std::to_string(n) + " floats");
  caf::scoped_actor self{system_};
  self->monitor(member_);
  // Monitors outlive the scoped actor otherwise: one per call.
  struct Demonitor {
    caf::scoped_actor& self;
    const caf::actor& member;
    ~Demonitor() { self->demonitor(member.address()); }
  } demonitor{self, member_};
  if (next_seq_ == 0) introduce(self);
  const uint64_t seq = next_seq_++;
  const std::string who = rank_name(rank_);
  std::shared_ptr<AllreduceLease> lease;
  if (local_) {
    lease = std::make_shared<AllreduceLease>();
    self->send(caf::actor_cast<allreduce_member>(member_), allreduce_sum_atom::value, seq,
               static_cast<int64_t>(deadline_.count()), AllreduceLocalBuffer{data, n, lease});
  } else {
    std::vector<char> bytes(n * sizeof(float));
    if (n > 0) std::memcpy(bytes.data(), data, bytes.size());
    self->send(caf::actor_cast<allreduce_member>(member_), allreduce_sum_atom::value, seq,
               static_cast<int64_t>(deadline_.count()), std::move(bytes));
  }
  const Deadline give_up = Clock::now() + deadline_ + kReplyGrace;
  bool done = false;
  std::optional<Error> failure;
  while (!done && !failure) {
    self->receive(
        [&](allreduce_done_atom, uint64_t s, std::vector<char>& result) {
          if (s != seq) return;
          if (!local_ && result.size() != n * sizeof(float)) {
            failure = Error(who + " answered with " + std::to_string(result.size()) + " bytes for " +
                            std::to_string(n) + " floats");
          } else if (!local_ && n > 0) {
            std::memcpy(data, result.data(), result.size());
          }
          done = true;
        },
        [&](allreduce_failed_atom, uint64_t s, std::string& why) {
          if (s == seq) failure = Error(why);
        },
        [&](caf::down_msg& msg) {
          const std::string why = msg.reason == caf::exit_reason::user_shutdown
                                      ? "it was stopped"
                                      : runtime::describe(system_, msg.reason);
          failure = Error("allreduce operation " + std::to_string(seq) + ": its member, " + who + ", was lost (" +
                          why + ")");
        },
        caf::after(milliseconds(remaining_ms(give_up))) >> [&] {
          failure = Error("allreduce operation " + std::to_string(seq) + ": no result from " + who + " within " +
                          std::to_string(deadline_.count()) + " ms");
        });
  }
  if (lease) {
    // Waits for the ring thread to let go of the buffer (it stops at its own deadline).
    std::lock_guard<std::mutex> lock(lease->mutex);
    lease->abandoned = true;
  }
  if (failure) {
    next_seq_ = 0;  // ask the member where it stands before the next operation
    throw *failure;
  }
}

}  // namespace partita
