// A cluster CA in a temporary folder, for a process that starts its own daemons (the test
// suites, `partita bench`): made once, installed as the process's credentials, and named in
// PARTITA_TLS_DIR so that every `partita` child process started afterwards (daemons, CLI
// commands) loads the same identity. A P-256 CA and certificate take about a millisecond.
#pragma once

#include <filesystem>

namespace partita::runtime::tls {

class TemporaryCluster {
 public:
  // Creates the folder (under $TMPDIR or /tmp), sets PARTITA_TLS_DIR and the process's
  // credentials. Throws Error if the folder cannot be made.
  TemporaryCluster();
  // Removes the folder; the variable and the credentials stay (children may still run).
  ~TemporaryCluster();
  TemporaryCluster(const TemporaryCluster&) = delete;
  TemporaryCluster& operator=(const TemporaryCluster&) = delete;

  // The credentials folder (ca.crt, ca.key, node.crt, node.key).
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path root_, dir_;
};

}  // namespace partita::runtime::tls
