#include "datasets/loopback_http.h"

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "test_util.h"

namespace partita::testing {

namespace {

void send_all(int fd, const char* data, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away: nothing more to send
    data += n;
    bytes -= static_cast<size_t>(n);
  }
}

std::string header_value(const std::string& request, const std::string& name) {
  std::istringstream lines(request);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > name.size() && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0 &&
        line[name.size()] == ':') {
      std::string v = line.substr(name.size() + 1);
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      return v;
    }
  }
  return "";
}

}  // namespace

LoopbackHttpServer::LoopbackHttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("cannot listen on loopback: " + std::string(std::strerror(errno)));
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { loop(); });
}

LoopbackHttpServer::~LoopbackHttpServer() { stop(); }

void LoopbackHttpServer::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  ::close(listen_fd_);
}

void LoopbackHttpServer::serve(const std::string& path, File file) {
  std::lock_guard<std::mutex> lock(mutex_);
  files_[path] = std::move(file);
}

std::string LoopbackHttpServer::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<std::string> LoopbackHttpServer::ranges_asked(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranges_.find(path);
  return it == ranges_.end() ? std::vector<std::string>{} : it->second;
}

void LoopbackHttpServer::loop() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    timeval timeout{5, 0};  // a client that sends no request within 5 s is dropped
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    handle(client);
    ::close(client);
  }
}

void LoopbackHttpServer::handle(int client) {
  std::string request;
  char buffer[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 65536) {
    const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<size_t>(n));
  }
  std::istringstream first(request.substr(0, request.find("\r\n")));
  std::string method, path;
  first >> method >> path;
  const std::string range = header_value(request, "Range");
  File file;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_[path].push_back(range);
    auto it = files_.find(path);
    if (it != files_.end()) {
      found = true;
      if (it->second.cut_times > 0) {
        file = it->second;
        --it->second.cut_times;
      } else {
        file = it->second;
        file.cut_times = 0;
      }
    }
  }
  if (!found) {
    const std::string reply = "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found";
    send_all(client, reply.data(), reply.size());
    return;
  }
  const size_t size = file.body.size();
  size_t start = 0;
  std::string head;
  if (!range.empty() && file.honour_range) {
    start = std::stoull(range.substr(range.find('=') + 1));
    if (start >= size) {
      head = "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */" + std::to_string(size) +
             "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      send_all(client, head.data(), head.size());
      return;
    }
    head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes " + std::to_string(start) + "-" +
           std::to_string(size - 1) + "/" + std::to_string(size) + "\r\n";
  } else {
    head = "HTTP/1.1 200 OK\r\n";
  }
  head += "Content-Length: " + std::to_string(size - start) + "\r\nConnection: close\r\n\r\n";
  send_all(client, head.data(), head.size());
  const size_t end = file.cut_times > 0 ? std::max(start, std::min(file.cut_at, size)) : size;
  send_all(client, file.body.data() + start, end - start);
}

std::string archive_of(const std::vector<std::pair<std::string, std::string>>& entries, bool zip) {
  TempDir dir;
  const std::string path = dir / "archive";
  struct archive* a = archive_write_new();
  if (zip) {
    archive_write_set_format_zip(a);
  } else {
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
  }
  if (archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) throw std::runtime_error(archive_error_string(a));
  for (const auto& [name, bytes] : entries) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, bytes.data(), bytes.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return read_text(path);
}

std::string cora_tgz() {
  return archive_of({{"cora/cora.content", read_text(dataset_path("cora/cora.content"))},
                     {"cora/cora.cites", read_text(dataset_path("cora/cora.cites"))}});
}

}  // namespace partita::testing
