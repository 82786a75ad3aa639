// A shared, immutable, typed array: a memory-mapped array file, an owned vector, or memory
// of another owner (a copy in huge pages, base/resident_array.h).
// Stores hold their columns as ArrayRefs so the same code serves features mapped from disk
// (larger than RAM, loaded instantly) and arrays built in memory (tests, conversions).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/array_file.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/span.h"

namespace partita {

class ArrayRef {
 public:
  ArrayRef() = default;

  static ArrayRef from_mapped(MappedArray array) {
    auto owner = std::make_shared<MappedArray>(std::move(array));
    ArrayRef ref;
    ref.dtype_ = owner->dtype();
    ref.shape_ = owner->shape();
    ref.data_ = owner->raw_data();
    ref.bytes_ = owner->data_bytes();
    ref.name_ = owner->path();
    ref.owner_ = std::move(owner);
    return ref;
  }

  template <typename T>
  static ArrayRef from_vector(std::vector<T> values, std::vector<int64_t> shape = {},
                              std::string name = "") {
    auto owner = std::make_shared<std::vector<T>>(std::move(values));
    ArrayRef ref;
    ref.dtype_ = dtype_of<T>();
    ref.shape_ = shape.empty() ? std::vector<int64_t>{static_cast<int64_t>(owner->size())} : shape;
    ref.data_ = owner->data();
    ref.bytes_ = owner->size() * sizeof(T);
    ref.name_ = std::move(name);
    ref.owner_ = std::move(owner);
    return ref;
  }

  // An array at `data` (`bytes` bytes of dtype and shape), kept alive by `owner`: for
  // memory that neither a mapping nor a vector holds (base/resident_array.h).
  static ArrayRef from_owner(std::shared_ptr<const void> owner, DType dtype, std::vector<int64_t> shape,
                             const void* data, size_t bytes, std::string name) {
    ArrayRef ref;
    ref.dtype_ = dtype;
    ref.shape_ = std::move(shape);
    ref.data_ = data;
    ref.bytes_ = bytes;
    ref.name_ = std::move(name);
    ref.owner_ = std::move(owner);
    return ref;
  }

  bool empty() const { return owner_ == nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rows() const { return shape_.empty() ? 0 : shape_[0]; }
  // Elements per row: the product of all dimensions but the first (1 for vectors).
  int64_t row_width() const {
    int64_t w = 1;
    for (size_t i = 1; i < shape_.size(); ++i) w *= shape_[i];
    return w;
  }
  size_t row_bytes() const { return static_cast<size_t>(row_width()) * dtype_size(dtype_); }
  const void* raw_data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

  template <typename T>
  Span<const T> as() const {
    if (dtype_of<T>() != dtype_) {
      throw Error((name_.empty() ? std::string("array") : name_) + ": dtype is " +
                  std::string(dtype_name(dtype_)) + ", expected " +
                  std::string(dtype_name(dtype_of<T>())));
    }
    return Span<const T>(static_cast<const T*>(data_), bytes_ / sizeof(T));
  }

 private:
  std::shared_ptr<const void> owner_;
  DType dtype_ = DType::kUInt8;
  std::vector<int64_t> shape_;
  const void* data_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
};

}  // namespace partita
