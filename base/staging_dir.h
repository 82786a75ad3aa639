// Atomic folder output: everything is written into a temporary sibling folder which is
// renamed into place only when complete, so an interrupted run never leaves a folder that
// looks valid. The temporary folder is removed if commit() is never reached.
#pragma once

#include <string>

namespace partita {

class StagingDir {
 public:
  // Throws Error if `target`'s parent folder is missing or not writable, or if `target`
  // exists and `overwrite` is false.
  StagingDir(const std::string& target, bool overwrite);
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  // The constructor's checks alone, to fail before hours of work rather than after.
  static void check_target(const std::string& target, bool overwrite);

  const std::string& path() const { return path_; }

  // Renames the staging folder to the target, replacing an existing target if allowed.
  void commit();

 private:
  std::string target_;
  bool overwrite_;
  std::string path_;
  bool committed_ = false;
};

}  // namespace partita
