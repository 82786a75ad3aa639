// The .npy format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (uint16 in version 1.0, uint32 in 2.0 and 3.0), then the
// header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2708, 1433), }
// padded with spaces and ending in '\n', then the raw elements.
#include "partitioner/npy.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "partitioner/reader_util.h"

namespace partita {

// Array bytes are copied straight between files and memory, which is only right on a
// little-endian host (every platform Partita targets).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the npy reader assumes little-endian");

namespace {

using detail::shape_text;

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
// np.save aligns the data to 64 bytes (numpy >= 1.14); we do the same so that mapping a
// file gives aligned elements.
constexpr size_t kDataAlignment = 64;
// Headers are a few dozen bytes; a huge length means a corrupt file, not a big array.
constexpr uint32_t kMaxHeaderBytes = 1 << 20;

struct Descr {
  const char* text;
  DType dtype;
  bool is_bool;
};

// '<u1' is what some writers emit for a byte array, where numpy writes '|u1'.
constexpr Descr kDescrs[] = {
    {"<f4", DType::kFloat32, false}, {"<f8", DType::kFloat64, false},
    {"<i8", DType::kInt64, false},   {"<i4", DType::kInt32, false},
    {"|b1", DType::kUInt8, true},    {"|u1", DType::kUInt8, false},
    {"<u1", DType::kUInt8, false},
};

// The header dict as written, before its dtype is looked up.
struct HeaderDict {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the header dict. numpy itself uses ast.literal_eval; we accept the same literals
// it writes (and any key order, spacing or trailing comma a hand-written file may have)
// but nothing else, so a damaged header fails with a message rather than a wrong array.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  HeaderDict parse() {
    HeaderDict header;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    expect('{');
    while (!consume('}')) {
      std::string key = parse_string("a quoted key");
      expect(':');
      if (key == "descr") {
        mark_seen(&seen_descr, key);
        if (peek() == '[') fail("structured dtypes are not supported; save a plain array");
        header.descr = parse_string("a quoted dtype");
      } else if (key == "fortran_order") {
        mark_seen(&seen_order, key);
        header.fortran_order = parse_bool();
      } else if (key == "shape") {
        mark_seen(&seen_shape, key);
        header.shape = parse_shape();
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the closing '}'");
    if (!seen_descr) fail("the header has no 'descr'");
    if (!seen_order) fail("the header has no 'fortran_order'");
    if (!seen_shape) fail("the header has no 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    std::string shown(text_.substr(0, 120));
    while (!shown.empty() && (shown.back() == ' ' || shown.back() == '\n')) shown.pop_back();
    throw file_error(path_, "malformed .npy header: " + problem + " (at byte " +
                                std::to_string(pos_) + " of \"" + shown + "\")");
  }

  void mark_seen(bool* seen, const std::string& key) const {
    if (*seen) fail("key '" + key + "' appears twice");
    *seen = true;
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }

  std::string parse_string(const char* what) {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail(std::string("expected ") + what);
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    if (value.find('\\') != std::string::npos) fail("escape sequences are not supported");
    pos_ = end + 1;
    return value;
  }

  bool parse_bool() {
    skip_space();
    for (auto [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }

  // "()", "(5,)", "(2, 3)", "(2, 3,)"; "(5)" too, though Python reads it as a bare int.
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    while (!consume(')')) {
      shape.push_back(parse_dimension());
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }

  int64_t parse_dimension() {
    skip_space();
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    int64_t value = 0;
    if (!detail::parse_number(text_.substr(start, pos_ - start), &value)) {
      fail("expected a non-negative dimension in 'shape'");
    }
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs: (3L, 4L)
    return value;
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

const Descr& lookup_descr(const std::string& descr, const std::string& path) {
  for (const Descr& d : kDescrs) {
    if (descr == d.text) return d;
  }
  if (!descr.empty() && descr[0] == '>') {
    throw file_error(path, "big-endian dtype '" + descr +
                               "' is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))");
  }
  throw file_error(path, "dtype '" + descr +
                             "' is not supported (expected bool, uint8, int32, int64, float32 or "
                             "float64: '|b1', '|u1', '<i4', '<i8', '<f4', '<f8')");
}

const char* descr_for(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return "|u1";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
  }
  throw Error("write_npy: invalid dtype " + std::to_string(static_cast<uint32_t>(dtype)));
}

// Bytes of data `shape` needs, or an error when the dimensions overflow 64 bits (a
// corrupt header must not turn into a small allocation and an out-of-bounds read).
uint64_t data_bytes(const std::vector<int64_t>& shape, DType dtype, const std::string& path) {
  uint64_t bytes = dtype_size(dtype);
  for (int64_t dim : shape) {
    if (dim < 0) throw file_error(path, "negative dimension in shape " + shape_text(shape));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes)) {
      throw file_error(path, "shape " + shape_text(shape) + " is too large");
    }
  }
  return bytes;
}

uint32_t read_little_endian(const unsigned char* bytes, int count) {
  uint32_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// Reads the magic, version and header; leaves `fd` at the first data byte.
HeaderDict read_header(int fd, const std::string& path, size_t file_size, size_t* data_offset) {
  unsigned char prefix[12];
  if (file_size < 10) throw file_error(path, "too short to be a .npy file");
  detail::read_exactly(fd, path, reinterpret_cast<char*>(prefix), 8);
  if (std::memcmp(prefix, kMagic, kMagicBytes) != 0) {
    throw file_error(path, "not a .npy file (it does not start with \"\\x93NUMPY\")");
  }
  int major = prefix[6], minor = prefix[7];
  int length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || minor != 0) {
    throw file_error(path, "unsupported .npy format version " + std::to_string(major) + "." +
                               std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  }
  if (file_size < 8u + length_bytes) throw file_error(path, "truncated .npy header");
  detail::read_exactly(fd, path, reinterpret_cast<char*>(prefix + 8), length_bytes);
  uint32_t header_bytes = read_little_endian(prefix + 8, length_bytes);
  size_t header_start = 8 + length_bytes;
  if (header_bytes > kMaxHeaderBytes || header_start + header_bytes > file_size) {
    throw file_error(path, "truncated .npy header (declares " + std::to_string(header_bytes) +
                               " header bytes, the file has " + std::to_string(file_size) + ")");
  }
  std::string text(header_bytes, '\0');
  detail::read_exactly(fd, path, text.data(), header_bytes);
  *data_offset = header_start + header_bytes;
  return HeaderParser(text, path).parse();
}

void read_data(int fd, const std::string& path, char* buffer, size_t bytes) {
  detail::ParseProgress progress("read " + path, bytes);
  constexpr size_t kChunk = detail::kProgressThresholdBytes;
  for (size_t done = 0; done < bytes; done += kChunk) {
    size_t chunk = std::min(kChunk, bytes - done);
    detail::read_exactly(fd, path, buffer + done, chunk);
    progress.update(done + chunk);
  }
  progress.done(bytes);
}

// The header dict as numpy 1.x writes it, padded with spaces and a final '\n' so that the
// data starts at a multiple of kDataAlignment.
std::string format_header(DType dtype, const std::vector<int64_t>& shape) {
  std::string dict = std::string("{'descr': '") + descr_for(dtype) +
                     "', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  auto padded_size = [&](size_t prefix) {
    size_t unpadded = prefix + dict.size() + 1;
    return (unpadded + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  };
  // Version 1.0 stores the header length in 16 bits; only absurdly many dimensions need 2.0.
  bool v1 = padded_size(10) - 10 <= 0xffff;
  size_t prefix = v1 ? 10 : 12;
  size_t padded = padded_size(prefix);
  size_t unpadded = prefix + dict.size() + 1;
  dict.append(padded - unpadded, ' ');
  dict.push_back('\n');
  uint32_t length = static_cast<uint32_t>(dict.size());
  std::string out(kMagic, kMagicBytes);
  out.push_back(static_cast<char>(v1 ? 1 : 2));
  out.push_back('\0');
  for (int i = 0; i < (v1 ? 2 : 4); ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out + dict;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

// The header of the open file, checked against the file's size; leaves `fd` at the data.
NpyHeader read_checked_header(int fd, const std::string& path) {
  size_t file_size = detail::regular_file_size(fd, path);
  size_t data_offset = 0;
  HeaderDict dict = read_header(fd, path, file_size, &data_offset);
  const Descr& descr = lookup_descr(dict.descr, path);
  if (dict.fortran_order) {
    throw file_error(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  }
  uint64_t needed = data_bytes(dict.shape, descr.dtype, path);
  uint64_t present = file_size - data_offset;
  std::string layout = "shape " + shape_text(dict.shape) + " of '" + dict.descr + "' needs " +
                       std::to_string(needed) + " data bytes";
  if (present < needed) {
    throw file_error(path, "truncated: " + layout + ", the file has " + std::to_string(present));
  }
  if (present > needed) {
    throw file_error(path, std::to_string(present - needed) + " unexpected bytes after the data (" +
                               layout + ")");
  }
  NpyHeader header;
  header.dtype = descr.dtype;
  header.is_bool = descr.is_bool;
  header.shape = std::move(dict.shape);
  header.data_offset = data_offset;
  return header;
}

// Bytes of elements [first, first + count); a range outside the array is a caller's bug.
size_t range_bytes(const std::string& path, const NpyHeader& header, int64_t first, int64_t count) {
  if (first < 0 || count < 0 || first > header.num_elements() - count) {
    throw Error("read_npy " + path + ": elements [" + std::to_string(first) + ", " +
                std::to_string(first) + " + " + std::to_string(count) + ") are outside shape " +
                shape_text(header.shape));
  }
  return static_cast<size_t>(count) * dtype_size(header.dtype);
}

// Elements [first, first + count) of a file whose header was read earlier, read in order
// in pieces of any size, with one progress line over the whole range.
class ElementReader {
 public:
  ElementReader(const std::string& path, const NpyHeader& header, int64_t first, int64_t count)
      : path_(path),
        element_bytes_(dtype_size(header.dtype)),
        total_(range_bytes(path, header, first, count)),
        fd_(detail::open_for_reading(path)),
        progress_("read " + path, total_) {
    detail::seek_to(fd_.get(), path, header.data_offset + static_cast<uint64_t>(first) * element_bytes_);
  }

  // The next `count` elements into `dst`.
  void read(char* dst, size_t count) {
    size_t bytes = count * element_bytes_;
    if (bytes > total_ - read_) throw Error("read_npy " + path_ + ": read past the requested elements");
    for (size_t at = 0; at < bytes;) {
      size_t chunk = std::min(detail::kProgressThresholdBytes, bytes - at);
      detail::read_exactly(fd_.get(), path_, dst + at, chunk);
      at += chunk;
      read_ += chunk;
      progress_.update(read_);
    }
    if (read_ == total_ && bytes > 0) progress_.done(total_);
  }

 private:
  const std::string& path_;
  size_t element_bytes_;
  size_t total_;
  size_t read_ = 0;
  detail::ScopedFd fd_;
  detail::ParseProgress progress_;
};

// Fills `out` from the reader's elements of type From: directly when From is To, else
// through a bounded buffer, converting each element.
template <typename To, typename From>
void convert_elements(ElementReader& reader, const NpyHeader& header, const std::string& path,
                      std::vector<To>* out) {
  if constexpr (std::is_same_v<To, From>) {
    reader.read(reinterpret_cast<char*>(out->data()), out->size());
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    throw file_error(path, "dtype " + std::string(dtype_name(header.dtype)) + " cannot be read as " +
                               std::string(dtype_name(dtype_of<To>())));
  } else {
    constexpr size_t kChunkElements = (size_t{4} << 20) / sizeof(From);
    std::vector<From> chunk(std::min(kChunkElements, out->size()));
    for (size_t done = 0; done < out->size(); done += chunk.size()) {
      size_t n = std::min(chunk.size(), out->size() - done);
      reader.read(reinterpret_cast<char*>(chunk.data()), n);
      for (size_t i = 0; i < n; ++i) (*out)[done + i] = static_cast<To>(chunk[i]);
    }
  }
}

}  // namespace

int64_t NpyArray::num_elements() const { return element_count(shape); }

int64_t NpyHeader::num_elements() const { return element_count(shape); }

NpyArray read_npy(const std::string& path) {
  detail::ScopedFd fd = detail::open_for_reading(path);
  NpyHeader header = read_checked_header(fd.get(), path);
  NpyArray array;
  array.dtype = header.dtype;
  array.is_bool = header.is_bool;
  array.shape = std::move(header.shape);
  array.data.resize(data_bytes(array.shape, array.dtype, path));
  read_data(fd.get(), path, array.data.data(), array.data.size());
  return array;
}

NpyHeader read_npy_header(const std::string& path) {
  detail::ScopedFd fd = detail::open_for_reading(path);
  return read_checked_header(fd.get(), path);
}

void read_npy_into(const std::string& path, const NpyHeader& header, int64_t first, int64_t count,
                   void* dst) {
  ElementReader reader(path, header, first, count);
  reader.read(static_cast<char*>(dst), static_cast<size_t>(count));
}

template <typename T>
std::vector<T> read_npy_as(const std::string& path, const NpyHeader& header, int64_t first,
                           int64_t count) {
  ElementReader reader(path, header, first, count);
  std::vector<T> out(static_cast<size_t>(count));
  switch (header.dtype) {
    case DType::kUInt8: convert_elements<T, uint8_t>(reader, header, path, &out); break;
    case DType::kInt32: convert_elements<T, int32_t>(reader, header, path, &out); break;
    case DType::kInt64: convert_elements<T, int64_t>(reader, header, path, &out); break;
    case DType::kFloat32: convert_elements<T, float>(reader, header, path, &out); break;
    case DType::kFloat64: convert_elements<T, double>(reader, header, path, &out); break;
  }
  return out;
}

template std::vector<uint8_t> read_npy_as<uint8_t>(const std::string&, const NpyHeader&, int64_t, int64_t);
template std::vector<int32_t> read_npy_as<int32_t>(const std::string&, const NpyHeader&, int64_t, int64_t);
template std::vector<int64_t> read_npy_as<int64_t>(const std::string&, const NpyHeader&, int64_t, int64_t);
template std::vector<float> read_npy_as<float>(const std::string&, const NpyHeader&, int64_t, int64_t);
template std::vector<double> read_npy_as<double>(const std::string&, const NpyHeader&, int64_t, int64_t);

void write_npy(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
               const void* data) {
  uint64_t bytes = data_bytes(shape, dtype, path);
  detail::write_npy_chunks(path, dtype, shape, {{data, bytes}});
}

namespace detail {

void write_npy_chunks(const std::string& path, DType dtype, const std::vector<int64_t>& shape,
                      const std::vector<ByteRange>& chunks) {
  uint64_t needed = data_bytes(shape, dtype, path);
  uint64_t given = 0;
  for (const ByteRange& c : chunks) given += c.bytes;
  if (given != needed) {
    throw Error("write_npy " + path + ": shape " + shape_text(shape) + " needs " +
                std::to_string(needed) + " bytes, given " + std::to_string(given));
  }
  std::string header = format_header(dtype, shape);
  ScopedFd fd = open_for_writing(path);
  write_all(fd.get(), path, header.data(), header.size());
  for (const ByteRange& c : chunks) write_all(fd.get(), path, c.data, c.bytes);
  fd.close_or_throw(path);
}

}  // namespace detail

}  // namespace partita
