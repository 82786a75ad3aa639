#include "runtime/staging/stage_server.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/file_util.h"
#include "runtime/transport/wire_format.h"

namespace partita::runtime {

namespace {

// One node's session: its files, of which the one asked for last is kept open (a node
// fetches them in order). Keeping every file open exhausted the driver's descriptors: it
// serves all nodes at once, and a job whose every node reads every part has sessions of
// (nodes x parts x files per part) files.
struct Session {
  std::shared_ptr<const std::vector<ServedUnit>> units;
  std::vector<std::string> paths;
  size_t open_file = 0;           // the index of `fd`'s file
  std::shared_ptr<ScopedFd> fd;   // shared with the reply's fill, which may outlive a switch
};

void refuse(ChannelReply& reply, const std::string& why) {
  reply.head.assign(1, wire::kStageReplyRefused);
  reply.head.insert(reply.head.end(), why.begin(), why.end());
  reply.head_length = reply.head.size();
  reply.fill = nullptr;
  reply.body_bytes = 0;
}

void answer(Session& s, Span<const char> request, ChannelReply& reply) {
  wire::StageRequest r;
  if (!wire::decode_stage_request(reinterpret_cast<const unsigned char*>(request.data()), request.size(), r)) {
    return refuse(reply, "not a staging request (" + std::to_string(request.size()) + " bytes)");
  }
  if (r.file >= s.paths.size()) {
    return refuse(reply, "no file " + std::to_string(r.file) + " (" + std::to_string(s.paths.size()) + " are offered)");
  }
  if (r.bytes > wire::kMaxStageChunkBytes) {
    return refuse(reply, "a range of " + std::to_string(r.bytes) + " bytes exceeds the limit of " +
                             std::to_string(wire::kMaxStageChunkBytes));
  }
  const std::string& path = s.paths[r.file];
  try {
    if (!s.fd || s.open_file != r.file) {
      s.fd.reset();  // the previous file's descriptor first
      const int opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (opened < 0) throw file_error(path, "cannot open: " + errno_text());
      s.fd = std::make_shared<ScopedFd>(opened);
      s.open_file = r.file;
    }
    const int fd = s.fd->get();
    const uint64_t size = regular_file_size(fd, path);
    if (r.offset > size || r.bytes > size - r.offset) {
      return refuse(reply, "the range [" + std::to_string(r.offset) + ", +" + std::to_string(r.bytes) + ") is past the end of " +
                               path + " (" + std::to_string(size) + " bytes)");
    }
    reply.head.assign(1, wire::kStageReplyOk);
    reply.head_length = 1;
    reply.body_bytes = r.bytes;
    reply.body_unit = 1;
    reply.fill = [keep = s.fd, fd, path, start = r.offset](char* piece, uint64_t offset, uint64_t bytes) {
      uint64_t done = 0;
      while (done < bytes) {
        const ssize_t n = ::pread(fd, piece + done, bytes - done, static_cast<off_t>(start + offset + done));
        if (n <= 0) {
          // fill may not throw: the node's checksum names the file.
          spdlog::error("staging: cannot read {}: {}", path, n == 0 ? "it shrank" : errno_text());
          std::memset(piece + done, 0, bytes - done);
          return;
        }
        done += static_cast<uint64_t>(n);
      }
    };
  } catch (const std::exception& e) {
    refuse(reply, e.what());
  }
}

}  // namespace

StageServer::StageServer(const std::string& host, std::chrono::milliseconds deadline)
    : server_(
          host, kServerId,
          [this] {
            auto session = std::make_shared<Session>();
            session->units = next_;
            for (const ServedUnit& u : *session->units) {
              for (const StagedFile& f : u.unit.files) session->paths.push_back(u.dir + "/" + f.name);
            }
            ChannelService service;
            service.answer = [session](Span<const char> request, ChannelReply& reply) { answer(*session, request, reply); };
            service.refuse = [](const std::string& why, ChannelReply& reply) { refuse(reply, why); };
            return service;
          },
          deadline, "staging") {}

ChannelOffer StageServer::open(std::vector<ServedUnit> units) {
  std::lock_guard<std::mutex> lock(open_mutex_);  // next_ is read by the make_service of this open
  next_ = std::make_shared<const std::vector<ServedUnit>>(std::move(units));
  return server_.open();
}

}  // namespace partita::runtime
