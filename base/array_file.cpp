#include "base/array_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/file_util.h"

namespace partita {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "array files are little-endian and mapped as-is");

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Data bytes of a shape, or -1 on a negative dimension or when the size overflows: a
// corrupt header must not wrap around to a small size that matches the file.
int64_t checked_bytes(const int64_t* shape, size_t ndim, DType dtype) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (size_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0 || __builtin_mul_overflow(bytes, shape[i], &bytes)) return -1;
  }
  return bytes;
}

}  // namespace

ArrayWriter::ArrayWriter(const std::string& path, DType dtype, std::vector<int64_t> shape)
    : path_(path), dtype_(dtype), shape_(std::move(shape)) {
  if (shape_.empty() || shape_.size() > kArrayMaxDims) {
    throw file_error(path_, "array must have 1 to 4 dimensions, got " + shape_text(shape_));
  }
  int64_t bytes = checked_bytes(shape_.data(), shape_.size(), dtype_);
  if (bytes < 0) throw file_error(path_, "invalid array shape " + shape_text(shape_));
  expected_bytes_ = static_cast<uint64_t>(bytes);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw file_error(path_, "cannot create file: " + errno_text());
  // Until finish() rewrites it, the header's magic is zero: a torn file never looks valid.
  ArrayHeader blank{};
  write_all(fd_, path_, &blank, sizeof(blank));
}

ArrayWriter::~ArrayWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ArrayWriter::append(const void* data, size_t bytes) {
  if (written_bytes_ + bytes > expected_bytes_) {
    throw file_error(path_, "more data than the declared shape " + shape_text(shape_));
  }
  write_all(fd_, path_, data, bytes);
  checksum_.update(data, bytes);
  written_bytes_ += bytes;
}

void ArrayWriter::finish() {
  if (written_bytes_ != expected_bytes_) {
    throw file_error(path_, "wrote " + std::to_string(written_bytes_) + " bytes, shape " +
                                shape_text(shape_) + " needs " + std::to_string(expected_bytes_));
  }
  ArrayHeader header{};
  std::memcpy(header.magic, kArrayMagic, sizeof(kArrayMagic));
  header.version = kArrayFormatVersion;
  header.dtype = static_cast<uint32_t>(dtype_);
  header.ndim = static_cast<uint32_t>(shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i) header.shape[i] = shape_[i];
  header.checksum = checksum_.digest();
  if (::pwrite(fd_, &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header))) {
    throw file_error(path_, "cannot write header: " + errno_text());
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw file_error(path_, "close failed: " + errno_text());
  }
  fd_ = -1;
}

void write_array(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                 const void* data) {
  ArrayWriter writer(path, dtype, shape);
  writer.append(data, static_cast<size_t>(checked_bytes(shape.data(), shape.size(), dtype)));
  writer.finish();
}

MappedArray::MappedArray(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error(path, "cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw file_error(path, "cannot stat: " + errno_text());
  }
  size_t file_bytes = static_cast<size_t>(st.st_size);
  if (file_bytes < sizeof(ArrayHeader)) {
    ::close(fd);
    throw file_error(path, "truncated: " + std::to_string(file_bytes) +
                               " bytes, shorter than the 64-byte array header");
  }
  void* mapping = ::mmap(nullptr, file_bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) throw file_error(path, "mmap failed: " + errno_text());
  mapping_ = mapping;
  mapping_bytes_ = file_bytes;
  registration_ = MappedFileRegistration(mapping_, mapping_bytes_, path);

  ArrayHeader header;
  std::memcpy(&header, mapping_, sizeof(header));
  if (std::memcmp(header.magic, kArrayMagic, sizeof(kArrayMagic)) != 0) {
    release();
    throw file_error(path, "not a Partita array file (bad magic)");
  }
  if (header.version != kArrayFormatVersion) {
    release();
    throw file_error(path, "unsupported array format version " + std::to_string(header.version) +
                               " (this build reads version " +
                               std::to_string(kArrayFormatVersion) + ")");
  }
  if (!dtype_is_valid(header.dtype)) {
    release();
    throw file_error(path, "invalid dtype code " + std::to_string(header.dtype));
  }
  if (header.ndim < 1 || header.ndim > kArrayMaxDims) {
    release();
    throw file_error(path, "invalid number of dimensions " + std::to_string(header.ndim));
  }
  dtype_ = static_cast<DType>(header.dtype);
  shape_.assign(header.shape, header.shape + header.ndim);
  int64_t bytes = checked_bytes(header.shape, header.ndim, dtype_);
  if (bytes < 0) {
    release();
    throw file_error(path, "invalid shape " + shape_text(shape_));
  }
  uint64_t expected = static_cast<uint64_t>(bytes);
  if (file_bytes - sizeof(ArrayHeader) != expected) {
    release();
    throw file_error(path, "size mismatch: shape " + shape_text(shape_) + " of " +
                               std::string(dtype_name(dtype_)) + " needs " +
                               std::to_string(expected) + " data bytes, file has " +
                               std::to_string(file_bytes - sizeof(ArrayHeader)));
  }
  stored_checksum_ = header.checksum;
  data_ = static_cast<const char*>(mapping_) + sizeof(ArrayHeader);
  data_bytes_ = expected;
}

MappedArray::~MappedArray() { release(); }

MappedArray::MappedArray(MappedArray&& other) noexcept { *this = std::move(other); }

MappedArray& MappedArray::operator=(MappedArray&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    stored_checksum_ = other.stored_checksum_;
    mapping_ = other.mapping_;
    mapping_bytes_ = other.mapping_bytes_;
    registration_ = std::move(other.registration_);
    data_ = other.data_;
    data_bytes_ = other.data_bytes_;
    other.mapping_ = nullptr;
    other.data_ = nullptr;
    other.mapping_bytes_ = other.data_bytes_ = 0;
  }
  return *this;
}

void MappedArray::release() {
  registration_.reset();
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  data_ = nullptr;
}

int64_t MappedArray::num_elements() const {
  return static_cast<int64_t>(data_bytes_ / dtype_size(dtype_));
}

void MappedArray::verify_checksum() const {
  if (checksum(data_, data_bytes_) != stored_checksum_) {
    throw file_error(path_, "checksum mismatch: the data is corrupt");
  }
}

void MappedArray::expect_shape(const std::vector<int64_t>& expected) const {
  bool ok = expected.size() == shape_.size();
  for (size_t i = 0; ok && i < expected.size(); ++i) {
    ok = expected[i] < 0 || expected[i] == shape_[i];
  }
  if (!ok) {
    throw file_error(path_, "shape " + shape_text(shape_) + " does not match the expected " +
                                shape_text(expected));
  }
}

void MappedArray::check_dtype(DType expected) const {
  if (expected != dtype_) {
    throw file_error(path_, "dtype is " + std::string(dtype_name(dtype_)) + ", expected " +
                                std::string(dtype_name(expected)));
  }
}

}  // namespace partita
