#include "runtime/staging/stage_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "base/checksum.h"
#include "base/error.h"
#include "base/file_util.h"
#include "base/staging_dir.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kUnitMarker = "MANIFEST.json";
constexpr const char* kFolderMarker = "STAGED.json";
constexpr const char* kTemporary = ".partita-tmp-";  // base/staging_dir.h's temporary siblings

// The cache's lock file, held for one staging: stagings of two daemons sharing a cache
// folder do not write the same unit at once.
class CacheLock {
 public:
  CacheLock(const std::string& dir, std::chrono::milliseconds deadline) : path_(dir + "/.lock") {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw file_error(path_, "cannot open the cache's lock: " + errno_text());
    const auto until = Clock::now() + deadline;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK || Clock::now() >= until) {
        ::close(fd_);
        throw file_error(path_, "the cache is busy (another staging held it for " +
                                    std::to_string(deadline.count() / 1000) + " s)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~CacheLock() { ::close(fd_); }  // releases the lock
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  std::string path_;
  int fd_ = -1;
};

uint64_t unit_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) total += entry.file_size(ec);
  }
  return total;
}

// Every file of the cached unit `dir` against `unit`; the first mismatch (or a missing
// file) as an Error naming it.
void verify_unit(const fs::path& dir, const StagedUnit& unit) {
  for (const StagedFile& f : unit.files) verify_file((dir / f.name).string(), f);
}

// Temporary folders whose writer died (a daemon killed mid-staging).
void remove_abandoned(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.find(kTemporary);
    if (at == std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + at + std::strlen(kTemporary)));
    if (pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno != EPERM) fs::remove_all(entry.path(), ec);
  }
}

// The checks and file writes of arriving bytes, on a thread of their own: the receiving
// thread decrypts the next piece while this one checksums and writes the last. The copy
// into the page cache costs more CPU than any other step of a staging (fresh pages; perf,
// BENCHMARKS.md "Data staging"), and it ran on the network's thread. Pieces go through a
// few buffers in turn, in order.
class PieceWriter {
 public:
  PieceWriter(size_t buffers, size_t bytes) : storage_(buffers) {
    for (auto& b : storage_) {
      b.resize(bytes);
      free_.push_back(b.data());
    }
    thread_ = std::thread([this] { run(); });
  }
  ~PieceWriter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  PieceWriter(const PieceWriter&) = delete;
  PieceWriter& operator=(const PieceWriter&) = delete;

  size_t buffer_bytes() const { return storage_.front().size(); }

  // A buffer to receive the next piece into, once one is free. Throws the writer's error.
  char* next_buffer() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !free_.empty() || failure_; });
    if (failure_) std::rethrow_exception(failure_);
    char* b = free_.back();
    free_.pop_back();
    return b;
  }
  // Checks the `bytes` at `buffer` (from next_buffer) with `check` and appends them to `fd`
  // (`path` names it in errors), after the pieces given before.
  void write(char* buffer, size_t bytes, int fd, const std::string& path, FileCheck& check) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back({buffer, bytes, fd, &path, &check});
    }
    changed_.notify_all();
  }
  // Waits until every piece given is written. Throws the writer's error.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return (queue_.empty() && !busy_) || failure_; });
    if (failure_) std::rethrow_exception(failure_);
  }
  // Drops the pieces not yet written and waits for the one being written: after it, no
  // file, path or check given before is used. The writer takes no more pieces.
  void abandon() {
    std::unique_lock<std::mutex> lock(mutex_);
    queue_.clear();
    if (!failure_) failure_ = std::make_exception_ptr(Error("staging: the writer was abandoned"));
    changed_.wait(lock, [this] { return !busy_; });
  }

 private:
  struct Piece {
    char* buffer;
    size_t bytes;
    int fd;
    const std::string* path;
    FileCheck* check;
  };

  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;
      const Piece p = queue_.front();
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      std::exception_ptr failure;
      try {
        p.check->update(p.buffer, p.bytes);
        write_all(p.fd, *p.path, p.buffer, p.bytes);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      free_.push_back(p.buffer);
      if (failure && !failure_) failure_ = failure;
      changed_.notify_all();
    }
  }

  std::vector<std::vector<char>> storage_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<char*> free_;
  std::deque<Piece> queue_;
  bool busy_ = false, stopping_ = false;
  std::exception_ptr failure_;
  std::thread thread_;  // last: starts once the rest is there
};

