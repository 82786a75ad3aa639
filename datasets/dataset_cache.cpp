#include "datasets/dataset_cache.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "base/file_util.h"
#include "datasets/archive.h"
#include "datasets/sha256.h"

namespace partita::datasets {

namespace fs = std::filesystem;

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The last path component of a URL, without query or fragment.
std::string file_name_of(const std::string& url) {
  std::string path = url.substr(0, url.find_first_of("?#"));
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") throw Error("registry: URL " + url + " names no file");
  return name;
}

// Holds an exclusive flock on `path` until destroyed; waits at most `timeout_s` for it.
class FileLock {
 public:
  FileLock(const std::string& path, int timeout_s, const std::string& what) {
    fd_ = ScopedFd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (fd_.get() < 0) throw file_error(path, "cannot open the lock file: " + errno_text());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool told = false;
    while (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) throw file_error(path, "cannot lock: " + errno_text());
      if (std::chrono::steady_clock::now() > deadline) {
        throw Error("another process has been downloading " + what + " for over " + std::to_string(timeout_s) +
                    " s (it holds " + path + ")");
      }
      if (!told) spdlog::info("waiting for another process downloading {} (lock {})", what, path);
      told = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

 private:
  ScopedFd fd_;
};

// Removes its folder on destruction unless released.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(std::string path) : path_(std::move(path)) {}
  ~RemoveOnExit() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;

 private:
  std::string path_;
};

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw file_error(dir.string(), "cannot create the folder: " + ec.message());
}

std::string mismatch(const std::string& what, const std::string& got, const std::string& expected) {
  return what + " has SHA-256 " + got + ", but the dataset registry records " + expected;
}

// Where the unpacked files are: the staging folder, or its one top-level folder when the
// archive put everything under one (ml-latest-small/, cora/) and the contents are there.
fs::path content_root(const NamedDataset& d, const fs::path& unpacked) {
  auto has_all = [&](const fs::path& root) {
    for (const ContentFile& c : d.contents) {
      if (!fs::is_regular_file(root / c.path)) return false;
    }
    return true;
  };
  if (has_all(unpacked)) return unpacked;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(unpacked)) entries.push_back(e.path());
  if (entries.size() == 1 && fs::is_directory(entries[0]) && has_all(entries[0])) return entries[0];
  const fs::path root = entries.size() == 1 && fs::is_directory(entries[0]) ? entries[0] : unpacked;
  for (const ContentFile& c : d.contents) {
    if (!fs::is_regular_file(root / c.path)) {
      std::string urls;
      for (const RemoteFile& f : d.files) urls += (urls.empty() ? "" : ", ") + f.url;
      throw Error("dataset " + d.name + ": what " + urls + " unpacks to has no " + c.path +
                  " (the layout its reader, format " + (d.format.empty() ? "none" : d.format) + ", needs)");
    }
  }
  return root;
}

}  // namespace

std::string default_cache_dir() {
  if (std::string dir = env_or_empty(kCacheEnv); !dir.empty()) return dir;
  if (std::string xdg = env_or_empty("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/partita/datasets";
  const std::string home = env_or_empty("HOME");
  if (home.empty()) {
    throw UsageError(std::string("no dataset cache folder: HOME is not set (set ") + kCacheEnv + " or pass --cache-dir)");
  }
  return home + "/.cache/partita/datasets";
}

std::string cache_dir_or_default(const std::string& cache_dir) {
  return fs::absolute(cache_dir.empty() ? default_cache_dir() : cache_dir).lexically_normal().string();
}

std::string dataset_dir(const NamedDataset& d, const std::string& cache_dir) {
  return (fs::path(cache_dir_or_default(cache_dir)) / d.name).string();
}

bool is_cached(const NamedDataset& d, const std::string& cache_dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dataset_dir(d, cache_dir)) / kMarkerFile, ec);
}

std::string local_copy(const NamedDataset& d) {
  const std::string base = env_or_empty(kLocalCopiesEnv);
  if (base.empty()) return "";
  const fs::path dir = fs::absolute(fs::path(base) / d.name).lexically_normal();
  std::error_code ec;
  for (const ContentFile& c : d.contents) {
    if (!fs::is_regular_file(dir / c.path, ec)) return "";
  }
  return dir.string();
}

std::string named_dataset_dir(const NamedDataset& d, const std::string& cache_dir) {
  const std::string local = local_copy(d);
  return local.empty() ? dataset_dir(d, cache_dir) : local;
}

