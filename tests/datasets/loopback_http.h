// A small HTTP/1.1 file server on 127.0.0.1 for the download tests: it serves bytes the
// test gives it and can misbehave as real servers and networks do (a body cut short, a
// Range request ignored), and records the Range header of every request, so a test can
// check that a download resumed where it stopped. One request per connection
// (Connection: close). Every socket wait has a deadline; the destructor stops it. Below
// it, the archives such a server serves.
#pragma once

#include <atomic>
#include <map>
#include <utility>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace partita::testing {

class LoopbackHttpServer {
 public:
  struct File {
    std::string body;
    // The first `cut_times` responses stop after byte `cut_at` of the file (counted from
    // the file's start, whatever range was asked) while announcing the whole length.
    size_t cut_at = 0;
    int cut_times = 0;
    bool honour_range = true;  // false: every request gets 200 and the whole file
  };

  LoopbackHttpServer();  // listening on a free port
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  void serve(const std::string& path, File file);  // path: "/cora/cora.tgz"
  std::string base_url() const;                    // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  // The Range header of each request of `path` so far, in order ("" when none).
  std::vector<std::string> ranges_asked(const std::string& path) const;
  // Stops serving and closes the port (a server gone).
  void stop();

 private:
  void loop();
  void handle(int client);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, File> files_;
  std::map<std::string, std::vector<std::string>> ranges_;
};

// An archive of `entries` (name in the archive, bytes) as a publisher serves one: a
// gzipped tar, or a zip (libarchive's writer).
std::string archive_of(const std::vector<std::pair<std::string, std::string>>& entries, bool zip = false);

// cora.tgz as LINQS serves it, made of the project's copy: cora/cora.content, cora/cora.cites.
std::string cora_tgz();

}  // namespace partita::testing
