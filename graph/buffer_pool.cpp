#include "graph/buffer_pool.h"

#include <algorithm>
#include <utility>

namespace partita {

std::vector<float> BufferPool::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (spare_.empty()) return {};
  auto largest = std::max_element(spare_.begin(), spare_.end(),
                                  [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
  std::vector<float> buffer = std::move(*largest);
  spare_.erase(largest);
  return buffer;
}

void BufferPool::give_back(std::vector<float>&& buffer) {
  if (buffer.capacity() == 0) return;
  std::vector<float> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  if (spare_.size() < capacity_) {
    spare_.push_back(std::move(buffer));
  } else {
    dropped = std::move(buffer);
  }
}

size_t BufferPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spare_.size();
}

}  // namespace partita
