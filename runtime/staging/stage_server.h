// The serving end of data staging: whoever holds a job's data (its driver) serves the
// files of some folders to the nodes that will host them, each node over a request channel
// of its own (runtime/transport/request_channel.h: the bulk transport, TLS when the process
// has credentials). A node asks for files by their index in the manifest it was sent, in
// ranges of at most wire::kMaxStageChunkBytes (runtime/transport/wire_format.h, section 4),
// and checks every file against the manifest (runtime/staging/stage_cache.h): the server
// trusts no request and checks nothing it sends.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/staging/folder_manifest.h"
#include "runtime/transport/request_channel.h"

namespace partita::runtime {

// One folder offered for staging: where it is here, and its description.
struct ServedUnit {
  std::string dir;
  StagedUnit unit;
};

class StageServer {
 public:
  // Serves on `host` (an address of this machine the nodes reach). `deadline` bounds a
  // node's arrival and each reply (runtime/transport/request_channel.h).
  StageServer(const std::string& host, std::chrono::milliseconds deadline);
  StageServer(const StageServer&) = delete;
  StageServer& operator=(const StageServer&) = delete;

  // A session for one node, serving exactly `units` (file i of the request: the i-th file
  // of the units in order). Throws Error when it cannot listen.
  ChannelOffer open(std::vector<ServedUnit> units);
  // The id the server says hello with (RequestClient::open's `server`).
  static constexpr uint32_t kServerId = 0x57A6E;

 private:
  // The session opened next serves these (RequestServer makes a service per session).
  std::mutex open_mutex_;
  std::shared_ptr<const std::vector<ServedUnit>> next_;
  RequestServer server_;
};

}  // namespace partita::runtime
