// partita: the commands that never load libtorch, so that they start in milliseconds; every
// other command runs in partita-full (tools/main.cpp). None of them reaches the training
// stack, so nothing of it is linked (tools/CMakeLists.txt) and libtorch is not among the
// binary's shared libraries (CliTest.CommandsThatNeverTrainStartWithoutLibtorch).
#include <unistd.h>

#include "base/subprocess.h"
#include "tools/commands.h"

namespace partita::cli {

void add_commands(CLI::App& app, const GlobalOptions& global) {
  add_generate_command(app, global);
  add_partition_command(app, global);
  add_inspect_command(app, global);
  add_status_command(app, global);
  add_stop_command(app, global);
  add_down_command(app, global);
  add_cluster_command(app, global);
  add_datasets_command(app, global);
}

std::string binary_for_other_commands() {
  const std::string self = self_executable();
  const std::string dir = self.substr(0, self.find_last_of('/'));
  const std::string beside = dir + "/partita-full";  // a build tree
  if (::access(beside.c_str(), X_OK) == 0) return beside;
  return dir + "/../libexec/partita/partita-full";  // installed (cmake/PartitaInstall.cmake)
}

}  // namespace partita::cli
