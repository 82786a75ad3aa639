#include "embeddings/partition_buffer.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "base/stopwatch.h"
#include "embeddings/bucket_order.h"

namespace partita {

namespace {

std::mutex totals_mutex;
PartitionBuffer::Stats totals;

}  // namespace

PartitionBuffer::PartitionBuffer(const EmbeddingPartitions& table, int capacity, int staging,
                                 std::chrono::milliseconds deadline)
    : table_(table), capacity_(capacity), staging_capacity_(staging), deadline_(deadline) {
  check_buffer_shape(table.num_partitions(), capacity, "embeddings");
  if (staging < 0) throw UsageError("partition buffer: staging must be at least 0, got " + std::to_string(staging));
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
  reader_.join();  // a read in flight ends with its pread; the queued ones are not started
}

void PartitionBuffer::reader_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const int partition = queue_.front();
    queue_.pop_front();
    reading_ = partition;
    in_flight_ = true;
    std::vector<float> payload;
    if (!spare_.empty()) {
      payload = std::move(spare_.back());
      spare_.pop_back();
    }
    lock.unlock();
    std::string failed;
    try {
      payload.resize(table_.payload_bytes(partition) / sizeof(float));
      table_.read(partition, Span<float>(payload));
    } catch (const std::exception& e) {
      failed = e.what();
    }
    lock.lock();
    in_flight_ = false;
    if (failed.empty()) {
      staged_.push_back(Staged{partition, std::move(payload)});
    } else {
      // The rest of the request is not read: the training thread learns of the failure at
      // its next wait and reads what it still needs itself.
      payload.clear();
      spare_.push_back(std::move(payload));
      failure_ = failed;
      unread_ += 1 + static_cast<int64_t>(queue_.size());
      queue_.clear();
    }
    cv_.notify_all();
  }
}

void PartitionBuffer::wait_for_reader(const char* why, bool report_failure) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool done = cv_.wait_for(lock, deadline_, [&] { return queue_.empty() && !in_flight_; });
  stats_.reads -= unread_;  // counted when asked for
  unread_ = 0;
  if (!done) {
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

void PartitionBuffer::prefetch(const std::vector<int>& partitions) {
  for (int p : partitions) {
    if (p < 0 || p >= table_.num_partitions()) throw Error("partition buffer: no partition " + std::to_string(p));
  }
  wait_for_reader("before the next prefetch");
  std::lock_guard<std::mutex> lock(mutex_);
  // Staged partitions the request no longer lists give their payloads back.
  for (auto it = staged_.begin(); it != staged_.end();) {
    if (std::find(partitions.begin(), partitions.end(), it->partition) != partitions.end()) {
      ++it;
      continue;
    }
    it->payload.clear();
    spare_.push_back(std::move(it->payload));
    it = staged_.erase(it);
  }
  std::vector<int> wanted;
  for (int p : partitions) {
    const bool staged = std::any_of(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.partition == p; });
    if (resident(p) || staged || std::find(wanted.begin(), wanted.end(), p) != wanted.end()) continue;
    wanted.push_back(p);
  }
  if (staged_.size() + wanted.size() > static_cast<size_t>(staging_capacity_)) {
    throw Error("partition buffer: prefetching " + std::to_string(wanted.size()) + " partitions with " +
                std::to_string(staged_.size()) + " staged, the staging area holds " + std::to_string(staging_capacity_));
  }
  queue_.insert(queue_.end(), wanted.begin(), wanted.end());
  stats_.reads += static_cast<int64_t>(wanted.size());
  stats_.peak_staged = std::max(stats_.peak_staged, static_cast<int>(staged_.size() + wanted.size()));
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
  Stopwatch took;
  bool wrote = false, admitted = false;
  // Leaving first, so that the residents never exceed the budget.
  for (int p = 0; p < table_.num_partitions(); ++p) {
    if (!resident(p) || std::find(state.begin(), state.end(), p) != state.end()) continue;
    std::vector<float>& payload = slots_[static_cast<size_t>(slot_of_[p])];
    table_.write(p, Span<const float>(payload));
    ++stats_.writes;
    wrote = true;
    payload.clear();
    slot_of_[p] = -1;
    --resident_count_;
  }
  const bool arriving = std::any_of(state.begin(), state.end(), [&](int p) { return !resident(p); });
  if (arriving) {
    Stopwatch waited;
    wait_for_reader("admitting partitions");
    stats_.wait_seconds += waited.seconds();
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
    bool taken = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto staged = std::find_if(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.partition == p; });
      if (staged != staged_.end()) {
        slots_[slot].swap(staged->payload);  // the slot's buffer (cleared) goes back to the reader
        spare_.push_back(std::move(staged->payload));
        staged_.erase(staged);
        taken = true;
        ++stats_.prefetched;
      }
    }
    if (!taken) {
      Stopwatch waited;
      std::vector<float>& payload = slots_[slot];
      payload.resize(table_.payload_bytes(p) / sizeof(float));
      try {
        table_.read(p, Span<float>(payload));
      } catch (...) {
        payload.clear();  // an empty slot is a free one: a failed read must not hold on to it
        throw;
      }
      ++stats_.reads;
      stats_.wait_seconds += waited.seconds();
    }
    admitted = true;
    slot_of_[p] = static_cast<int>(slot);
    ++resident_count_;
    stats_.peak_resident = std::max(stats_.peak_resident, resident_count_);
  }
  if (wrote && admitted) {
    ++stats_.swaps;
    stats_.swap_seconds += took.seconds();
  }
}

void PartitionBuffer::flush() {
  drop_staged();
  enter({});
  report_totals();
}

void PartitionBuffer::drop_staged() {
  // A prefetch that failed concerns partitions no longer wanted: not an error of the flush.
  wait_for_reader("flushing", false);
  std::lock_guard<std::mutex> lock(mutex_);
  for (Staged& s : staged_) {
    s.payload.clear();
    spare_.push_back(std::move(s.payload));
  }
  staged_.clear();
}

void PartitionBuffer::report_totals() {
  std::lock_guard<std::mutex> lock(totals_mutex);
  totals.reads += stats_.reads - reported_.reads;
  totals.writes += stats_.writes - reported_.writes;
  totals.prefetched += stats_.prefetched - reported_.prefetched;
  totals.swaps += stats_.swaps - reported_.swaps;
  totals.peak_resident = std::max(totals.peak_resident, stats_.peak_resident);
  totals.peak_staged = std::max(totals.peak_staged, stats_.peak_staged);
  totals.wait_seconds += stats_.wait_seconds - reported_.wait_seconds;
  totals.swap_seconds += stats_.swap_seconds - reported_.swap_seconds;
  reported_ = stats_;
}

PartitionBuffer::Stats PartitionBuffer::process_totals() {
  std::lock_guard<std::mutex> lock(totals_mutex);
  return totals;
}

std::string PartitionBuffer::settle() {
  std::string errors;
  try {
    drop_staged();
  } catch (const std::exception& e) {
    // The reader is stuck past its deadline. What it stages when it ends is the partition's
    // file as it stands: a partition being read is not resident, so nothing here writes it.
    // Its queue is dropped, and what it staged is dropped at the next prefetch or flush.
    errors = e.what();
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.reads -= static_cast<int64_t>(queue_.size());
    queue_.clear();
    staged_.clear();
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
  report_totals();
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
