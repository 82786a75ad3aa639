// POSIX file primitives whose errors name the file: every reader and writer uses them, so
// a short read, a full disk or a folder passed as a file reads the same everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace partita {

// strerror(errno), for messages.
std::string errno_text();

// Owns a POSIX file descriptor (closing it on scope exit) so that error paths leak nothing.
// Movable: ownership travels with the object; -1 owns nothing.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd();
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  // Gives up ownership: the caller closes the returned descriptor.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now and reports failure (a full disk can surface only at close); errors name `path`.
  void close_or_throw(const std::string& path);

 private:
  int fd_ = -1;
};

// Open for reading / for writing (created or truncated); errors name the file and the reason.
ScopedFd open_for_reading(const std::string& path);
ScopedFd open_for_writing(const std::string& path);
// Size in bytes of an open regular file; a folder or device is an error naming `path`.
size_t regular_file_size(int fd, const std::string& path);

// Fills `buffer` (of exactly `bytes` bytes) from the open descriptor; errors name `path`.
// Loops because read() may return less than asked (and at most ~2 GB per call on Linux).
void read_exactly(int fd, const std::string& path, char* buffer, size_t bytes);
void write_all(int fd, const std::string& path, const void* data, size_t bytes);
// The whole file as bytes; errors (missing, a folder, a short read) name the file.
std::string read_file(const std::string& path);
// The same, or "" when there is no file at `path` (a file a run may not have written yet).
std::string read_file_if_exists(const std::string& path);
// Appends `text` to the file (created if missing); a full disk or a closed folder is an
// error naming the file and the reason, and leaves the file as it was.
void append_to_file(const std::string& path, const std::string& text);
// Moves the descriptor to byte `offset` from the start; errors name `path`.
void seek_to(int fd, const std::string& path, uint64_t offset);

// Replaces the file at `path` with `bytes` bytes of `data`, atomically: they go to a
// temporary sibling of this call's own first, which is flushed to disk and renamed over
// `path` (then the folder is flushed), so a crash leaves either the old file or the new one,
// never a torn one (checkpoints, their pointer). Errors name the file; a failed call
// leaves no temporary behind.
void write_file_atomically(const std::string& path, const void* data, size_t bytes);
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace partita
