#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace partita {

namespace {

// Linux transfers at most 0x7ffff000 bytes per read()/write() call.
constexpr size_t kMaxIoBytes = size_t{1} << 30;

}  // namespace

std::string errno_text() { return std::strerror(errno); }

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) ::close(fd_);
}

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
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

std::string read_file(const std::string& path) {
  ScopedFd fd = open_for_reading(path);
  const size_t size = regular_file_size(fd.get(), path);
  std::string text(size, '\0');
  read_exactly(fd.get(), path, text.data(), size);
  return text;
}

std::string read_file_if_exists(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return "";
  return read_file(path);
}

void append_to_file(const std::string& path, const std::string& text) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw file_error(path, "cannot open for appending: " + errno_text());
  // A failed append (a full disk) is cut back to where it started: readers of the file
  // (--resume, `partita plot`) never meet half a line.
  const size_t before = regular_file_size(fd.get(), path);
  try {
    write_all(fd.get(), path, text.data(), text.size());
    fd.close_or_throw(path);
  } catch (...) {
    if (::truncate(path.c_str(), static_cast<off_t>(before)) != 0) {
      // Nothing more to do: the write's own error below names the file.
    }
    throw;
  }
}

void seek_to(int fd, const std::string& path, uint64_t offset) {
  if (::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
    throw file_error(path, "cannot seek to byte " + std::to_string(offset) + ": " + errno_text());
  }
}

void write_file_atomically(const std::string& path, const void* data, size_t bytes) {
  // A sibling of its own (writers of the same file in other threads or processes do not
  // share it), removed if anything fails before the rename.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  try {
    ScopedFd fd = open_for_writing(tmp);
    write_all(fd.get(), tmp, data, bytes);
    if (::fsync(fd.get()) != 0) throw Error("cannot flush " + tmp + ": " + errno_text());
    fd.close_or_throw(tmp);
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot replace " + path + ": " + errno_text());
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // The rename itself is durable only once the folder is: callers move pointers last.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, text.data(), text.size());
}

}  // namespace partita
