#include "training/partition_buffer.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "base/stopwatch.h"
#include "training/bucket_order.h"

namespace partita {

PartitionBuffer::PartitionBuffer(const EmbeddingPartitions& table, int capacity, std::chrono::milliseconds deadline)
    : table_(table), capacity_(capacity), deadline_(deadline) {
  check_buffer_shape(table.num_partitions(), capacity, "embeddings");
  slots_.resize(static_cast<size_t>(capacity));
  slot_of_.assign(static_cast<size_t>(table.num_partitions()), -1);
  reader_ = std::thread([this] { reader_loop(); });
}

PartitionBuffer::~PartitionBuffer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  reader_.join();  // a read in flight ends with its pread
}

void PartitionBuffer::reader_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || requested_ >= 0; });
    if (stopping_) return;
    const int partition = requested_;
    requested_ = -1;
    std::vector<float> payload = std::move(staging_);
    lock.unlock();
    std::string failed;
    try {
      payload.resize(table_.payload_bytes(partition) / sizeof(float));
      table_.read(partition, Span<float>(payload));
    } catch (const std::exception& e) {
      failed = e.what();
    }
    lock.lock();
    staging_ = std::move(payload);
    staged_ = failed.empty() ? partition : -1;
    failure_ = failed;
    busy_ = false;
    cv_.notify_all();
  }
}

void PartitionBuffer::wait_for_reader(const char* why, bool report_failure) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, deadline_, [&] { return !busy_; })) {
    throw Error("partition buffer: the background read of partition " + std::to_string(reading_) + " (" +
                table_.file(reading_) + ") did not finish within " + std::to_string(deadline_.count()) + " ms (" +
                why + ")");
  }
  if (!failure_.empty()) {
    const std::string what = failure_;
    failure_.clear();
    if (report_failure) throw Error("partition buffer: prefetching failed: " + what);
  }
}

void PartitionBuffer::prefetch(int partition) {
  if (partition < 0 || partition >= table_.num_partitions()) {
    throw Error("partition buffer: no partition " + std::to_string(partition));
  }
  if (resident(partition)) return;
  wait_for_reader("before the next prefetch");
  std::lock_guard<std::mutex> lock(mutex_);
  if (staged_ == partition) return;
  staged_ = -1;
  requested_ = partition;
  reading_ = partition;
  busy_ = true;
  ++stats_.reads;
  cv_.notify_all();
}

void PartitionBuffer::enter(const std::vector<int>& state) {
  if (static_cast<int>(state.size()) > capacity_) {
    throw Error("partition buffer: a state of " + std::to_string(state.size()) + " partitions, the buffer holds " +
                std::to_string(capacity_));
  }
  for (int p : state) {
    if (p < 0 || p >= table_.num_partitions()) throw Error("partition buffer: no partition " + std::to_string(p));
  }
  // Leaving first, so that the residents never exceed the budget.
  for (int p = 0; p < table_.num_partitions(); ++p) {
    if (!resident(p) || std::find(state.begin(), state.end(), p) != state.end()) continue;
    std::vector<float>& payload = slots_[static_cast<size_t>(slot_of_[p])];
    table_.write(p, Span<const float>(payload));
    ++stats_.writes;
    payload.clear();
    slot_of_[p] = -1;
    --resident_count_;
  }
  for (int p : state) {
    if (resident(p)) continue;
    // The budget, checked where it could be broken: a slot must be free before one is taken.
    if (resident_count_ >= capacity_) {
      throw Error("partition buffer: admitting partition " + std::to_string(p) + " would make " +
                  std::to_string(resident_count_ + 1) + " resident, the budget is " + std::to_string(capacity_));
    }
    const size_t slot = static_cast<size_t>(std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return s.empty(); }) -
                                            slots_.begin());
    Stopwatch waited;
    wait_for_reader("admitting a partition");
    bool taken = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (staged_ == p) {
        slots_[slot].swap(staging_);
        staged_ = -1;
        taken = true;
        ++stats_.prefetched;
      }
    }
    if (!taken) {
      std::vector<float>& payload = slots_[slot];
      payload.resize(table_.payload_bytes(p) / sizeof(float));
      try {
        table_.read(p, Span<float>(payload));
      } catch (...) {
        payload.clear();  // an empty slot is a free one: a failed read must not hold on to it
        throw;
      }
      ++stats_.reads;
    }
    stats_.wait_seconds += waited.seconds();
    slot_of_[p] = static_cast<int>(slot);
    ++resident_count_;
    stats_.peak_resident = std::max(stats_.peak_resident, resident_count_);
  }
}

void PartitionBuffer::flush() {
  drop_staged();
  enter({});
}

void PartitionBuffer::drop_staged() {
  // A prefetch that failed concerns a partition no longer wanted: not an error of the flush.
  wait_for_reader("flushing", false);
  std::lock_guard<std::mutex> lock(mutex_);
  staged_ = -1;
}

std::string PartitionBuffer::settle() {
  std::string errors;
  try {
    drop_staged();
  } catch (const std::exception& e) {
    // The reader is stuck past its deadline. What it stages when it ends is the partition's
    // file as it stands: a partition being read is not resident, so nothing here writes it.
    errors = e.what();
    std::lock_guard<std::mutex> lock(mutex_);
    staged_ = -1;
  }
  for (int p = 0; p < table_.num_partitions(); ++p) {
    if (!resident(p)) continue;
    std::vector<float>& payload = slots_[static_cast<size_t>(slot_of_[p])];
    try {
      table_.write(p, Span<const float>(payload));
      ++stats_.writes;
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string(e.what());
    }
    payload.clear();
    slot_of_[p] = -1;
    --resident_count_;
  }
  return errors;
}

std::vector<float>& PartitionBuffer::payload_of(int partition) {
  if (partition < 0 || partition >= table_.num_partitions() || !resident(partition)) {
    throw Error("partition buffer: partition " + std::to_string(partition) + " is not resident");
  }
  return slots_[static_cast<size_t>(slot_of_[partition])];
}

Span<float> PartitionBuffer::values(int partition) {
  std::vector<float>& payload = payload_of(partition);
  return Span<float>(payload.data(), payload.size() / 2);
}

Span<float> PartitionBuffer::accumulators(int partition) {
  std::vector<float>& payload = payload_of(partition);
  return Span<float>(payload.data() + payload.size() / 2, payload.size() / 2);
}

}  // namespace partita
