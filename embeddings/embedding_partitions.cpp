#include "embeddings/embedding_partitions.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/checksum.h"
#include "base/error.h"
#include "embeddings/embedding_shard.h"

namespace partita {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'P', 'T', 'E', 'M', 'B', 'P', '0', '1'};

struct Header {
  char magic[8];
  int64_t index, begin, end, dim;
  uint64_t checksum;
  int64_t reserved[2];
};
static_assert(sizeof(Header) == 64, "the header is 64 bytes");

void pread_exactly(int fd, const std::string& path, char* out, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw Error(path + ": " + (got == 0 ? std::string("short read") : errno_text()) + " at offset " +
                  std::to_string(offset + done) + " (" + std::to_string(bytes - done) + " of " + std::to_string(bytes) +
                  " bytes missing)");
    }
    done += static_cast<size_t>(got);
  }
}

void pwrite_all(int fd, const std::string& path, const char* data, size_t bytes, uint64_t offset) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t put = ::pwrite(fd, data + done, bytes - done, static_cast<off_t>(offset + done));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) {
      throw Error(path + ": writing " + std::to_string(bytes) + " bytes failed at offset " +
                  std::to_string(offset + done) + ": " + (put == 0 ? std::string("no progress") : errno_text()));
    }
    done += static_cast<size_t>(put);
  }
}

}  // namespace

EmbeddingPartitions::EmbeddingPartitions(std::string dir, Shape shape) : dir_(std::move(dir)), shape_(shape) {
  if (shape_.num_entities < 1) throw UsageError("embeddings: the table has no entities");
  if (shape_.num_partitions < 1) {
    throw UsageError("embeddings.partitions: must be at least 1, got " + std::to_string(shape_.num_partitions));
  }
  if (shape_.num_partitions > shape_.num_entities) {
    throw UsageError("embeddings.partitions: " + std::to_string(shape_.num_partitions) + " partitions for " +
                     std::to_string(shape_.num_entities) + " entities");
  }
  if (shape_.dim < 1) throw UsageError("embeddings: dim must be at least 1");
}

std::string EmbeddingPartitions::file(int partition) const {
  return (fs::path(dir_) / ("part-" + std::to_string(partition) + ".bin")).string();
}

int EmbeddingPartitions::Shape::partition_of(int64_t id) const {
  if (id < 0 || id >= num_entities) {
    throw Error("embeddings: entity " + std::to_string(id) + " is not in [0, " + std::to_string(num_entities) + ")");
  }
  // The largest i with begin(i) <= id: begin is floor(N i / p), so start from the estimate.
  int i = static_cast<int>((id * num_partitions) / num_entities);
  while (i + 1 < num_partitions && begin(i + 1) <= id) ++i;
  while (begin(i) > id) --i;
  return i;
}

EmbeddingPartitions EmbeddingPartitions::create(const std::string& dir, Shape shape, uint64_t seed, double init_std,
                                                double initial_accumulator, Span<const int64_t> key_of_row) {
  EmbeddingPartitions table(dir, shape);
  if (!key_of_row.empty() && static_cast<int64_t>(key_of_row.size()) != shape.num_entities) {
    throw Error("embeddings: " + std::to_string(key_of_row.size()) + " initial-value keys for " +
                std::to_string(shape.num_entities) + " rows");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw UsageError("embeddings: cannot create the folder " + dir + (ec ? ": " + ec.message() : std::string()));
  }
  if (::access(dir.c_str(), W_OK) != 0) throw UsageError("embeddings: the folder " + dir + " is not writable");
  for (int i = 0; i < shape.num_partitions; ++i) {
    const std::string path = table.file(i);
    // A new file, never the old one truncated: a snapshot may hold the old one's links.
    ::unlink(path.c_str());
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw UsageError("embeddings: cannot create " + path + ": " + errno_text());
    table.files_.push_back(std::make_unique<ScopedFd>(fd));
    std::vector<float> payload(table.payload_bytes(i) / sizeof(float));
    const int64_t rows = table.rows(i);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = table.begin(i) + r;
      initial_embedding_row(seed, init_std, key_of_row.empty() ? row : key_of_row[static_cast<size_t>(row)], shape.dim,
                            payload.data() + r * shape.dim);
    }
    std::fill(payload.begin() + rows * shape.dim, payload.end(), static_cast<float>(initial_accumulator));
    table.write(i, Span<const float>(payload));
  }
  return table;
}

EmbeddingPartitions EmbeddingPartitions::open(const std::string& dir, Shape shape) {
  EmbeddingPartitions table(dir, shape);
  for (int i = 0; i < shape.num_partitions; ++i) {
    const std::string path = table.file(i);
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw Error("embeddings: cannot open " + path + ": " + errno_text());
    table.files_.push_back(std::make_unique<ScopedFd>(fd));
    table.check_header(i);
  }
  return table;
}

