// The partitions of an on-disk embedding table (embeddings/embedding_partitions.h) that are
// in memory: at most c of them, swapped as the epoch's bucket order (embeddings/bucket_order.h)
// says, with the partitions the next swap admits read on a background thread while the
// current buckets train (MariusGNN's partition buffer).
//
// Budget: at most `capacity` partitions are resident (trainable) at any time; enter()
// writes back and drops the partitions leaving before it admits the ones arriving, checks
// before every admission that a slot is free (an Error otherwise, never a (c+1)-th
// resident), and records the most residents seen (Stats::peak_resident, which the tests
// assert over whole walks).
//
// Prefetch: outside the budget, in a staging area of `staging` partitions, which enter()
// moves into the free slots (no copy). A knowledge-graph job stages one physical partition,
// its l / p logical files (embeddings/bucket_epoch.h): every file the next swap reads. So
// memory holds at most capacity + staging payloads, c + 1 physical partitions (c without
// prefetch), and no staged partition is ever trainable before enter() admits it. Why not
// inside the budget: the walk frees no slot before the swap, since a state's steps draw
// their negatives from every resident partition up to its last step, so the one leaving
// is in use until then; staging inside the c slots would mean walking with c - 1, another
// walk with other batches (the quality figures are c's). Measured (BENCHMARKS.md, "Knowledge-
// graph embeddings on disk"): staging only the first of the 4 logical files left 3 of
// every swap's 4 reads to the training thread.
//
// Threads: one background reader, started by the constructor and joined by the
// destructor; it reads the staged partitions one after another, and stops at the first
// that fails, keeping its error (which names the file and the offset) for the training
// thread: the next wait for the reader (prefetch(), enter()) throws it. Every wait for
// the reader has the deadline given to the constructor and fails with an Error naming the
// partition being read. Rows are touched only by the caller's thread (the trainer); the
// reader writes only staged payloads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/span.h"
#include "embeddings/embedding_partitions.h"

namespace partita {

class PartitionBuffer {
 public:
  struct Stats {
    int64_t reads = 0;        // partitions read from disk (prefetched ones included)
    int64_t writes = 0;       // partitions written back
    int64_t prefetched = 0;   // admissions served by the background reader
    int64_t swaps = 0;        // enter() calls that wrote partitions back and admitted others
    int peak_resident = 0;    // the most partitions resident at once
    int peak_staged = 0;      // the most partitions staged (read or being read) at once
    double wait_seconds = 0;  // time enter() waited for reads (the reader's or its own)
    double swap_seconds = 0;  // time the swaps took in enter() (write-backs and reads): training stopped
  };

  // `staging`: the most partitions prefetch() may read ahead (0: no prefetch). Throws
  // UsageError for capacity < 2 or more than the table's partitions, or staging < 0.
  PartitionBuffer(const EmbeddingPartitions& table, int capacity, int staging, std::chrono::milliseconds deadline);
  ~PartitionBuffer();
  PartitionBuffer(const PartitionBuffer&) = delete;
  PartitionBuffer& operator=(const PartitionBuffer&) = delete;

  int capacity() const { return capacity_; }
  int staging() const { return staging_capacity_; }
  const EmbeddingPartitions& table() const { return table_; }

  // Makes exactly the partitions of `state` resident: those not in it are written back and
  // dropped first, then the missing ones are read (taken from the prefetch when it read
  // one). Throws Error for more than `capacity` partitions, an unknown partition, or a
  // read or write that fails (naming the file and offset).
  void enter(const std::vector<int>& state);
  // Starts reading `partitions` in the background, in order, for a coming enter(): those
  // resident or already staged are skipped, and staged ones not listed are dropped. Waits
  // (deadline) for the reads in flight first, and throws their failure if one failed.
  // Throws Error for an unknown partition or more partitions to stage than `staging`.
  void prefetch(const std::vector<int>& partitions);
  // Writes back every resident partition and drops it, and drops a staged one: after
  // flush() the files hold the table as trained. Throws Error naming the file and offset
  // when a write fails (the partitions not yet written stay resident).
  void flush();
  // Ends a walk that failed midway (a read, a write or a step): writes back every resident
  // partition it can, drops them all and the staged one, whatever fails. After it the
  // buffer is empty, as after flush(), and every file holds its partition whole as last
  // written (a failed write leaves the previous file: embedding_partitions.h), so an
  // evaluation or the next walk reads the files, never a half-entered state. Returns the
  // failures met, "" when every resident partition was written.
  std::string settle();

  bool resident(int partition) const { return slot_of_[static_cast<size_t>(partition)] >= 0; }
  int resident_count() const { return resident_count_; }
  // The values and the Adagrad accumulators of a resident partition, [rows, dim] each.
  // Throws Error naming the partition when it is not resident.
  Span<float> values(int partition);
  Span<float> accumulators(int partition);
  const Stats& stats() const { return stats_; }
  // The stats of every buffer of this process, added up at the end of each walk (flush(),
  // settle()); peaks are the largest. For a benchmark that runs jobs in its process.
  static Stats process_totals();

 private:
  struct Staged {
    int partition = -1;
    std::vector<float> payload;
  };

  void reader_loop();
  // Waits for the reads asked of the reader (if any) to finish; rethrows a failure when
  // `report_failure` (and forgets it otherwise).
  void wait_for_reader(const char* why, bool report_failure = true);
  // Waits for the reader and drops every staged partition (a failed read is not reported).
  void drop_staged();
  // Adds the stats since the last call to process_totals().
  void report_totals();
  std::vector<float>& payload_of(int partition);

  const EmbeddingPartitions& table_;
  int capacity_;
  int staging_capacity_;
  std::chrono::milliseconds deadline_;
  std::vector<std::vector<float>> slots_;  // capacity payloads (empty when free)
  std::vector<int> slot_of_;               // per partition: its slot, or -1
  int resident_count_ = 0;
  Stats stats_;
  Stats reported_;  // stats_ as of the last report_totals()

  // The background reader's requests and results, under mutex_. Invariant:
  // queue_.size() + (in_flight_ ? 1 : 0) + staged_.size() <= staging_capacity_.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<int> queue_;           // partitions to read, in order
  int reading_ = -1;                // the last partition the reader started (for errors)
  bool in_flight_ = false;          // a read is in progress
  int64_t unread_ = 0;              // asked-for reads that failed or were dropped after a failure
  std::vector<Staged> staged_;      // read, waiting for enter()
  std::vector<std::vector<float>> spare_;  // payload buffers to reuse (allocated once)
  bool stopping_ = false;
  std::string failure_;
  std::thread reader_;
};

}  // namespace partita
