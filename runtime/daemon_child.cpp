#include "runtime/daemon_child.h"

#include <regex>
#include <thread>

#include "base/error.h"

namespace partita::runtime {

DaemonChild start_daemon_child(const std::string& binary, const std::vector<std::string>& daemon_args,
                               const std::vector<std::string>& global_args, std::chrono::milliseconds timeout,
                               const std::string& listen) {
  using std::chrono::milliseconds;
  std::vector<std::string> argv{binary};
  argv.insert(argv.end(), global_args.begin(), global_args.end());
  for (const std::string& arg : {std::string("daemon"), std::string("--listen"), listen}) argv.push_back(arg);
  argv.insert(argv.end(), daemon_args.begin(), daemon_args.end());
  DaemonChild child;
  child.process = std::make_unique<ChildProcess>(argv);
  const std::regex ready(R"(partita daemon listening on (\S+:[0-9]+)\n)");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = milliseconds(1);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string out = child.process->output_so_far();
    if (std::regex_search(out, match, ready)) {
      child.address = match[1];
      return child;
    }
    if (!child.process->running()) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, milliseconds(50));
  }
  throw Error("daemon child " + binary + " did not get ready: " + child.process->errors_so_far());
}

}  // namespace partita::runtime
