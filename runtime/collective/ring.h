// The ring allreduce algorithm over one member's two transport connections: no actors here,
// so that it can be tested and measured alone.
//
// A group is N members, ranks 0..N-1; member r receives from its left neighbour r-1 and
// sends to its right neighbour r+1 (mod N). One operation sums one float32 buffer of n
// elements, the same n on every member: a reduce-scatter then an allgather, the buffer cut
// into N contiguous chunks (chunk c is [c*n/N, (c+1)*n/N) in integer arithmetic), each
// streamed in segments of at most 1 MiB so that memory stays bounded and the steps overlap.
// Step k (0..2N-3) sends chunk (rank - k) and receives chunk (rank - k - 1), summing it in
// the first N-1 steps (reduce-scatter) and keeping it in the others (allgather).
//
// The result is bit-identical on every member and from run to run, in one process or across
// machines: element i of chunk c is summed in ring order starting at rank c,
//   ((x[c] + x[c+1]) + x[c+2]) + ... + x[c-1]     (ranks mod N),
// by one member, and copied to the others.
//
// On the wire each operation is an operation header and the floats
// (runtime/transport/wire_format.h, section 3).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/transport/connection.h"
#include "runtime/transport/worker.h"

namespace partita::runtime {

// "allreduce rank 2": how errors name a member.
std::string rank_name(int rank);

// Chunk c of n floats cut into `parts` contiguous chunks starts at c*n/parts.
size_t chunk_begin(size_t n, int parts, int c);

// One segment of a chunk, in floats.
struct RingSegment {
  size_t offset = 0;
  size_t count = 0;     // > 0
  bool reduce = false;  // received: summed into the buffer (else copied over it)
};

// What member `rank` of `size` sends and receives in an operation of n floats, in stream
// order. sends[first + j] may go once recvs[j] arrived (a step sends what the step before
// received). A function of (n, rank, size) only, so that both ends of a connection cut alike.
struct RingSchedule {
  std::vector<RingSegment> sends, recvs;
  size_t first = 0;
};
RingSchedule ring_schedule(size_t n, int rank, int size);

// One member's side of the ring: its two connections and the algorithm over them. An
// operation runs in two halves: the receive half (reading the left neighbour's stream,
// summing) on the thread that calls run(), the send half (writing to the right neighbour) on
// a Worker of the Ring's own, so that each direction moves whenever it can and a member gets
// the CPU share of two threads on a busy machine, as gloo's two do. abort() may be called
// from any thread.
class Ring {
 public:
  Ring(int rank, int size);
  ~Ring();  // aborts and joins the send half
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Makes the current and every later wait fail with `why` (the first reason stays).
  void abort(const std::string& why);
  bool aborted() const { return aborted_.load(); }
  std::string abort_reason() const;

  // Connects to the right neighbour at `right` and accepts the left one's connection on
  // `listener`, both proving membership with `group` (the hello's token). Throws Error
  // naming the neighbour, or the abort's reason.
  void wire(Listener& listener, const Endpoint& right, uint64_t group, Deadline deadline);

  // Sums data[0..n) over the group (see above for the order). Returns (or throws) only once
  // neither half touches `data` any more. Throws Error naming the neighbour that failed or
  // timed out, members that disagree on seq or n, or the abort's reason. Requires wire()
  // (unless the group has one member).
  void run(float* data, size_t n, uint64_t seq, Deadline deadline);

 private:
  // One operation, as both halves see it (guarded by mutex_ where both touch it).
  struct Op {
    char* data = nullptr;
    size_t n = 0;
    uint64_t seq = 0;
    Deadline deadline;
    RingSchedule schedule;
    size_t received = 0;   // recvs done
    bool sending = false;  // the send half has the operation
    std::string send_error;
  };

  void receive_half(Op& op);
  void send_half(Op& op);
  [[noreturn]] void rethrow(const Error& e, const std::string& waiting_for) const;

  const int rank_, size_, left_rank_, right_rank_;
  Wakeup wakeup_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
  std::chrono::milliseconds budget_{0};  // of the running operation, for messages
  Op* op_ = nullptr;                     // the running operation, for the send half's report
  Connection left_;                      // the receive half's
  Connection right_;                     // the send half's
  std::vector<float> scratch_;           // the receive half's
  std::unique_ptr<Worker> sender_;       // the send half; last: stopped before the rest goes
};

}  // namespace partita::runtime
