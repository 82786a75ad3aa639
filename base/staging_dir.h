// Atomic folder output: everything is written into a temporary sibling folder which is
// renamed into place only when complete, so an interrupted run never leaves a folder that
// looks valid. The temporary folder is removed if commit() is never reached, and staging
// folders left by killed runs are removed by the next run for the same target.
#pragma once

#include <string>

namespace partita {

class StagingDir {
 public:
  // `marker` names a file that every output of this kind contains (e.g. "META.json"): an
  // existing target is replaced only if `overwrite` is set and it is empty or holds the
  // marker, so a mistyped --output never deletes an unrelated folder. Throws Error when the
  // parent folder is missing or not writable, or the target may not be replaced.
  StagingDir(const std::string& target, bool overwrite, const std::string& marker);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  // The constructor's checks alone, to fail before hours of work rather than after.
  static void check_target(const std::string& target, bool overwrite, const std::string& marker);

  const std::string& path() const { return path_; }

  // Renames the staging folder to the target, replacing an existing target if allowed. On
  // failure the previous target is restored.
  void commit();

 private:
  std::string target_;
  bool overwrite_;
  std::string marker_;
  std::string path_;
  bool committed_ = false;
};

}  // namespace partita
