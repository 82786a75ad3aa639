// Feature buffers that go back to the sampler that filled them.
//
// A batch's features are tens of MB (29 MB for [15,10,5] batches of 1024 seeds with 128
// float32 features on RMAT 1M; 95 MB on the undirected benchmark graph). Fresh memory of
// that size is mapped anew by malloc and costs a page fault every 4 KB and a zero fill
// before the first row lands: measured in `partita bench loader` (a), a sampler that
// allocated every batch afresh spent 25 CPU ms per batch against 15 with reused buffers.
// So the consumer of a batch (a trainer, once the step's tensors are gone) hands the
// buffer back, and the sampler fills it again: its size and contents are kept, so that
// sizing it for the next batch neither zeroes nor faults what is already there.
//
// Thread-safe: the sampler takes on its actor's thread, consumers give back on theirs.
// Bounded: it keeps at most `capacity` buffers and frees the rest.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace partita {

class BufferPool {
 public:
  explicit BufferPool(size_t capacity) : capacity_(capacity) {}

  // A buffer given back earlier (the largest, so it fits the next batch most often), or an
  // empty one.
  std::vector<float> take();
  // Keeps `buffer` for a later take() unless the pool is full.
  void give_back(std::vector<float>&& buffer);
  size_t size() const;

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<std::vector<float>> spare_;
};

}  // namespace partita
