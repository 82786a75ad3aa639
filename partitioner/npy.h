// NumPy .npy files (format versions 1.0-3.0), as `np.save` writes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace partita {

struct NpyArray {
  DType dtype = DType::kUInt8;  // '|b1' (bool) and '|u1' both read as kUInt8
  bool is_bool = false;         // the file said '|b1'
  std::vector<int64_t> shape;
  std::vector<char> data;  // little-endian, C order

  int64_t num_elements() const;
};

// Reads and validates a .npy file: magic, header dict, little-endian dtype among
// bool/uint8/int32/int64/float32/float64, C order (Fortran order is rejected), data size.
// Errors name the file and the problem.
NpyArray read_npy(const std::string& path);

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
               const void* data);

}  // namespace partita
