// A borrowed tensor: element type, shape and a pointer to the flat bytes. The codec reads
// tensors to encode through it and hands decoded tensors back as views into the received
// buffer, so no bytes are copied on either side beyond the one copy into the wire buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/array_ref.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/span.h"

namespace partita {

struct TensorView {
  DType dtype = DType::kUInt8;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t bytes = 0;

  TensorView() = default;
  TensorView(DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes)
      : dtype(dtype), shape(std::move(shape)), data(data), bytes(bytes) {}

  // A 1-D view of `values`.
  template <typename T>
  static TensorView of(Span<const T> values) {
    return TensorView(dtype_of<T>(), {static_cast<int64_t>(values.size())}, values.data(),
                      values.size() * sizeof(T));
  }
  template <typename T>
  static TensorView of(const std::vector<T>& values) {
    return of(Span<const T>(values.data(), values.size()));
  }
  static TensorView of(const ArrayRef& array) {
    return TensorView(array.dtype(), array.shape(), array.raw_data(), array.bytes());
  }

  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }

  // The elements, after checking the dtype; `what` names the tensor in the error.
  template <typename T>
  Span<const T> as(const char* what = "tensor") const {
    if (dtype != dtype_of<T>()) {
      throw Error(std::string(what) + ": dtype is " + std::string(dtype_name(dtype)) +
                  ", expected " + std::string(dtype_name(dtype_of<T>())));
    }
    return Span<const T>(static_cast<const T*>(data), bytes / sizeof(T));
  }
};

}  // namespace partita
