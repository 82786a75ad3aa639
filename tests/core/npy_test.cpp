#include "partitioner/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "base/error.h"
#include "test_util.h"

namespace partita {
namespace {

using testing::TempDir;
using testing::read_text;
using testing::write_text;

// A .npy file the way numpy lays it out: prefix, dict, space padding and '\n' so that the
// data starts at a multiple of `align` (64 since numpy 1.14, 16 before).
std::string numpy_bytes(int major, const std::string& dict, const std::string& data, size_t align = 64) {
  size_t prefix = major == 1 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + align - 1) / align * align;
  std::string header = dict + std::string(total - prefix - dict.size() - 1, ' ') + "\n";
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  uint32_t length = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out + header + data;
}

template <typename T>
std::string raw(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <typename T>
std::vector<T> elements(const NpyArray& a) {
  std::vector<T> out(a.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

// Runs read_npy on `bytes` and returns the error message, failing if it does not throw.
std::string read_error(const TempDir& dir, const std::string& bytes, const std::string& name = "x.npy") {
  write_text(dir / name, bytes);
  try {
    read_npy(dir / name);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "read_npy accepted " << name;
  return "";
}

const std::string kDict23 = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }";
const std::vector<int64_t> kSix = {1, -2, 3, 4000000000000, 5, 6};

TEST(NpyTest, ReadsTheExactBytesNumpyWrites) {
  TempDir dir;
  // np.save(f, np.array([[1, -2, 3], [4000000000000, 5, 6]])): 118 header bytes (0x76), so
  // the data starts at 128.
  std::string header = kDict23 + std::string(118 - kDict23.size() - 1, ' ') + "\n";
  write_text(dir / "a.npy", std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header + raw(kSix));
  NpyArray a = read_npy(dir / "a.npy");
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_FALSE(a.is_bool);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.num_elements(), 6);
  EXPECT_EQ(elements<int64_t>(a), kSix);
}

TEST(NpyTest, ReadsVersions2And3WithFourByteHeaderLength) {
  TempDir dir;
  for (int major : {2, 3}) {
    write_text(dir / "a.npy", numpy_bytes(major, kDict23, raw(kSix)));
    NpyArray a = read_npy(dir / "a.npy");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3})) << "version " << major;
    EXPECT_EQ(elements<int64_t>(a), kSix) << "version " << major;
  }
}

TEST(NpyTest, ReadsOldNumpySixteenByteAlignment) {
  TempDir dir;
  write_text(dir / "a.npy", numpy_bytes(1, kDict23, raw(kSix), 16));
  EXPECT_EQ(elements<int64_t>(read_npy(dir / "a.npy")), kSix);
}

TEST(NpyTest, HeaderDictMayVaryInOrderQuotesSpacingAndCommas) {
  TempDir dir;
  const std::vector<std::string> dicts = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i8'}",
      "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (2,3)}",
      "{ 'descr' : '<i8' ,'fortran_order':False,'shape':( 2 , 3 , ) , }",
      "{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2 numpy
  };
  for (const std::string& dict : dicts) {
    write_text(dir / "a.npy", numpy_bytes(1, dict, raw(kSix)));
    NpyArray a = read_npy(dir / "a.npy");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3})) << dict;
    EXPECT_EQ(elements<int64_t>(a), kSix) << dict;
  }
}

TEST(NpyTest, ReadsScalarsAndEmptyArrays) {
  TempDir dir;
  write_text(dir / "s.npy", numpy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                                        raw(std::vector<double>{2.5})));
  NpyArray scalar = read_npy(dir / "s.npy");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_EQ(elements<double>(scalar), std::vector<double>{2.5});

  write_text(dir / "e.npy", numpy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 7), }", ""));
  NpyArray empty = read_npy(dir / "e.npy");
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 7}));
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_TRUE(empty.data.empty());
}

TEST(NpyTest, BoolAndByteArraysReadAsUInt8) {
  TempDir dir;
  std::string bytes("\x01\x00\x01", 3);
  write_text(dir / "b.npy", numpy_bytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bytes));
  NpyArray mask = read_npy(dir / "b.npy");
  EXPECT_EQ(mask.dtype, DType::kUInt8);
  EXPECT_TRUE(mask.is_bool);
  EXPECT_EQ(elements<uint8_t>(mask), (std::vector<uint8_t>{1, 0, 1}));

  for (const char* descr : {"|u1", "<u1"}) {
    write_text(dir / "u.npy", numpy_bytes(1, std::string("{'descr': '") + descr +
                                                 "', 'fortran_order': False, 'shape': (3,), }",
                                          bytes));
    NpyArray u = read_npy(dir / "u.npy");
    EXPECT_EQ(u.dtype, DType::kUInt8) << descr;
    EXPECT_FALSE(u.is_bool) << descr;
  }
}

