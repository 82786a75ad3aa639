// The order in which a partition buffer walks the edge buckets of an embedding table split
// into p partitions (Marius's BETA ordering, "Buffer-aware Edge Traversal Algorithm").
//
// Edge bucket (i, j) holds the triples whose head is in partition i and tail in partition
// j; it can train only while both partitions are in the buffer, which holds c of them.
// An epoch is a sequence of buffer states, each differing from the previous by one swap
// (one partition written back, another read in); every bucket is listed in the first
// state that holds both its ends, so each bucket is visited exactly once per epoch (a
// job's walk then spreads a bucket's triples over every state holding both ends:
// embeddings/bucket_epoch.h).
//
// Why BETA: swaps are the I/O of the epoch. A swap admits one partition, which meets at
// most c - 1 partitions it has not been resident with, and the first state covers c(c-1)/2
// pairs, so an epoch needs at least ceil((p(p-1)/2 - c(c-1)/2) / (c - 1)) swaps
// (swap_lower_bound). BETA keeps c - 1 partitions fixed and cycles the last slot through
// every partition they have not met; then the fixed ones are done, and the next c - 1 not
// yet done become the fixed set (the partition in the cycling slot stays, saving a swap).
// It meets the bound for c = 2 and comes within a few swaps of it otherwise (p = 8, c = 4:
// 9 swaps against a bound of 8; tests/embeddings/bucket_order_test.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace partita {

struct BucketOrder {
  int num_partitions = 0;
  int capacity = 0;
  // states[k][slot]: the partition in each of the c slots in state k; consecutive states
  // differ in exactly one slot (the swap).
  std::vector<std::vector<int>> states;
  // buckets[k]: the (head partition, tail partition) buckets trained in state k, in order.
  // Every one of the p * p buckets appears exactly once over all states.
  std::vector<std::vector<std::pair<int, int>>> buckets;

  int64_t swaps() const { return states.empty() ? 0 : static_cast<int64_t>(states.size()) - 1; }
};

// The fewest swaps any order of p partitions through a buffer of c needs (0 when c == p).
int64_t swap_lower_bound(int num_partitions, int capacity);

// BETA's order for p partitions and a buffer of c. Throws UsageError naming the problem for
// p < 1, c < 2 or c > p.
BucketOrder beta_order(int num_partitions, int capacity);

// Checks a buffer's size fields as a job gives them: UsageError naming `field` for p < 1,
// c < 2 or c > p.
void check_buffer_shape(int num_partitions, int capacity, const char* field);

}  // namespace partita
