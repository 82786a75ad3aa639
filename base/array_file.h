// Flat array files: the unit of Partita's on-disk formats.
//
// A file is a 64-byte header followed by the raw little-endian elements in row-major
// order. The header is self-describing (magic, version, dtype, shape, checksum) so a file
// can be checked and memory-mapped without parsing anything else, and the data starts at
// a 64-byte boundary so a mapped view is aligned for any element type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/checksum.h"
#include "base/dtype.h"
#include "base/mapped_files.h"
#include "base/span.h"

namespace partita {

constexpr char kArrayMagic[8] = {'P', 'T', 'A', 'R', 'R', 'A', 'Y', '\0'};
constexpr uint32_t kArrayFormatVersion = 1;
constexpr int kArrayMaxDims = 4;

struct ArrayHeader {
  char magic[8];
  uint32_t version;
  uint32_t dtype;
  uint32_t ndim;
  uint32_t reserved;
  int64_t shape[kArrayMaxDims];
  uint64_t checksum;  // of the data bytes, see base/checksum.h
};
static_assert(sizeof(ArrayHeader) == 64, "array header must stay 64 bytes");

// Writes an array file in one go or in appended chunks (for arrays built piece by piece,
// so they never need to be whole in memory). The file is valid only after finish().
class ArrayWriter {
 public:
  ArrayWriter(const std::string& path, DType dtype, std::vector<int64_t> shape);
  ~ArrayWriter();
  ArrayWriter(const ArrayWriter&) = delete;
  ArrayWriter& operator=(const ArrayWriter&) = delete;

  void append(const void* data, size_t bytes);
  template <typename T>
  void append(Span<const T> values) {
    append(values.data(), values.size() * sizeof(T));
  }
  // Checks that exactly shape's elements were appended, then writes the header.
  void finish();

 private:
  std::string path_;
  DType dtype_;
  std::vector<int64_t> shape_;
  int fd_ = -1;
  uint64_t expected_bytes_ = 0;
  uint64_t written_bytes_ = 0;
  Checksum checksum_;
};

void write_array(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                 const void* data);
template <typename T>
void write_array(const std::string& path, const std::vector<int64_t>& shape, const T* data) {
  write_array(path, dtype_of<T>(), shape, data);
}
template <typename T>
void write_array(const std::string& path, const std::vector<T>& values) {
  write_array(path, dtype_of<T>(), {static_cast<int64_t>(values.size())}, values.data());
}

// A read-only memory map of an array file. Opening checks the header and that the file
// size matches the shape; verify_checksum() reads every byte and is on request only,
// since a mapped feature file may be larger than RAM. A file truncated while mapped ends
// the process with an error naming it (base/mapped_files.h).
class MappedArray {
 public:
  MappedArray() = default;
  explicit MappedArray(const std::string& path);
  ~MappedArray();
  MappedArray(MappedArray&& other) noexcept;
  MappedArray& operator=(MappedArray&& other) noexcept;
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;

  const std::string& path() const { return path_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i); }
  int64_t num_elements() const;
  const void* raw_data() const { return data_; }
  size_t data_bytes() const { return data_bytes_; }

  // The elements as T; throws an Error naming the file if the dtype is not T.
  template <typename T>
  Span<const T> as() const {
    check_dtype(dtype_of<T>());
    return Span<const T>(static_cast<const T*>(data_), data_bytes_ / sizeof(T));
  }

  // Throws an Error naming the file when the stored checksum does not match the data.
  void verify_checksum() const;
  // Throws an Error naming the file unless shape is exactly `expected` (-1 = any size).
  void expect_shape(const std::vector<int64_t>& expected) const;

 private:
  void check_dtype(DType expected) const;
  void release();

  std::string path_;
  DType dtype_ = DType::kUInt8;
  std::vector<int64_t> shape_;
  uint64_t stored_checksum_ = 0;
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  MappedFileRegistration registration_;  // names the file if it shrinks under the mapping
  const void* data_ = nullptr;
  size_t data_bytes_ = 0;
};

}  // namespace partita
