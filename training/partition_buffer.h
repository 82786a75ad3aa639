// The partitions of an on-disk embedding table (training/embedding_partitions.h) that are
// in memory: at most c of them, swapped as the epoch's bucket order (training/bucket_order.h)
// says, with the next partition read on a background thread while the current buckets
// train (MariusGNN's partition buffer).
//
// Budget: at most `capacity` partitions are resident (trainable) at any time; enter()
// writes back and drops the partitions leaving before it admits the ones arriving, checks
// before every admission that a slot is free (an Error otherwise, never a (c+1)-th
// resident), and records the most residents seen (Stats::peak_resident, which the tests
// assert over whole walks). A
// prefetched partition waits in one staging payload outside the budget until enter()
// admits it, so memory holds at most c + 1 partitions' payloads (c without prefetch).
//
// Threads: one background reader, started by the constructor and joined by the
// destructor; at most one read in flight. Every wait for it has the deadline given to the
// constructor and fails with an Error naming the partition. Rows are touched only by the
// caller's thread (the trainer); the reader writes only the staging payload.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/span.h"
#include "training/embedding_partitions.h"

namespace partita {

class PartitionBuffer {
 public:
  struct Stats {
    int64_t reads = 0;       // partitions read from disk (prefetched ones included)
    int64_t writes = 0;      // partitions written back
    int64_t prefetched = 0;  // admissions served by the background read
    int peak_resident = 0;   // the most partitions resident at once
    double wait_seconds = 0; // time enter() waited for reads (background or its own)
  };

  // Throws UsageError for capacity < 2 or more than the table's partitions.
  PartitionBuffer(const EmbeddingPartitions& table, int capacity, std::chrono::milliseconds deadline);
  ~PartitionBuffer();
  PartitionBuffer(const PartitionBuffer&) = delete;
  PartitionBuffer& operator=(const PartitionBuffer&) = delete;

  int capacity() const { return capacity_; }
  const EmbeddingPartitions& table() const { return table_; }

  // Makes exactly the partitions of `state` resident: those not in it are written back and
  // dropped first, then the missing ones are read (taken from the prefetch when it read
  // one). Throws Error for more than `capacity` partitions, an unknown partition, or a
  // read or write that fails (naming the file and offset).
  void enter(const std::vector<int>& state);
  // Starts reading `partition` in the background for a coming enter(); a no-op when it is
  // resident or already staged. Waits (deadline) for a read still in flight first.
  void prefetch(int partition);
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

 private:
  void reader_loop();
  // Waits for the read in flight (if any) to finish; rethrows its failure when
  // `report_failure` (and forgets it otherwise).
  void wait_for_reader(const char* why, bool report_failure = true);
  // Waits for the reader and drops the partition it staged (a failed read is not reported).
  void drop_staged();
  std::vector<float>& payload_of(int partition);

  const EmbeddingPartitions& table_;
  int capacity_;
  std::chrono::milliseconds deadline_;
  std::vector<std::vector<float>> slots_;  // capacity payloads (empty when free)
  std::vector<int> slot_of_;               // per partition: its slot, or -1
  int resident_count_ = 0;
  Stats stats_;

  // The background reader's request and result, under mutex_.
  std::mutex mutex_;
  std::condition_variable cv_;
  int requested_ = -1;  // partition to read, -1: none
  int reading_ = -1;    // the last partition asked of the reader (for errors)
  int staged_ = -1;     // partition whose payload is in staging_, -1: none
  bool busy_ = false;   // a read is in flight
  bool stopping_ = false;
  std::string failure_;
  std::vector<float> staging_;
  std::thread reader_;
};

}  // namespace partita
