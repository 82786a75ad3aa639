#include "runtime/staging/folder_manifest.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "base/array_file.h"
#include "base/checksum.h"
#include "base/error.h"
#include "base/file_util.h"

namespace partita::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kReadPiece = size_t{4} << 20;

// A name that stays inside its folder: no separator, not "." or "..", not empty.
bool plain_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

bool is_array_header(const unsigned char* bytes, uint64_t size) {
  return size >= sizeof(ArrayHeader) && std::memcmp(bytes, kArrayMagic, sizeof(kArrayMagic)) == 0;
}

// Feeds the file at `path` to `use` in pieces; returns its size.
template <typename Use>
uint64_t read_pieces(const std::string& path, Use use) {
  ScopedFd fd = open_for_reading(path);
  const uint64_t size = regular_file_size(fd.get(), path);
  std::vector<char> buffer(static_cast<size_t>(std::min<uint64_t>(size, kReadPiece)));
  for (uint64_t left = size; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
    read_exactly(fd.get(), path, buffer.data(), n);
    use(buffer.data(), n);
    left -= n;
  }
  return size;
}

}  // namespace

uint64_t StagedUnit::key() const {
  Checksum c;
  c.update(mount.data(), mount.size() + 1);  // with its terminator: "a" + "bc" differs from "ab" + "c"
  for (const StagedFile& f : files) {
    c.update(f.name.c_str(), f.name.size() + 1);
    c.update(&f.bytes, sizeof(f.bytes));
    c.update(&f.checksum, sizeof(f.checksum));
  }
  return c.digest();
}

uint64_t StagedUnit::bytes() const {
  uint64_t total = 0;
  for (const StagedFile& f : files) total += f.bytes;
  return total;
}

void FileCheck::update(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  whole_.update(p, bytes);
  size_ += bytes;
  const size_t to_head = std::min(bytes, sizeof(head_) - head_bytes_);
  std::memcpy(head_ + head_bytes_, p, to_head);
  head_bytes_ += to_head;
  rest_.update(p + to_head, bytes - to_head);
}

bool FileCheck::is_array_file() const { return is_array_header(head_, size_); }

uint64_t FileCheck::checksum() const { return is_array_file() ? partita::checksum(head_, head_bytes_) : whole_.digest(); }

void FileCheck::check(const std::string& path, const StagedFile& expected) const {
  if (size_ != expected.bytes) {
    throw file_error(path, "has " + std::to_string(size_) + " bytes, expected " + std::to_string(expected.bytes));
  }
  if (is_array_file()) {
    ArrayHeader header;
    std::memcpy(&header, head_, sizeof(header));
    if (partita::checksum(head_, head_bytes_) != expected.checksum) {
      throw file_error(path, "header checksum mismatch (corrupted copy)");
    }
    if (rest_.digest() != header.checksum) throw file_error(path, "data checksum mismatch (corrupted copy)");
  } else if (whole_.digest() != expected.checksum) {
    throw file_error(path, "checksum mismatch (corrupted copy)");
  }
}

uint64_t file_checksum(const std::string& path) {
  // An array file's header is all it takes: read it alone first.
  ScopedFd fd = open_for_reading(path);
  const uint64_t size = regular_file_size(fd.get(), path);
  unsigned char head[sizeof(ArrayHeader)] = {};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size, sizeof(head)));
  read_exactly(fd.get(), path, reinterpret_cast<char*>(head), n);
  if (is_array_header(head, size)) return checksum(head, n);
  FileCheck whole;
  read_pieces(path, [&](const char* data, size_t bytes) { whole.update(data, bytes); });
  return whole.checksum();
}

void verify_file(const std::string& path, const StagedFile& expected) {
  FileCheck check;
  read_pieces(path, [&](const char* data, size_t bytes) { check.update(data, bytes); });
  check.check(path, expected);
}

StagedUnit describe_unit(const std::string& dir, const std::string& mount, const std::vector<std::string>& only) {
  StagedUnit unit;
  unit.mount = mount;
  const auto add = [&](const std::string& name) {
    const std::string path = dir + "/" + name;
    const uint64_t checksum = file_checksum(path);  // opens it: a missing file is named
    std::error_code ec;
    const uint64_t bytes = fs::file_size(path, ec);
    if (ec) throw file_error(path, "cannot read its size: " + ec.message());
    unit.files.push_back({name, bytes, checksum});
  };
  std::error_code ec;
  if (!only.empty()) {
    for (const std::string& name : only) add(name);
  } else {
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_regular_file()) add(entry.path().filename().string());
    }
  }
  if (ec) throw file_error(dir, "cannot list the folder: " + ec.message());
  std::sort(unit.files.begin(), unit.files.end(), [](const StagedFile& a, const StagedFile& b) { return a.name < b.name; });
  return unit;
}

std::string key_text(uint64_t key) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, key);
  return text;
}

std::string units_to_json(const std::vector<StagedUnit>& units) {
  json out = json::array();
  for (const StagedUnit& u : units) {
    json files = json::array();
    for (const StagedFile& f : u.files) files.push_back({{"name", f.name}, {"bytes", f.bytes}, {"checksum", f.checksum}});
    out.push_back({{"mount", u.mount}, {"files", std::move(files)}});
  }
  return out.dump();
}

std::vector<StagedUnit> units_from_json(const std::string& text) {
  const auto bad = [](const std::string& what) { return Error("staging manifest: " + what); };
  const json in = json::parse(text, nullptr, false);
  if (!in.is_array()) throw bad("not a JSON array of units");
  if (in.size() > kMaxStagedUnits) throw bad(std::to_string(in.size()) + " units exceed the limit");
  std::vector<StagedUnit> units;
  std::set<std::string> mounts;
  for (size_t u = 0; u < in.size(); ++u) {
    const std::string where = "unit " + std::to_string(u);
    const json& unit = in[u];
    if (!unit.is_object() || !unit.contains("mount") || !unit["mount"].is_string() || !unit.contains("files") ||
        !unit["files"].is_array()) {
      throw bad(where + ": needs a mount (text) and files (a list)");
    }
    StagedUnit out;
    out.mount = unit["mount"].get<std::string>();
    if (!out.mount.empty() && !plain_name(out.mount)) throw bad(where + ": mount '" + out.mount + "' is not a plain name");
    if (!mounts.insert(out.mount).second) throw bad(where + ": mount '" + out.mount + "' appears twice");
    const json& files = unit["files"];
    if (files.size() > kMaxStagedFilesPerUnit) throw bad(where + ": " + std::to_string(files.size()) + " files exceed the limit");
    for (size_t f = 0; f < files.size(); ++f) {
      const json& file = files[f];
      const std::string at = where + ", file " + std::to_string(f);
      if (!file.is_object() || !file.contains("name") || !file["name"].is_string() || !file.contains("bytes") ||
          !file["bytes"].is_number_unsigned() || !file.contains("checksum") || !file["checksum"].is_number_unsigned()) {
        throw bad(at + ": needs a name (text), bytes and checksum (unsigned numbers)");
      }
      StagedFile sf{file["name"].get<std::string>(), file["bytes"].get<uint64_t>(), file["checksum"].get<uint64_t>()};
      if (!plain_name(sf.name)) throw bad(at + ": name '" + sf.name + "' is not a plain file name");
      if (!out.files.empty() && sf.name <= out.files.back().name) throw bad(at + ": names not sorted and unique");
      out.files.push_back(std::move(sf));
    }
    units.push_back(std::move(out));
  }
  return units;
}

}  // namespace partita::runtime
