// partita: partition graphs and train GNNs on them. See docs/cli.md for every command.
//
// Exit codes: 0 success, 1 runtime error (bad file, corrupt data, I/O), 2 usage error.
// Errors are one line on stderr that names the problem and where it is.
//
// Two binaries share this main. Loading libtorch costs a process ~1 s at start-up (some 300
// shared libraries and its operator registry; a binary without it starts in ~0.02 s), which
// the commands that never train (partition, generate, inspect, status, stop, down, cluster,
// datasets) need not pay: `partita` has only those (tools/light_commands.cpp) and hands every other
// command, and help, to `partita-full` (tools/all_commands.cpp: every command), replacing
// itself with it (execv: same process id, same arguments).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/error.h"
#include "base/logging.h"
#include "tools/commands.h"

namespace {

constexpr int kExitRuntimeError = 1;
constexpr int kExitUsageError = 2;

// CLI11's messages can span lines; the contract is one line per error.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// Replaces this process with `binary`, same arguments; returns only to report a failure.
[[noreturn]] void forward(const std::string& binary, char** argv) {
  ::execv(binary.c_str(), argv);
  throw partita::Error("cannot run " + binary + " (every command but partition, generate, inspect, status, stop, "
                       "down, cluster and datasets runs there): " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace partita;
  CLI::App app{"Partita: distributed GNN training on partitioned graphs", "partita"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "partita 0.1.0");
  cli::GlobalOptions global;
  app.add_option("--log-level", global.log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app.add_option("--threads", global.threads, "worker threads of the parallel kernels (0 = all cores)")
      ->check(cli::in_range(0, cli::kMaxThreads))
      ->capture_default_str();
  app.add_option("--tls-dir", global.tls_dir,
                 "TLS credentials folder (ca.crt, node.crt, node.key) [default: $PARTITA_TLS_DIR, else ~/.partita/tls]");
  app.add_flag("--insecure", global.insecure,
               "no TLS: plaintext on loopback addresses only (a warning on every start)");
  app.parse_complete_callback([&] { init_logging(global.log_level); });
  // The global options anywhere on the line (`run job.yaml --threads 2`): a subcommand hands
  // the options it does not know to its parent. Inherited by the subcommands added below.
  app.fallthrough();
  cli::add_commands(app, global);
  cli::check_number_syntax(app);

  try {
    // The command: the first argument that is neither an option nor an option's value.
    bool found = false;
    for (int i = 1; i < argc && !found; ++i) {
      std::string arg = argv[i];
      if (arg.rfind("-", 0) == 0) {
        if (arg.find('=') == std::string::npos && (arg == "--log-level" || arg == "--threads" || arg == "--tls-dir")) ++i;
        continue;
      }
      found = true;
      if (app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == arg; }).empty()) {
        const std::string other = cli::binary_for_other_commands();
        if (!other.empty()) forward(other, argv);
        // CLI11 reports a mistyped command as "a subcommand is required"; name it instead.
        throw UsageError("unknown command '" + arg + "' (see partita --help)");
      }
    }
    // No command (help, version, or nothing): partita-full answers for every command.
    if (const std::string other = found ? "" : cli::binary_for_other_commands(); !other.empty()) forward(other, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "partita: error: " << one_line(e.what()) << " (see partita --help)\n";
    return kExitUsageError;
  } catch (const UsageError& e) {
    std::cerr << "partita: error: " << one_line(e.what()) << "\n";
    return kExitUsageError;
  } catch (const Error& e) {
    std::cerr << "partita: error: " << one_line(e.what()) << "\n";
    return kExitRuntimeError;
  } catch (const std::bad_alloc&) {
    std::cerr << "partita: error: out of memory\n";
    return kExitRuntimeError;
  } catch (const std::exception& e) {
    std::cerr << "partita: error: " << one_line(e.what()) << "\n";
    return kExitRuntimeError;
  }
  return 0;
}