namespace {

namespace fs = std::filesystem;

// `to` as a hard link to `from`, or a copy where links fail; replaces `to`.
void link_or_copy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::remove(to, ec);
  fs::create_hard_link(from, to, ec);
  if (ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

const char* const kTagFile = "tag";

}  // namespace

void EmbeddingPartitions::snapshot(const std::string& snapshot_dir, const std::string& tag) const {
  const fs::path target(snapshot_dir), tmp(snapshot_dir + ".tmp"), old(snapshot_dir + ".old");
  try {
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    for (int i = 0; i < num_partitions(); ++i) {
      link_or_copy(file(i), tmp / fs::path(file(i)).filename());
    }
    write_file_atomically((tmp / kTagFile).string(), tag);
    fs::remove_all(old);
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(tmp, target);
    fs::remove_all(old);
  } catch (const fs::filesystem_error& e) {
    throw Error("embeddings: cannot snapshot the table into " + snapshot_dir + ": " + e.what());
  }
}

EmbeddingPartitions EmbeddingPartitions::restore(const std::string& snapshot_dir, const std::string& tag,
                                                 const std::string& dir, Shape shape) {
  const fs::path from(snapshot_dir);
  const std::string found = read_file_if_exists((from / kTagFile).string());
  if (found.empty()) throw Error("embeddings: no snapshot of the table in " + snapshot_dir);
  if (found != tag) {
    throw Error("embeddings: the table's snapshot in " + snapshot_dir + " is of " + found + ", the checkpoint of " + tag);
  }
  {
    const EmbeddingPartitions names(dir, shape);
    try {
      for (int i = 0; i < shape.num_partitions; ++i) {
        const fs::path live(names.file(i));
        const fs::path staged(names.file(i) + ".tmp");
        link_or_copy(from / live.filename(), staged);
        fs::rename(staged, live);
        std::error_code ec;
        fs::remove(staged, ec);  // rename() leaves it when it was already the live file's link
      }
    } catch (const fs::filesystem_error& e) {
      throw Error("embeddings: cannot restore the table from " + snapshot_dir + ": " + e.what());
    }
  }
  return open(dir, shape);
}

void EmbeddingPartitions::check_header(int partition) const {
  const std::string path = file(partition);
  Header h;
  pread_exactly(files_[partition]->get(), path, reinterpret_cast<char*>(&h), sizeof(h), 0);
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) throw Error(path + ": not an embedding partition (bad magic at offset 0)");
  if (h.index != partition || h.begin != begin(partition) || h.end != end(partition) || h.dim != shape_.dim) {
    throw Error(path + ": holds partition " + std::to_string(h.index) + ", entities [" + std::to_string(h.begin) + ", " +
                std::to_string(h.end) + ") of dim " + std::to_string(h.dim) + "; expected partition " +
                std::to_string(partition) + ", [" + std::to_string(begin(partition)) + ", " + std::to_string(end(partition)) +
                ") of dim " + std::to_string(shape_.dim));
  }
}

void EmbeddingPartitions::read(int partition, Span<float> payload) const {
  const std::string path = file(partition);
  if (payload.size() * sizeof(float) != payload_bytes(partition)) {
    throw Error(path + ": a read into " + std::to_string(payload.size() * sizeof(float)) + " bytes, the payload is " +
                std::to_string(payload_bytes(partition)));
  }
  const int fd = files_[partition]->get();
  Header h;
  pread_exactly(fd, path, reinterpret_cast<char*>(&h), sizeof(h), 0);
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0 || h.index != partition || h.dim != shape_.dim) {
    throw Error(path + ": the header at offset 0 is not partition " + std::to_string(partition) + "'s");
  }
  pread_exactly(fd, path, reinterpret_cast<char*>(payload.data()), payload_bytes(partition), sizeof(Header));
  if (checksum(payload.data(), payload_bytes(partition)) != h.checksum) {
    throw Error(path + ": the payload at offset " + std::to_string(sizeof(Header)) + " (" +
                std::to_string(payload_bytes(partition)) + " bytes) is corrupt (checksum mismatch)");
  }
}

void EmbeddingPartitions::write(int partition, Span<const float> payload) const {
  const std::string path = file(partition);
  if (payload.size() * sizeof(float) != payload_bytes(partition)) {
    throw Error(path + ": a write of " + std::to_string(payload.size() * sizeof(float)) + " bytes, the payload is " +
                std::to_string(payload_bytes(partition)));
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.index = partition;
  h.begin = begin(partition);
  h.end = end(partition);
  h.dim = shape_.dim;
  h.checksum = checksum(payload.data(), payload_bytes(partition));
  // Written whole to a sibling and renamed over the partition's file, so that a write cut
  // short (a crash, a full disk) leaves the previous file, which loads as it was, never a
  // torn one whose header is intact (open() checks headers only, read_rows() no checksum).
  // No fsync: the table is created afresh by every job, so it need not survive power loss.
  const std::string tmp = path + ".tmp";
  ScopedFd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw Error(tmp + ": cannot create: " + errno_text());
  try {
    pwrite_all(fd.get(), tmp, reinterpret_cast<const char*>(&h), sizeof(h), 0);
    pwrite_all(fd.get(), tmp, reinterpret_cast<const char*>(payload.data()), payload_bytes(partition), sizeof(Header));
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot replace " + path + ": " + errno_text());
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The partition's descriptor still refers to the replaced file: make it the new one's.
  if (::dup2(fd.get(), files_[partition]->get()) < 0) {
    throw Error(path + ": cannot reopen after writing: " + errno_text());
  }
}

void EmbeddingPartitions::read_rows(Span<const int64_t> ids, float* out) const {
  const size_t row_bytes = static_cast<size_t>(shape_.dim) * sizeof(float);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int part = partition_of(ids[i]);
    pread_exactly(files_[part]->get(), file(part), reinterpret_cast<char*>(out + i * shape_.dim), row_bytes,
                  sizeof(Header) + static_cast<uint64_t>(ids[i] - begin(part)) * row_bytes);
  }
}

}  // namespace partita
