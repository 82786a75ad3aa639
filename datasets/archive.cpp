#include "datasets/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "base/error.h"
#include "base/file_util.h"

namespace partita::datasets {

namespace fs = std::filesystem;

namespace {

// The entry's path, checked to stay inside the destination; "" for entries to skip.
std::string safe_relative_path(const std::string& archive, const std::string& entry) {
  if (entry.rfind("__MACOSX/", 0) == 0) return "";  // resource forks a Mac's zip adds
  fs::path p(entry);
  if (p.is_absolute()) throw file_error(archive, "entry '" + entry + "' has an absolute path; not unpacking it");
  for (const fs::path& part : p) {
    if (part == "..") throw file_error(archive, "entry '" + entry + "' leaves the folder (..); not unpacking it");
  }
  const std::string normal = p.lexically_normal().string();
  return normal == "." ? "" : normal;
}

}  // namespace

void extract_archive(const std::string& archive_path, const std::string& dest) {
  std::unique_ptr<struct archive, int (*)(struct archive*)> a(archive_read_new(), archive_read_free);
  if (!a) throw Error("libarchive: cannot allocate a reader");
  archive_read_support_filter_all(a.get());
  archive_read_support_format_all(a.get());
  if (archive_read_open_filename(a.get(), archive_path.c_str(), 1 << 16) != ARCHIVE_OK) {
    throw file_error(archive_path, std::string("not an archive libarchive reads: ") + archive_error_string(a.get()));
  }
  std::vector<char> buffer(1 << 16);
  for (;;) {
    struct archive_entry* entry = nullptr;
    const int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      throw file_error(archive_path, std::string("damaged archive: ") + archive_error_string(a.get()));
    }
    const char* raw_name = archive_entry_pathname(entry);
    const std::string name = raw_name ? raw_name : "";
    const std::string relative = safe_relative_path(archive_path, name);
    if (relative.empty()) continue;
    const fs::path target = fs::path(dest) / relative;
    std::error_code ec;
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) {
      fs::create_directories(target, ec);
      if (ec) throw file_error(target.string(), "cannot create folder: " + ec.message());
      continue;
    }
    if (type != AE_IFREG || archive_entry_hardlink(entry) != nullptr) {
      spdlog::warn("{}: skipping '{}' (not a regular file)", archive_path, name);
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw file_error(target.parent_path().string(), "cannot create folder: " + ec.message());
    ScopedFd out(::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (out.get() < 0) throw file_error(target.string(), "cannot create: " + errno_text());
    for (;;) {
      const la_ssize_t n = archive_read_data(a.get(), buffer.data(), buffer.size());
      if (n < 0) throw file_error(archive_path, "damaged entry '" + name + "': " + archive_error_string(a.get()));
      if (n == 0) break;
      write_all(out.get(), target.string(), buffer.data(), static_cast<size_t>(n));
    }
    out.close_or_throw(target.string());
  }
}

}  // namespace partita::datasets
