#include "base/dtype.h"

namespace partita {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return 1;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
  }
  return "invalid";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType d : {DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32, DType::kFloat64}) {
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

bool dtype_is_valid(uint32_t code) { return code >= 1 && code <= 5; }

}  // namespace partita
