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

// What a .npy file's header says. read_npy_header makes every check read_npy makes except
// reading the data, so a caller can check the shape first and then read the elements
// straight into their final buffer: no whole-file copy next to the result, which for
// features or edge_index would double the peak memory.
struct NpyHeader {
  DType dtype = DType::kUInt8;
  bool is_bool = false;
  std::vector<int64_t> shape;
  uint64_t data_offset = 0;  // file position of the first element

  int64_t num_elements() const;
};
NpyHeader read_npy_header(const std::string& path);

// Reads elements [first, first + count) of the data, as stored (header.dtype), into `dst`,
// which must hold count * dtype_size(header.dtype) bytes.
void read_npy_into(const std::string& path, const NpyHeader& header, int64_t first, int64_t count,
                   void* dst);

// Elements [first, first + count) as T: read straight into the result when the file holds T,
// else converted with static_cast a chunk at a time, so no second full-size buffer exists.
// Callers decide which file dtypes they accept (int64 from int32 widens, the reverse wraps);
// float data read as an integer type is an Error, since the conversion may be undefined.
// Instantiated for uint8_t, int32_t, int64_t, float and double.
template <typename T>
std::vector<T> read_npy_as(const std::string& path, const NpyHeader& header, int64_t first,
                           int64_t count);

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
               const void* data);

}  // namespace partita