template <typename T>
void expect_round_trip(const TempDir& dir, const std::vector<T>& values, const std::vector<int64_t>& shape) {
  std::string path = dir / "rt.npy";
  write_npy(path, dtype_of<T>(), shape, values.data());
  NpyArray a = read_npy(path);
  EXPECT_EQ(a.dtype, dtype_of<T>());
  EXPECT_EQ(a.shape, shape);
  EXPECT_EQ(elements<T>(a), values);
  size_t file_bytes = std::filesystem::file_size(path);
  EXPECT_EQ((file_bytes - values.size() * sizeof(T)) % 64, 0u) << "data must start on a 64-byte boundary";
}

TEST(NpyTest, RoundTripsEveryDtype) {
  TempDir dir;
  expect_round_trip<uint8_t>(dir, {0, 1, 255, 7, 8, 9}, {2, 3});
  expect_round_trip<int32_t>(dir, {-1, 0, 2147483647, -2147483647 - 1}, {4});
  expect_round_trip<int64_t>(dir, {-1, 0, int64_t{1} << 40, 3, 4, 5}, {3, 2});
  expect_round_trip<float>(dir, {0.5f, -1e30f, 3.25f, 1e-30f}, {2, 2});
  expect_round_trip<double>(dir, {0.1, -2.5e300, 3.0}, {3, 1});
  expect_round_trip<float>(dir, {}, {0, 5});
  expect_round_trip<double>(dir, {42.0}, {});
  expect_round_trip<int64_t>(dir, {1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
}

TEST(NpyTest, WritesTheHeaderNumpyWrites) {
  TempDir dir;
  write_npy(dir / "a.npy", DType::kInt64, {2, 3}, kSix.data());
  std::string bytes = read_text(dir / "a.npy");
  std::string header = kDict23 + std::string(118 - kDict23.size() - 1, ' ') + "\n";
  EXPECT_EQ(bytes, std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header + raw(kSix));

  write_npy(dir / "v.npy", DType::kFloat32, {5}, std::vector<float>(5).data());
  EXPECT_CONTAINS(read_text(dir / "v.npy"), "'shape': (5,), }");
}

TEST(NpyTest, LargeArrayRoundTripsThroughChunkedReads) {
  TempDir dir;
  // Above the size where reading switches to chunks with progress lines.
  std::vector<int64_t> values(9'500'000);
  std::iota(values.begin(), values.end(), -17);
  write_npy(dir / "big.npy", DType::kInt64, {static_cast<int64_t>(values.size())}, values.data());
  NpyArray a = read_npy(dir / "big.npy");
  ASSERT_EQ(a.num_elements(), static_cast<int64_t>(values.size()));
  EXPECT_EQ(elements<int64_t>(a), values);
}

// ---------------------------------------------------------------------------------------
// Header first, then the data straight into the caller's buffer

TEST(NpyTest, HeaderSaysWhatReadNpyReadsAndWhereTheDataStarts) {
  TempDir dir;
  write_npy(dir / "a.npy", DType::kInt64, {2, 3}, kSix.data());
  NpyHeader h = read_npy_header(dir / "a.npy");
  EXPECT_EQ(h.dtype, DType::kInt64);
  EXPECT_FALSE(h.is_bool);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.num_elements(), 6);
  EXPECT_EQ(h.data_offset, 128u);

  write_text(dir / "b.npy", numpy_bytes(2, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                        std::string("\x01\x00\x01", 3), 16));
  NpyHeader b = read_npy_header(dir / "b.npy");
  EXPECT_TRUE(b.is_bool);
  EXPECT_EQ(b.dtype, DType::kUInt8);
  EXPECT_EQ(b.data_offset, 80u);
  EXPECT_EQ(read_npy_as<uint8_t>(dir / "b.npy", b, 0, 3), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(NpyTest, ReadIntoFillsARangeOfElements) {
  TempDir dir;
  write_npy(dir / "a.npy", DType::kInt64, {2, 3}, kSix.data());
  NpyHeader h = read_npy_header(dir / "a.npy");
  std::vector<int64_t> row(3);
  read_npy_into(dir / "a.npy", h, 3, 3, row.data());  // the second row of a C-order [2, 3]
  EXPECT_EQ(row, (std::vector<int64_t>{4000000000000, 5, 6}));
  read_npy_into(dir / "a.npy", h, 1, 2, row.data());
  EXPECT_EQ(row, (std::vector<int64_t>{-2, 3, 6}));
  read_npy_into(dir / "a.npy", h, 6, 0, nullptr);  // an empty range touches nothing
  EXPECT_EQ(read_npy_as<int64_t>(dir / "a.npy", h, 0, 6), kSix);
  EXPECT_TRUE(read_npy_as<int64_t>(dir / "a.npy", h, 2, 0).empty());
}

TEST(NpyTest, ReadAsConvertsBetweenDtypes) {
  TempDir dir;
  const std::vector<int32_t> narrow = {-5, 0, 7, 2147483647};
  write_npy(dir / "i.npy", DType::kInt32, {4}, narrow.data());
  NpyHeader i = read_npy_header(dir / "i.npy");
  EXPECT_EQ(read_npy_as<int64_t>(dir / "i.npy", i, 0, 4), (std::vector<int64_t>{-5, 0, 7, 2147483647}));
  EXPECT_EQ(read_npy_as<float>(dir / "i.npy", i, 1, 2), (std::vector<float>{0, 7}));

  const std::vector<double> wide = {0.1, -2.5, 1e300};
  write_npy(dir / "d.npy", DType::kFloat64, {3}, wide.data());
  NpyHeader d = read_npy_header(dir / "d.npy");
  EXPECT_EQ(read_npy_as<float>(dir / "d.npy", d, 0, 2), (std::vector<float>{0.1f, -2.5f}));
  EXPECT_EQ(read_npy_as<double>(dir / "d.npy", d, 0, 3), wide);
  try {
    read_npy_as<int64_t>(dir / "d.npy", d, 0, 3);
    FAIL() << "float64 read as int64";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), dir / "d.npy: dtype float64 cannot be read as int64");
  }
}

TEST(NpyTest, ConversionCrossesChunkBoundariesInOrder) {
  TempDir dir;
  // More elements than one conversion chunk (4 MB of the file's dtype), read from an offset.
  std::vector<double> values(1'300'000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) - 0.5;
  write_npy(dir / "big.npy", DType::kFloat64, {static_cast<int64_t>(values.size())}, values.data());
  NpyHeader h = read_npy_header(dir / "big.npy");
  const int64_t first = 3, count = static_cast<int64_t>(values.size()) - 5;
  std::vector<float> got = read_npy_as<float>(dir / "big.npy", h, first, count);
  ASSERT_EQ(got.size(), static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(got[i], static_cast<float>(values[first + i])) << i;
}

TEST(NpyTest, RangesOutsideTheArrayAreRefused) {
  TempDir dir;
  write_npy(dir / "a.npy", DType::kInt64, {2, 3}, kSix.data());
  NpyHeader h = read_npy_header(dir / "a.npy");
  std::vector<int64_t> buffer(8);
  EXPECT_THROW(read_npy_into(dir / "a.npy", h, 4, 3, buffer.data()), Error);
  EXPECT_THROW(read_npy_into(dir / "a.npy", h, -1, 2, buffer.data()), Error);
  EXPECT_THROW(read_npy_as<int64_t>(dir / "a.npy", h, 0, 7), Error);
}

// read_npy_header must make every check read_npy makes, with the same message: a folder
// reader that checks headers first relies on it.
TEST(NpyTest, HeaderRejectsEveryBrokenCorpusFileAsReadNpyDoes) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::corpus_path("readers"))) {
    if (entry.path().extension() != ".npy") continue;
    std::string path = entry.path().string(), from_read, from_header;
    try {
      read_npy(path);
    } catch (const Error& e) {
      from_read = e.what();
    }
    try {
      read_npy_header(path);
    } catch (const Error& e) {
      from_header = e.what();
    }
    EXPECT_FALSE(from_read.empty()) << path;
    EXPECT_EQ(from_header, from_read) << path;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(NpyTest, RejectsFortranOrder) {
  TempDir dir;
  std::string message = read_error(
      dir, numpy_bytes(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }", raw(kSix)), "f.npy");
  EXPECT_CONTAINS(message, dir / "f.npy");
  EXPECT_CONTAINS(message, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
}

TEST(NpyTest, RejectsBigEndian) {
  TempDir dir;
  std::string message =
      read_error(dir, numpy_bytes(1, "{'descr': '>i8', 'fortran_order': False, 'shape': (2, 3), }", raw(kSix)));
  EXPECT_CONTAINS(message, dir / "x.npy");
  EXPECT_CONTAINS(message, "big-endian dtype '>i8'");
}

TEST(NpyTest, RejectsUnsupportedDtypes) {
  TempDir dir;
  for (const char* descr : {"<U10", "|O", "<c16", "<f2", "<i2", "|S5", "<M8[ns]"}) {
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }";
    std::string message = read_error(dir, numpy_bytes(1, dict, std::string(160, '\0')));
    EXPECT_CONTAINS(message, dir / "x.npy");
    EXPECT_CONTAINS(message, std::string("dtype '") + descr + "' is not supported");
  }
  std::string message = read_error(
      dir, numpy_bytes(1, "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (1,), }",
                       std::string(12, '\0')));
  EXPECT_CONTAINS(message, "structured dtypes are not supported");
}

TEST(NpyTest, RejectsTruncatedData) {
  TempDir dir;
  std::string bytes = numpy_bytes(1, kDict23, raw(kSix));
  std::string message = read_error(dir, bytes.substr(0, bytes.size() - 8));
  EXPECT_CONTAINS(message, dir / "x.npy");
  EXPECT_CONTAINS(message, "truncated: shape (2, 3) of '<i8' needs 48 data bytes, the file has 40");
}

TEST(NpyTest, RejectsTrailingBytes) {
  TempDir dir;
  std::string message = read_error(dir, numpy_bytes(1, kDict23, raw(kSix) + "junk"));
  EXPECT_CONTAINS(message, dir / "x.npy");
  EXPECT_CONTAINS(message, "4 unexpected bytes after the data");
}

TEST(NpyTest, RejectsBadMagicAndVersion) {
  TempDir dir;
  std::string good = numpy_bytes(1, kDict23, raw(kSix));
  std::string bad_magic = good;
  bad_magic[1] = 'P';
  EXPECT_CONTAINS(read_error(dir, bad_magic), "not a .npy file");
  std::string bad_version = good;
  bad_version[6] = 4;
  EXPECT_CONTAINS(read_error(dir, bad_version), "unsupported .npy format version 4.0");
  EXPECT_CONTAINS(read_error(dir, "\x93NUM"), "too short to be a .npy file");
  EXPECT_CONTAINS(read_error(dir, ""), "too short to be a .npy file");
}

TEST(NpyTest, RejectsMalformedHeaders) {
  TempDir dir;
  const std::pair<std::string, std::string> cases[] = {
      {"{'descr': '<i8', 'fortran_order': False}", "the header has no 'shape'"},
      {"{'descr': '<i8', 'shape': (6,)}", "the header has no 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (6,)}", "the header has no 'descr'"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<i8', 'descr': '<i8', 'fortran_order': False, 'shape': (6,)}", "key 'descr' appears twice"},
      {"{'descr': '<i8', 'fortran_order': false, 'shape': (6,)}", "expected True or False"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (-6,)}", "expected a non-negative dimension in 'shape'"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': [6]}", "expected '('"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,)", "expected '}'"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,)} x", "unexpected text after the closing '}'"},
      {"{'descr: '<i8', 'fortran_order': False, 'shape': (6,)}", "expected ':'"},
      {"('descr', '<i8')", "expected '{'"},
  };
  for (const auto& [dict, problem] : cases) {
    std::string message = read_error(dir, numpy_bytes(1, dict, raw(kSix)));
    EXPECT_CONTAINS(message, dir / "x.npy");
    EXPECT_CONTAINS(message, "malformed .npy header: " + problem);
  }
}

TEST(NpyTest, RejectsHeaderLengthBeyondTheFile) {
  TempDir dir;
  std::string bytes = numpy_bytes(1, kDict23, "");
  bytes[8] = '\xff';
  bytes[9] = '\x7f';
  EXPECT_CONTAINS(read_error(dir, bytes), "truncated .npy header");
}

TEST(NpyTest, RejectsShapesThatOverflow) {
  TempDir dir;
  std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }";
  EXPECT_CONTAINS(read_error(dir, numpy_bytes(1, dict, "")), "is too large");
}

TEST(NpyTest, MissingFilesAndFoldersAreNamed) {
  TempDir dir;
  try {
    read_npy(dir / "absent.npy");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), dir / "absent.npy: cannot open");
  }
  std::filesystem::create_directory(dir / "folder.npy");
  try {
    read_npy(dir / "folder.npy");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), dir / "folder.npy: is a folder");
  }
  int64_t value = 1;
  try {
    write_npy(dir / "no/such/folder/a.npy", DType::kInt64, {1}, &value);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), dir / "no/such/folder/a.npy: cannot create");
  }
}

}  // namespace
}  // namespace partita