// Fetches the files of `unit` into `into` in ranges of `o.request_bytes`, checking each
// file, with up to `o.requests_in_flight` requests sent ahead. The server answers them in
// order, one reply after the other; with the next request already in its socket it starts
// on the next range (opening the next file, reading and encrypting) while this end still
// receives the last, instead of idling for a round trip and the wake-ups of both threads
// per range, or per small file.
void fetch_unit(RequestClient& client, const StagedUnit& unit, uint32_t first_file, const fs::path& into,
                const StageCacheOptions& o, StageOutcome& outcome) {
  const uint64_t request_bytes = o.request_bytes;
  const std::chrono::milliseconds deadline = o.deadline;
  // Every range of every file, in the order the replies come.
  std::vector<wire::StageRequest> ranges;
  for (size_t i = 0; i < unit.files.size(); ++i) {
    const uint64_t bytes = unit.files[i].bytes;
    for (uint64_t offset = 0; offset < bytes; offset += request_bytes) {
      ranges.push_back({first_file + static_cast<uint32_t>(i), offset, std::min(bytes - offset, request_bytes)});
    }
  }
  size_t sent = 0, answered = 0;
  auto send_ahead = [&] {
    for (; sent < ranges.size() && sent < answered + o.requests_in_flight; ++sent) {
      unsigned char bytes[wire::kStageRequestBytes];
      wire::encode_stage_request(ranges[sent], bytes);
      client.send(Span<const char>(reinterpret_cast<const char*>(bytes), sizeof(bytes)), deadline);
    }
  };
  // 3 buffers: one being received, one being written, one ready for either.
  constexpr size_t kPiece = size_t{4} << 20;
  PieceWriter writer(3, kPiece);
  std::vector<char> head;
  for (size_t i = 0; i < unit.files.size(); ++i) {
    const StagedFile& f = unit.files[i];
    const std::string path = (into / f.name).string();
    FileCheck check;  // as the bytes arrive: the file is not read again
    {
      ScopedFd out = open_for_writing(path);
      // On an error, before `out` and `check` go: the writer may still hold their pieces.
      struct Abandon {
        PieceWriter& writer;
        bool done = false;
        ~Abandon() {
          if (!done) writer.abandon();
        }
      } abandon{writer};
      for (; answered < ranges.size() && ranges[answered].file == first_file + i; ++answered) {
        send_ahead();
        const wire::StageRequest& request = ranges[answered];
        uint64_t body = 0;
        const size_t length = client.receive_head(head, body, deadline);
        if (length < 1 || head[0] != wire::kStageReplyOk) {
          // The replies to the requests still in flight are left unread: the staging ends
          // here, and its connection with it.
          const std::string why = length > 1 ? std::string(head.data() + 1, length - 1) : "an empty reply";
          throw Error("staging " + path + ": the server refused the range [" + std::to_string(request.offset) + ", +" +
                      std::to_string(request.bytes) + "): " + why);
        }
        if (body != request.bytes) {
          throw Error("staging " + path + ": the server sent " + std::to_string(body) + " bytes for a range of " +
                      std::to_string(request.bytes));
        }
        for (uint64_t got = 0; got < body;) {
          const uint64_t n = std::min<uint64_t>(body - got, writer.buffer_bytes());
          char* buffer = writer.next_buffer();
          client.receive_body(buffer, n, deadline);
          writer.write(buffer, static_cast<size_t>(n), out.get(), path, check);
          got += n;
        }
        outcome.bytes_copied += body;
      }
      writer.drain();  // before the file is closed and checked
      abandon.done = true;
      out.close_or_throw(path);
    }
    check.check(path, f);  // a mismatch names the file; the temporary unit is dropped
    ++outcome.files_copied;
  }
}

