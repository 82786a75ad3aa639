#include "base/resident_array.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/file_util.h"

namespace partita {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// Copied, then dropped from the mapping and the page cache, this much at a time: what the
// load holds twice at most.
constexpr size_t kChunkBytes = size_t{64} << 20;

// Anonymous memory, 2 MB aligned and sized, unmapped when the last ArrayRef goes.
struct HugeRegion {
  void* base = nullptr;
  size_t bytes = 0;
  ~HugeRegion() {
    if (base != nullptr) ::munmap(base, bytes);
  }
};

std::shared_ptr<HugeRegion> map_huge(size_t bytes, const std::string& path) {
  auto region = std::make_shared<HugeRegion>();
  if (bytes < kHugePage) {
    // Less than a huge page: plain pages (a huge page would hold 2 MB for it).
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    region->bytes = std::max(page, (bytes + page - 1) / page * page);
    void* raw = ::mmap(nullptr, region->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
      throw file_error(path, "cannot map " + std::to_string(region->bytes) + " bytes of memory for its rows: " +
                                 errno_text());
    }
    region->base = raw;
    return region;
  }
  const size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Over-map by one huge page and trim, so the region starts on a 2 MB boundary and every
  // 2 MB of it can be one huge page.
  void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    throw file_error(path, "cannot map " + std::to_string(size) + " bytes of memory for its rows: " + errno_text());
  }
  char* start = static_cast<char*>(raw);
  char* aligned = start + (kHugePage - reinterpret_cast<uintptr_t>(start) % kHugePage) % kHugePage;
  if (aligned > start) ::munmap(start, static_cast<size_t>(aligned - start));
  char* end = start + size + kHugePage;
  if (end > aligned + size) ::munmap(aligned + size, static_cast<size_t>(end - (aligned + size)));
  region->base = aligned;
  region->bytes = size;
  // Best effort: where transparent huge pages are off, the region is plain anonymous memory.
  ::madvise(aligned, size, MADV_HUGEPAGE);
  return region;
}

}  // namespace

ArrayRef load_resident(MappedArray array) {
  const size_t bytes = array.data_bytes();
  std::shared_ptr<HugeRegion> region = map_huge(bytes, array.path());
  // The page cache's copy is dropped chunk by chunk (where no other process maps it), so
  // the file is not held twice; the descriptor is only for that.
  const int fd = ::open(array.path().c_str(), O_RDONLY | O_CLOEXEC);
  const char* from = static_cast<const char*>(array.raw_data());
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto data_offset = static_cast<off_t>(sizeof(ArrayHeader));
  char* to = static_cast<char*>(region->base);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kChunkBytes, bytes - done);
    std::memcpy(to + done, from + done, n);
    // The whole pages of the chunk leave this process's mapping, then the page cache.
    const uintptr_t first = (reinterpret_cast<uintptr_t>(from + done) + page - 1) / page * page;
    const uintptr_t last = reinterpret_cast<uintptr_t>(from + done + n) / page * page;
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    if (fd >= 0) ::posix_fadvise(fd, data_offset + static_cast<off_t>(done), static_cast<off_t>(n), POSIX_FADV_DONTNEED);
    done += n;
  }
  ::mprotect(region->base, region->bytes, PROT_READ);  // immutable from here on, as the mapping was
  const void* data = region->base;
  const DType dtype = array.dtype();
  std::vector<int64_t> shape = array.shape();
  std::string name = array.path();
  array = MappedArray();  // the mapping goes now, not with the caller's copy
  if (fd >= 0) {
    // Once more for the whole file, now unmapped: the kernel keeps pages it saw in use
    // moments ago (measured: the chunk by chunk calls alone left 448 of 512 MB cached).
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  return ArrayRef::from_owner(std::shared_ptr<const void>(region, region->base), dtype, std::move(shape), data, bytes,
                              std::move(name));
}

ArrayRef copy_resident(const ArrayRef& array) {
  if (array.empty() || array.bytes() == 0) return array;  // nothing to copy (its data may be null)
  const size_t bytes = array.bytes();
  std::shared_ptr<HugeRegion> region = map_huge(bytes, array.name().empty() ? "an array" : array.name());
  std::memcpy(region->base, array.raw_data(), bytes);
  ::mprotect(region->base, region->bytes, PROT_READ);
  const void* data = region->base;
  return ArrayRef::from_owner(std::shared_ptr<const void>(region, region->base), array.dtype(), array.shape(), data,
                              bytes, array.name());
}

bool is_anonymous_memory(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, device;
    uint64_t inode = 0;
    fields >> range >> perms >> offset >> device >> inode;
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    const uintptr_t begin = std::stoull(range.substr(0, dash), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (at >= begin && at < end) return inode == 0;
  }
  return false;
}

}  // namespace partita
