// A node's cache of feature rows owned by other partitions: the rows a sampler would
// otherwise fetch over a feature channel for every batch that holds their nodes.
//
// On a power-law graph a few remote nodes (hubs) appear in a large share of the batches, so
// keeping their rows locally removes a large share of the remote bytes (measured on the
// shared RMAT graph in 2 partitions: 40% with 10% of the other partition's rows, 61% with
// 20%; GraphLearn-for-PyTorch keeps
// the hottest remote features of each partition; GraphBolt caches features with S3-FIFO,
// SIEVE, LRU or CLOCK). Rows are immutable during a job, so a cached row never needs
// invalidating, and a batch built from cached rows is bit-identical to one built from
// fetched rows. Where it sits: in the sampler, before the remote feature request, so only
// the misses cross the transport (actors/sampler_pipeline.cpp).
//
// No cache of that size does much better there (graph/cache_bound.h, `partita bench loader
// --cache-percents`): a batch of 1,024 seeds with fanouts [15,10,5] asks for about 100,900
// of the other partition's 515,000 rows, so 10% of them (51,502) would serve at most 51% of a
// batch even if every batch asked for all of them, and the best any cache of 10% can do in
// expectation, the static top 10% by batches asking, serves 0.40 of the rows asked (held out
// over 256 batches; half takes 14-15%). kDegree's hot set serves 0.395 of the same batches:
// it is at that bound. Even a cache that knew every batch to come would serve 0.499; one
// that sees the next batch's rows and keeps those it shares with the current one, 0.498. Hop 3 asks for two thirds of the rows and three quarters of the
// misses; the share grows with fewer rows per batch (10% serves 0.52 at 256 seeds, 0.55 with
// fanouts [15,10]) and shrinks with more (0.27 at 4,096 seeds).
//
// Three policies, compared in `partita bench loader` (BENCHMARKS.md, "A cache of remote
// rows"); kDegree is the job's default: it hits as often as kFrequency without counting
// first, and 6-14 points more often than kSieve, at less CPU.
//   kDegree: static. The rows admitted are those of the remote nodes with the most edges into
//            this partition (its CSC's sources owned elsewhere): the nodes its own seeds reach
//            first and most often, a local stand-in for GLT's in-degree order. Each is
//            admitted the first time it is fetched and never evicted.
//   kFrequency: static, by sampling frequency (GLT ranks by the probability that sampling
//            from a partition's seeds reaches a node; this measures it): the first
//            kCountedLookups lookups only count how often each remote id is asked for, in a
//            table that takes the room the rows will take; then the most frequent ids, as
//            many as fit, become the hot set, admitted as fetched and never evicted.
//   kSieve:  dynamic (Zhang et al., "SIEVE is simpler than LRU", 2024). Every fetched row is
//            admitted; a hit sets the row's visited bit; when full, a hand walks from the
//            oldest row towards the newest, clearing visited bits, and evicts the first
//            unvisited row, then rests there for the next eviction.
//
// A row of the cache holds all the attributes a batch wants of a node (x, then y), side by
// side, so that one lookup serves them all. Lookups copy cached rows straight into the
// batch. Thread-safe: the samplers of one node share one cache (one mutex; a lookup or an
// admission holds it for a batch's part).
//
// Budget: everything the cache allocates (rows, bookkeeping and the index; kFrequency's
// counting table, which it frees for the rows) is sized to fit `budget_bytes`:
// memory_bytes() never exceeds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/span.h"
#include "graph/partition_book.h"
#include "graph/topology.h"

namespace partita {

enum class CachePolicy { kDegree, kFrequency, kSieve };
const char* cache_policy_name(CachePolicy policy);  // "degree", "frequency", "sieve"
// The policy named `text`; throws UsageError naming `what` and the choices otherwise.
CachePolicy parse_cache_policy(const std::string& text, const std::string& what);

// Where one attribute's rows of a batch are: row k of the lookup at base + positions[k] *
// row_bytes.
struct CacheColumn {
  char* base = nullptr;
  size_t row_bytes = 0;
};

// Counts since construction (relaxed: read them between batches).
struct RowCacheCounts {
  uint64_t lookups = 0;   // rows asked for
  uint64_t hits = 0;      // rows served from the cache
  uint64_t admitted = 0;  // rows stored
  uint64_t evicted = 0;   // rows dropped to make room (kSieve)
};

class RowCache {
 public:
  // kFrequency: the lookups (a batch's rows of one partition each) that only count.
  static constexpr int kCountedLookups = 16;

