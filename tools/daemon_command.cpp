// partita daemon --listen HOST:PORT [--name NAME]: the node daemon (see runtime/daemon.h).
#include <iostream>

#include "actors/protocol.h"
#include "runtime/daemon.h"
#include "tools/commands.h"
#include "training/job_types.h"

namespace partita::cli {

void add_daemon_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string listen = "127.0.0.1:0";
    std::string name;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("daemon", "run the node daemon that hosts actors for distributed jobs");
  cmd->add_option("--listen", o->listen,
                  "HOST:PORT to accept connections on; port 0 picks a free port (printed when ready)")
      ->capture_default_str();
  cmd->add_option("--name", o->name, "name reported to clients and in logs (default: the host name)");
  cmd->callback([o, &global] {
    runtime::DaemonOptions options;
    options.listen = o->listen;
    options.name = o->name;
    options.system.threads = global.threads;
    add_protocol_types(options.system);
    runtime::run_daemon(options, job_actor_types(), [](const runtime::Endpoint& bound, const std::string&) {
      // The one line on stdout, for scripts and tests to learn the port; logs go to stderr.
      std::cout << "partita daemon listening on " << bound.to_string() << std::endl;
    });
  });
}

}  // namespace partita::cli
