#include "runtime/tls/temporary_cluster.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"

namespace partita::runtime::tls {

TemporaryCluster::TemporaryCluster() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/partita-tls-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw Error("cannot create a folder for a temporary cluster CA: " + std::string(std::strerror(errno)));
  }
  root_ = pattern;
  dir_ = root_ / "tls";
  init_cluster(dir_, "test-node");
  ::setenv("PARTITA_TLS_DIR", dir_.c_str(), 1);
  set_process_credentials(Credentials::load(dir_));
}

TemporaryCluster::~TemporaryCluster() {
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

}  // namespace partita::runtime::tls
