#include "partitioner/reader_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace partita::detail {

namespace {

// Linux transfers at most 0x7ffff000 bytes per read()/write() call.
constexpr size_t kMaxIoBytes = size_t{1} << 30;

std::string errno_text() { return std::strerror(errno); }

}  // namespace

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) ::close(fd_);
}

void ScopedFd::close_or_throw(const std::string& path) {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) throw file_error(path, "cannot close: " + errno_text());
}

ScopedFd open_for_reading(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw file_error(path, "cannot open: " + errno_text());
  return ScopedFd(fd);
}

ScopedFd open_for_writing(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw file_error(path, "cannot create: " + errno_text());
  return ScopedFd(fd);
}

size_t regular_file_size(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw file_error(path, "cannot stat: " + errno_text());
  if (S_ISDIR(st.st_mode)) throw file_error(path, "is a folder, expected a file");
  if (!S_ISREG(st.st_mode)) throw file_error(path, "is not a regular file");
  return static_cast<size_t>(st.st_size);
}

void read_exactly(int fd, const std::string& path, char* buffer, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::read(fd, buffer + done, std::min(bytes - done, kMaxIoBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw file_error(path, "read failed: " + errno_text());
    if (n == 0) throw file_error(path, "file ended early (was it truncated while being read?)");
    done += static_cast<size_t>(n);
  }
}

void write_all(int fd, const std::string& path, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::write(fd, p + done, std::min(bytes - done, kMaxIoBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw file_error(path, "write failed: " + errno_text());
    done += static_cast<size_t>(n);
  }
}

void seek_to(int fd, const std::string& path, uint64_t offset) {
  if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
    throw file_error(path, "cannot seek to byte " + std::to_string(offset) + ": " + errno_text());
  }
}

std::string read_file(const std::string& path) {
  ScopedFd fd = open_for_reading(path);
  size_t size = regular_file_size(fd.get(), path);
  std::string text(size, '\0');
  read_exactly(fd.get(), path, text.data(), size);
  return text;
}

std::string folder_name(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

std::string file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ",";
  return text + ")";
}

void split_whitespace(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    while (i < line.size() && is_blank(line[i])) ++i;
    if (i == line.size()) return;
    size_t start = i;
    while (i < line.size() && !is_blank(line[i])) ++i;
    fields->push_back(line.substr(start, i - start));
  }
}

ParseProgress::ParseProgress(const std::string& task, size_t total_bytes) {
  if (total_bytes >= kProgressThresholdBytes) {
    progress_ = std::make_unique<Progress>(task, static_cast<int64_t>(total_bytes), "bytes");
  }
}

void ParseProgress::done(size_t total_bytes) {
  if (progress_ == nullptr) return;
  progress_->advance(static_cast<int64_t>(total_bytes - reported_));
  reported_ = total_bytes;
  progress_->done();
}

}  // namespace partita::detail
