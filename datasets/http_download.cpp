#include "datasets/http_download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "base/file_util.h"

namespace partita::datasets {

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("libcurl: global initialisation failed");
  });
}

// One attempt's state, shared with libcurl's callbacks (which must not throw).
struct Attempt {
  CURL* curl = nullptr;
  int fd = -1;
  std::string path;
  uint64_t offset = 0;   // bytes the file held when the attempt began
  uint64_t written = 0;  // bytes this attempt appended
  bool body_started = false;
  long status = 0;
  bool refused = false;  // the response was not the body asked for: nothing written
  std::string write_error;
  // From the final response's headers (redirects reset them).
  int64_t range_start = -1;
  int64_t total = -1;  // the whole file's size, when the server said
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    a->range_start = -1;
    a->total = -1;
  }
  auto value_of = [&](const char* name) -> std::string {
    const size_t n = std::char_traits<char>::length(name);
    if (line.size() < n || strncasecmp(line.c_str(), name, n) != 0) return "";
    return line.substr(n);
  };
  if (std::string v = value_of("content-range:"); !v.empty()) {
    // bytes START-END/TOTAL
    long long start = -1, end = -1, total = -1;
    if (std::sscanf(v.c_str(), " bytes %lld-%lld/%lld", &start, &end, &total) >= 2) {
      a->range_start = start;
      if (total >= 0) a->total = total;
    }
  } else if (std::string v = value_of("content-length:"); !v.empty() && a->range_start < 0) {
    a->total = std::atoll(v.c_str());
  }
  return size * count;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* a = static_cast<Attempt*>(user);
  const size_t bytes = size * count;
  if (!a->body_started) {
    a->body_started = true;
    curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &a->status);
    if (a->status == 200) {
      if (a->offset > 0) {
        // The whole file again: the server ignored the range; start over.
        if (::ftruncate(a->fd, 0) != 0) {
          a->write_error = "cannot truncate " + a->path + ": " + errno_text();
          return 0;
        }
        a->offset = 0;
      }
    } else if (a->status == 206) {
      if (a->range_start != static_cast<int64_t>(a->offset)) {
        a->write_error = "the server sent bytes from " + std::to_string(a->range_start) + ", not from " +
                         std::to_string(a->offset) + " as asked";
        return 0;
      }
    } else {
      a->refused = true;
      return 0;
    }
  }
  try {
    write_all(a->fd, a->path, data, bytes);
  } catch (const Error& e) {
    a->write_error = e.what();
    return 0;
  }
  a->written += bytes;
  return bytes;
}

uint64_t file_size_or_zero(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

std::string http_status_text(long status) {
  switch (status) {
    case 403: return "HTTP 403 Forbidden";
    case 404: return "HTTP 404 Not Found";
    case 410: return "HTTP 410 Gone";
    case 500: return "HTTP 500 Internal Server Error";
    case 502: return "HTTP 502 Bad Gateway";
    case 503: return "HTTP 503 Service Unavailable";
    default: return "HTTP " + std::to_string(status);
  }
}

}  // namespace

uint64_t download_resumable(const std::string& url, const std::string& part_path, const DownloadOptions& options) {
  init_curl_once();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    throw UsageError("cannot download " + url + ": only http:// and https:// URLs are fetched");
  }
  std::string last_error;
  int pause_ms = options.retry_pause_ms;
  for (int attempt = 1; attempt <= options.attempts; ++attempt) {
    if (attempt > 1 && pause_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      pause_ms *= 2;
    }
    ScopedFd fd(::open(part_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw file_error(part_path, "cannot open for writing: " + errno_text());
    Attempt a;
    a.fd = fd.get();
    a.path = part_path;
    a.offset = file_size_or_zero(part_path);
    std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
    if (!curl) throw Error("libcurl: cannot create a transfer");
    a.curl = curl.get();
    char error_buffer[CURL_ERROR_SIZE] = {};
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options.connect_timeout_s));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.stall_timeout_s));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "partita-datasets/0.1");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
    // CURLOPT_RANGE rather than RESUME_FROM: a server answering 200 is then not an error,
    // the whole file is written from the start.
    const std::string range = std::to_string(a.offset) + "-";
    if (a.offset > 0) {
      curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
      spdlog::info("resuming {} at byte {}", url, a.offset);
    } else {
      spdlog::info("downloading {}", url);
    }
    const CURLcode result = curl_easy_perform(c);
    if (!a.body_started) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
    fd.close_or_throw(part_path);
    const uint64_t have = file_size_or_zero(part_path);
    if (!a.write_error.empty()) throw Error("cannot download " + url + ": " + a.write_error);
    // 416 for a range starting at the end: the file is already whole (a checksum decides).
    if (a.status == 416 && a.offset > 0) return have;
    if (a.refused || (result == CURLE_OK && a.status >= 400)) {
      last_error = "the server answered " + http_status_text(a.status);
      if (a.status < 500) throw Error("cannot download " + url + ": " + last_error);
      continue;
    }
    if (result == CURLE_OK) {
      if (a.status != 200 && a.status != 206) {
        throw Error("cannot download " + url + ": unexpected " + http_status_text(a.status));
      }
      spdlog::info("downloaded {}: {} bytes", url, have);
      return have;
    }
    last_error = std::string(curl_easy_strerror(result)) + (error_buffer[0] ? std::string(" (") + error_buffer + ")" : "");
    const std::string of_total = a.total >= 0 ? " of " + std::to_string(a.total) : "";
    last_error += "; " + std::to_string(have) + of_total + " bytes received";
    if (attempt < options.attempts) {
      spdlog::warn("download of {} stopped: {}; resuming (attempt {} of {})", url, last_error, attempt + 1,
                   options.attempts);
    }
  }
  throw Error("cannot download " + url + ": " + last_error + " after " + std::to_string(options.attempts) +
              " attempt(s); what arrived is kept in " + part_path + " and the next download resumes from there");
}

}  // namespace partita::datasets