// The names the cache writes beside a unit's files and a folder's links (units_from_json
// checked the rest): a file of that name would be replaced by the marker after its check,
// and the job would read the marker in its place.
void check_names(const std::vector<StagedUnit>& units) {
  std::set<std::string> mounts;
  for (const StagedUnit& u : units) mounts.insert(u.mount);
  for (const StagedUnit& u : units) {
    if (u.mount == kFolderMarker) {
      throw Error("staging manifest: mount '" + u.mount + "': the name is the cache's own (" + kFolderMarker + ")");
    }
    for (const StagedFile& f : u.files) {
      const std::string where = "staging manifest: unit '" + u.mount + "', file '" + f.name + "'";
      if (f.name == kUnitMarker) throw Error(where + ": the name is the cache's own (" + kUnitMarker + ")");
      if (u.mount.empty() && f.name == kFolderMarker) {
        throw Error(where + ": the name is the cache's own (" + kFolderMarker + ")");
      }
      if (u.mount.empty() && mounts.count(f.name)) throw Error(where + ": the name is also a unit's mount");
    }
  }
}

// Refuses a staging whose missing units would not fit on the cache's file system, before a
// byte is written: sizes come from the network, and a copy that fills the disk fails only
// at its end, after the node's other writers (logs, job outputs) failed too.
void check_space(const fs::path& root, const std::vector<StagedUnit>& units) {
  uint64_t needed = 0;
  std::error_code ec;
  for (const StagedUnit& u : units) {
    if (fs::exists(root / "units" / key_text(u.key()) / kUnitMarker, ec)) continue;
    for (const StagedFile& f : u.files) needed = f.bytes > UINT64_MAX - needed ? UINT64_MAX : needed + f.bytes;
  }
  const fs::space_info space = fs::space(root, ec);
  if (!ec && needed > space.available) {
    throw Error("staging into " + root.string() + ": the job's data needs " + std::to_string(needed) +
                " bytes more there, and its file system has " + std::to_string(space.available) + " bytes free");
  }
}

void touch(const fs::path& dir) {
  std::error_code ec;
  fs::last_write_time(dir, fs::file_time_type::clock::now(), ec);
}

}  // namespace

StageCache::StageCache(StageCacheOptions options) : options_(std::move(options)) {
  if (options_.dir.empty()) throw UsageError("the staging cache needs a folder");
  if (options_.request_bytes == 0 || options_.request_bytes > wire::kMaxStageChunkBytes) {
    throw UsageError("the staging cache's request size " + std::to_string(options_.request_bytes) +
                     " is not in [1, " + std::to_string(wire::kMaxStageChunkBytes) + "] bytes");
  }
  if (options_.requests_in_flight == 0) throw UsageError("the staging cache needs at least 1 request in flight");
  std::error_code ec;
  options_.dir = fs::absolute(options_.dir, ec).lexically_normal().string();
  while (options_.dir.size() > 1 && options_.dir.back() == '/') options_.dir.pop_back();
  for (const char* sub : {"units", "folders"}) {
    fs::create_directories(fs::path(options_.dir) / sub, ec);
    if (ec) throw file_error(options_.dir, "cannot create the staging cache: " + ec.message());
    remove_abandoned(fs::path(options_.dir) / sub);
  }
  if (::access(options_.dir.c_str(), W_OK) != 0) throw file_error(options_.dir, "the staging cache is not writable");
}

std::vector<std::string> list_cached_units(const std::string& dir, size_t limit) {
  std::vector<std::string> keys;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(dir) / "units", ec)) {
    if (keys.size() >= limit) break;
    const std::string name = entry.path().filename().string();
    if (name.size() == 16 && fs::exists(entry.path() / kUnitMarker, ec)) keys.push_back(name);
  }
  return keys;
}

uint64_t StageCache::cached_bytes() const { return cached_unit_bytes(options_.dir); }

uint64_t cached_unit_bytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(dir) / "units", ec)) {
    if (entry.path().filename().string().find(kTemporary) == std::string::npos) total += unit_bytes(entry.path());
  }
  return total;
}

