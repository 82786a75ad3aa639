// Element types of the arrays Partita stores on disk and sends over the wire.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace partita {

enum class DType : uint32_t {
  kUInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat32 = 4,
  kFloat64 = 5,
};

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);           // "float32", "int64", ...
std::optional<DType> dtype_from_name(std::string_view name);
bool dtype_is_valid(uint32_t code);

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }

}  // namespace partita