std::string source_url(const NamedDataset& d, const RemoteFile& file, const std::string& mirror) {
  std::string base = mirror.empty() ? env_or_empty(kMirrorEnv) : mirror;
  if (base.empty()) return file.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + d.name + "/" + file_name_of(file.url);
}

std::string fetch_dataset(const NamedDataset& d, const FetchOptions& options) {
  const fs::path root = cache_dir_or_default(options.cache_dir);
  const fs::path final_dir = root / d.name;
  std::error_code ec;
  if (fs::is_regular_file(final_dir / kMarkerFile, ec)) return final_dir.string();
  make_dirs(root / ".downloads" / d.name);
  FileLock lock((root / ".downloads" / (d.name + ".lock")).string(), options.lock_timeout_s, d.name);
  if (fs::is_regular_file(final_dir / kMarkerFile, ec)) return final_dir.string();  // the other process's
  if (fs::exists(final_dir, ec)) {
    throw file_error(final_dir.string(), std::string("is in the dataset cache but has no ") + kMarkerFile +
                                             " (not a download of this program); move it away to download " + d.name);
  }
  // Staging folders of this dataset are abandoned ones: we hold its lock.
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.path().filename().string().rfind(".staging-" + d.name + "-", 0) == 0) fs::remove_all(e.path(), ec);
  }

  const fs::path downloads = root / ".downloads" / d.name;
  nlohmann::json marker = {{"name", d.name}, {"format", d.format}, {"licence", d.licence}, {"citation", d.citation}};
  std::vector<fs::path> fetched;
  for (const RemoteFile& f : d.files) {
    const std::string url = source_url(d, f, options.mirror);
    const fs::path done = downloads / file_name_of(f.url);
    const fs::path part = done.string() + ".part";
    if (!fs::is_regular_file(done, ec)) {
      download_resumable(url, part.string(), options.download);
      fs::rename(part, done, ec);
      if (ec) throw file_error(done.string(), "cannot rename the finished download into place: " + ec.message());
    }
    const std::string sum = sha256_file(done.string());
    if (!f.sha256.empty() && sum != f.sha256) {
      fs::remove(done, ec);
      throw Error("download of " + url + " is damaged or not the publisher's file: " +
                  mismatch("it", sum, f.sha256) + "; it was removed and nothing was added to the cache");
    }
    marker["files"].push_back({{"url", f.url}, {"from", url}, {"sha256", sum}, {"checked", !f.sha256.empty()}});
    fetched.push_back(done);
  }

  const fs::path staging = root / (".staging-" + d.name + "-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  make_dirs(staging / "unpacked");
  RemoveOnExit remove_staging(staging.string());
  for (size_t i = 0; i < d.files.size(); ++i) {
    if (d.files[i].unpack == Unpack::archive) {
      extract_archive(fetched[i].string(), (staging / "unpacked").string());
    } else {
      fs::copy_file(fetched[i], staging / "unpacked" / fetched[i].filename(), ec);
      if (ec) throw file_error(fetched[i].string(), "cannot copy into " + staging.string() + ": " + ec.message());
    }
  }
  const fs::path contents = content_root(d, staging / "unpacked");
  for (const ContentFile& c : d.contents) {
    const std::string sum = sha256_file((contents / c.path).string());
    if (!c.sha256.empty() && sum != c.sha256) {
      // The archive itself is wrong: a later call must not unpack it again.
      for (const fs::path& p : fetched) fs::remove(p, ec);
      throw Error("dataset " + d.name + ": " + mismatch(c.path + " unpacked from its download", sum, c.sha256) +
                  "; the download was removed and nothing was added to the cache");
    }
    marker["contents"].push_back({{"path", c.path}, {"sha256", sum}, {"checked", !c.sha256.empty()}});
  }
  marker["downloaded_at"] = static_cast<int64_t>(std::time(nullptr));
  write_file_atomically((contents / kMarkerFile).string(), marker.dump(2) + "\n");
  fs::rename(contents, final_dir, ec);
  if (ec) throw file_error(final_dir.string(), "cannot move the unpacked dataset into place: " + ec.message());
  fs::remove_all(downloads, ec);
  if (needs_first_sum(d)) {
    spdlog::warn("dataset {}: no SHA-256 is recorded for it, so its download is unchecked; the sums computed now are in {}",
                 d.name, (final_dir / kMarkerFile).string());
  }
  spdlog::info("dataset {} is in {}", d.name, final_dir.string());
  return final_dir.string();
}

}  // namespace partita::datasets