  // A cache of rows made of columns of `column_bytes` (e.g. {512, 8}: x and y), holding as
  // many as fit in `budget_bytes` with their bookkeeping. Throws UsageError when there is no
  // column or a column is empty.
  RowCache(CachePolicy policy, uint64_t budget_bytes, std::vector<size_t> column_bytes);
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  CachePolicy policy() const { return policy_; }
  const std::vector<size_t>& column_bytes() const { return columns_; }
  size_t row_bytes() const { return row_bytes_; }
  size_t capacity() const { return capacity_; }  // rows
  size_t size() const;                           // rows held
  uint64_t budget_bytes() const { return budget_; }
  // The budget that holds exactly `rows` rows of `row_bytes` (for caches sized in rows).
  static uint64_t budget_for(size_t rows, size_t row_bytes);
  // Whether the row of `id` is held (no visit: for tests).
  bool contains(int64_t id) const;
  // What the cache allocated: at most budget_bytes().
  uint64_t memory_bytes() const;
  RowCacheCounts counts() const;

  // kDegree: the ids it may admit, best first; the first capacity() are kept (any before
  // are forgotten, rows included). Throws Error for another policy or a negative id.
  // (kFrequency sets its own after counting.)
  void set_hot(Span<const int64_t> ids_by_rank);

  // For each k: when ids[k] is cached, copies its row into every column at row
  // positions[k] (kSieve: marks it visited); otherwise appends k to `misses`. `columns` are
  // the cache's columns, in order (checked: Error otherwise).
  void lookup(Span<const int64_t> ids, Span<const int64_t> positions, Span<const CacheColumn> columns,
              std::vector<size_t>& misses);
  // Offers the rows of ids[k] for each k in `which`, read from the columns at row
  // positions[k] (just fetched): stored as the policy says (kDegree: if hot and not held;
  // kSieve: if not held, evicting as needed).
  void admit(Span<const int64_t> ids, Span<const int64_t> positions, Span<const CacheColumn> columns,
             Span<const size_t> which);

 private:
  static constexpr int64_t kEmptyKey = -1;
  static constexpr uint32_t kNone = UINT32_MAX;    // no slot (a hot id not fetched yet)
  struct IndexSlot {
    int64_t key;
    uint32_t slot;
  };
  // Bookkeeping of one stored row; newer/older link the SIEVE queue.
  struct Meta {
    int64_t id;
    uint32_t newer, older;
    bool visited;
  };

  size_t probe(int64_t key) const;  // the index slot holding key, or the empty one it would take
  void erase_index(size_t at);
  void check_columns(Span<const CacheColumn> columns) const;
  uint32_t take_slot();  // a free slot, evicting if the policy does
  void hot_set(Span<const int64_t> ids_by_rank);  // set_hot, with the mutex held
  void count(Span<const int64_t> ids);            // kFrequency, while counting
  void choose_frequent();                         // kFrequency: counting ends
  void store(uint32_t slot, int64_t id, size_t position, Span<const CacheColumn> columns);

  const CachePolicy policy_;
  const uint64_t budget_;
  const std::vector<size_t> columns_;
  const size_t row_bytes_;
  size_t capacity_ = 0;

  mutable std::mutex mutex_;
  std::vector<char> rows_;         // capacity_ rows
  std::vector<Meta> meta_;         // per slot
  std::vector<IndexSlot> index_;   // open addressing, a power of two >= 2 x capacity_
  size_t index_mask_ = 0;
  int index_shift_ = 64;
  // kFrequency while counting: id -> times asked (the slot field), in the rows' room.
  std::vector<IndexSlot> counted_;
  size_t counted_entries_ = 0;
  int lookups_to_count_ = 0;
  size_t used_ = 0;                // slots handed out (they fill in order)
  size_t held_ = 0;                // rows held
  // SIEVE: newest and oldest of the queue, and the hand (the next candidate).
  uint32_t newest_ = kNone, oldest_ = kNone, hand_ = kNone;
  RowCacheCounts counts_;
};

// The remote nodes of `local`'s partition by the number of its in-edges they are the
// source of (ties: smaller id first), those with at least one, the first `limit` of them:
// the kDegree ranking.
std::vector<int64_t> rank_remote_by_edges(const Topology& local, size_t limit);

// A cache for the sampler of `local`'s partition: `policy`, `budget_bytes`, columns of
// `column_bytes`, the hot set ranked by rank_remote_by_edges for kDegree.
std::shared_ptr<RowCache> make_remote_row_cache(CachePolicy policy, uint64_t budget_bytes,
                                                std::vector<size_t> column_bytes, const Topology& local);

}  // namespace partita
