// Resumable HTTP(S) downloads (libcurl): redirects followed, a deadline on connecting and
// on every stall, and a download cut short continued where it stopped (a Range request)
// rather than begun again, in the same call or a later one.
#pragma once

#include <cstdint>
#include <string>

namespace partita::datasets {

struct DownloadOptions {
  int attempts = 3;            // tries per call, each resuming where the last one stopped
  int connect_timeout_s = 30;  // connecting (DNS, TCP, TLS) takes at most this long
  int stall_timeout_s = 60;    // an attempt with no byte received for this long fails
  int retry_pause_ms = 1000;   // between attempts, doubled after each
};

// Downloads `url` (http or https only) into `part_path`, appending to what the file already
// holds: a server that honours the Range request sends the rest, one that answers with the
// whole file (200) has it written from the start. Returns the file's size. Throws Error
// naming the URL and the cause: an HTTP error status (not retried, but for 5xx), the server
// unreachable, the transfer cut short on every attempt (what arrived stays in `part_path`
// for the next call to resume). The file's contents are not checked here (a checksum is).
uint64_t download_resumable(const std::string& url, const std::string& part_path, const DownloadOptions& options = {});

}  // namespace partita::datasets
