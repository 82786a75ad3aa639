// An entity embedding table on disk, split into p physical partitions, each with its
// Adagrad accumulators: the storage a partition buffer (embeddings/partition_buffer.h) swaps
// in and out when the table does not fit in memory (MariusGNN's on-disk embeddings).
//
// Partitions are ranges of row ids: partition i holds rows [i*N/p, (i+1)*N/p). Ranges
// because a partition is then one contiguous run of rows, read and written with one
// pread/pwrite, and the row -> (partition, offset) map is arithmetic. Which entity a row
// holds is the caller's (a knowledge-graph job shuffles them: embeddings/bucket_epoch.h
// table_ids); the bucket sizes it gives on FB15k-237 are in the job's log.
//
// Files: `dir`/part-<i>.bin, one per partition: a 64-byte header (magic, index, first id,
// end id, dim, checksum of the payload) and the payload, the rows' values [rows, dim] then
// their accumulators [rows, dim], float32, native byte order. Every write recomputes the
// checksum and replaces the file whole (written to part-<i>.bin.tmp, renamed over it), so a
// write cut short leaves the previous partition; every read checks the header and the
// checksum, so a torn, short or corrupt file is an Error naming the file and the offset,
// never silently wrong embeddings.
//
// Initial values: as the in-memory table (embeddings/embedding_shard.h initial_embedding_row,
// keyed by each row's original entity id), so a job gives the same first embeddings
// whichever storage it uses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "base/span.h"

namespace partita {

class EmbeddingPartitions {
 public:
  // The table's size and its split: partition i holds rows [begin(i), end(i)).
  struct Shape {
    int64_t num_entities = 0;
    int num_partitions = 1;
    int64_t dim = 0;
    int64_t begin(int partition) const { return num_entities * partition / num_partitions; }
    int64_t end(int partition) const { return begin(partition + 1); }
    // The partition of entity `id`; Error for an id outside [0, num_entities).
    int partition_of(int64_t id) const;
  };
  // Creates `dir` (and its parents) and writes every partition with its initial values
  // (N(0, init_std) keyed by (seed, key_of_row[row]), or by the row id when key_of_row is
  // empty) and accumulators `initial_accumulator`. Throws Error when key_of_row is neither
  // empty nor one key per row.
  // Throws UsageError naming the folder when it cannot be created or written, and for a
  // shape with no entities, p < 1, p > entities or dim < 1.
  static EmbeddingPartitions create(const std::string& dir, Shape shape, uint64_t seed, double init_std,
                                    double initial_accumulator, Span<const int64_t> key_of_row = {});
  // Opens the table in `dir` (as create wrote it); throws Error naming the file whose
  // header does not match `shape`.
  static EmbeddingPartitions open(const std::string& dir, Shape shape);

  // Checkpoints (a job's --resume): snapshot() links every partition file as it stands
  // into `snapshot_dir` with `tag` (a job writes the epoch), replacing the previous
  // snapshot whole (built in `snapshot_dir`.tmp and renamed); hard links, since a write
  // never changes a file in place but renames a new one over it, so a snapshot costs no
  // copy and later writes leave it as taken (copies where the file system has no links).
  // restore() puts the snapshot's files back in `dir` and opens them; it throws Error
  // naming the folder when the snapshot is missing or its tag is not `tag` (a checkpoint
  // and a table of different epochs), and as open() for files that do not match `shape`.
  void snapshot(const std::string& snapshot_dir, const std::string& tag) const;
  static EmbeddingPartitions restore(const std::string& snapshot_dir, const std::string& tag, const std::string& dir,
                                     Shape shape);

  EmbeddingPartitions(EmbeddingPartitions&&) = default;
  EmbeddingPartitions& operator=(EmbeddingPartitions&&) = default;

  const std::string& dir() const { return dir_; }
  const Shape& shape() const { return shape_; }
  int num_partitions() const { return shape_.num_partitions; }
  int64_t dim() const { return shape_.dim; }
  int64_t begin(int partition) const { return shape_.begin(partition); }
  int64_t end(int partition) const { return shape_.end(partition); }
  int64_t rows(int partition) const { return end(partition) - begin(partition); }
  int partition_of(int64_t id) const { return shape_.partition_of(id); }
  std::string file(int partition) const;
  // Bytes of one partition's payload (values and accumulators).
  size_t payload_bytes(int partition) const { return static_cast<size_t>(rows(partition) * shape_.dim) * 2 * sizeof(float); }

  // Reads partition i's values and accumulators into `payload` (payload_bytes(i) bytes:
  // values first). Throws Error naming the file and offset on a short read or a checksum
  // mismatch. Safe to call from several threads for different partitions.
  void read(int partition, Span<float> payload) const;
  // Writes them back (and the header's new checksum), replacing the file whole: after a
  // failed (or interrupted) write the file holds the partition as before. Throws Error
  // naming the file and offset when the write fails.
  void write(int partition, Span<const float> payload) const;
  // Rows `ids` (row ids, any order) of values only, into out[i * dim, ...), one pread
  // per row; checks no checksum (evaluation reads a table just written).
  void read_rows(Span<const int64_t> ids, float* out) const;

 private:
  EmbeddingPartitions(std::string dir, Shape shape);
  void check_header(int partition) const;

  std::string dir_;
  Shape shape_;
  std::vector<std::unique_ptr<ScopedFd>> files_;  // per partition, read-write
};

}  // namespace partita