StageOutcome StageCache::stage(const std::vector<StagedUnit>& units, const ChannelOffer& offer, uint32_t server) {
  check_names(units);
  // One staging at a time, within this process too: flock's lock belongs to each open of
  // the lock file, so two threads conflict as two processes do, with the same deadline.
  CacheLock lock(options_.dir, options_.deadline);
  const fs::path root(options_.dir);
  check_space(root, units);
  StageOutcome outcome;
  RequestClient client("staging from " + offer.host + ":" + std::to_string(offer.port));
  bool connected = false;
  std::vector<std::string> keys;
  uint32_t first_file = 0;
  for (const StagedUnit& unit : units) {
    const std::string key = key_text(unit.key());
    keys.push_back(key);
    const fs::path target = root / "units" / key;
    std::error_code ec;
    bool cached = fs::exists(target / kUnitMarker, ec);
    if (cached) {
      try {
        verify_unit(target, unit);
      } catch (const Error& e) {
        spdlog::warn("staging cache: {}; fetching the unit again", e.what());
        outcome.damaged.push_back(e.what());
        cached = false;
      }
    }
    if (cached) {
      ++outcome.units_reused;
      touch(target);
    } else {
      if (!connected) {
        client.open(offer, server, options_.deadline);
        connected = true;
      }
      StagingDir tmp(target.string(), true, kUnitMarker);
      fetch_unit(client, unit, first_file, tmp.path(), options_, outcome);
      write_file_atomically((fs::path(tmp.path()) / kUnitMarker).string(), units_to_json({unit}));
      tmp.commit();
      ++outcome.units_copied;
    }
    first_file += static_cast<uint32_t>(unit.files.size());
  }

  // The folder: a symlink per unit at its mount (files of a top unit one by one).
  Checksum folder_key;
  for (size_t u = 0; u < units.size(); ++u) {
    folder_key.update(units[u].mount.c_str(), units[u].mount.size() + 1);
    folder_key.update(keys[u].c_str(), keys[u].size());
  }
  const fs::path folder = root / "folders" / key_text(folder_key.digest());
  std::error_code ec;
  if (!fs::exists(folder / kFolderMarker, ec)) {
    StagingDir tmp(folder.string(), true, kFolderMarker);
    const fs::path at(tmp.path());
    for (size_t u = 0; u < units.size(); ++u) {
      const fs::path unit = fs::path("..") / ".." / "units" / keys[u];
      if (units[u].mount.empty()) {
        for (const StagedFile& f : units[u].files) fs::create_symlink(unit / f.name, at / f.name, ec);
      } else {
        fs::create_symlink(unit, at / units[u].mount, ec);
      }
      if (ec) throw file_error(tmp.path(), "cannot link unit " + keys[u] + ": " + ec.message());
    }
    write_file_atomically((at / kFolderMarker).string(), units_to_json(units));
    tmp.commit();
  }
  touch(folder);
  outcome.folder = folder.string();

  // The bound: least recently used units first, never one this staging uses.
  struct Cached {
    fs::path dir;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Cached> cached;
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(root / "units", ec)) {
    if (entry.path().filename().string().find(kTemporary) != std::string::npos) continue;
    const uint64_t bytes = unit_bytes(entry.path());
    total += bytes;
    const std::string key = entry.path().filename().string();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      cached.push_back({entry.path(), fs::last_write_time(entry.path(), ec), bytes});
    }
  }
  if (options_.max_bytes > 0 && total > options_.max_bytes) {
    std::sort(cached.begin(), cached.end(), [](const Cached& a, const Cached& b) { return a.used < b.used; });
    for (const Cached& c : cached) {
      if (total <= options_.max_bytes) break;
      fs::remove_all(c.dir, ec);
      total -= c.bytes;
      ++outcome.evicted_units;
    }
    // The folders that linked an evicted unit.
    std::vector<fs::path> dangling;
    for (const auto& entry : fs::directory_iterator(root / "folders", ec)) {
      for (const auto& link : fs::directory_iterator(entry.path(), ec)) {
        if (link.is_symlink(ec) && !fs::exists(link.path(), ec)) {
          dangling.push_back(entry.path());
          break;
        }
      }
    }
    for (const fs::path& d : dangling) fs::remove_all(d, ec);
  }
  outcome.cache_bytes = total;
  return outcome;
}

}  // namespace partita::runtime
