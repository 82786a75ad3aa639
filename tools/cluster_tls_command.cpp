// partita cluster init DIR: a cluster CA and this machine's first certificate.
// partita cluster cert NAME [--role node|user] [--dir DIR] [-o OUT]: a certificate for a node
// or a user (runtime/tls/roles.h; a user's by default: the least a forgotten flag can give).
// And install_credentials, which every networked command calls (runtime/tls/credentials.h).
#include <spdlog/spdlog.h>

#include <iostream>

#include "base/error.h"
#include "runtime/tls/certificates.h"
#include "runtime/tls/credentials.h"
#include "tools/commands.h"

namespace partita::cli {

void install_credentials(const GlobalOptions& global, bool in_process) {
  namespace tls = runtime::tls;
  if (global.insecure) {
    if (!global.tls_dir.empty()) throw UsageError("--insecure and --tls-dir contradict each other");
    spdlog::warn("--insecure: no TLS; plaintext on loopback addresses only, and any local user can connect");
    tls::set_process_credentials(nullptr);
    return;
  }
  if (in_process && global.tls_dir.empty()) {
    tls::set_process_credentials(tls::Credentials::ephemeral());
    return;
  }
  tls::set_process_credentials(tls::Credentials::load(tls::credentials_dir(global.tls_dir)));
}

void add_cluster_command(CLI::App& app, const GlobalOptions& global) {
  CLI::App* cmd = app.add_subcommand("cluster", "create a cluster's TLS certificate authority and certificates");
  cmd->require_subcommand(1);

  auto dir = std::make_shared<std::string>();
  auto node = std::make_shared<std::string>();
  CLI::App* init = cmd->add_subcommand("init", "create a cluster CA (ca.crt, ca.key) and a first certificate in DIR");
  init->add_option("DIR", *dir, "the folder to create (mode 0700); load it with --tls-dir or PARTITA_TLS_DIR")
      ->required();
  init->add_option("--name", *node, "the first certificate's name [default: node]");
  init->callback([dir, node] {
    runtime::tls::init_cluster(*dir, node->empty() ? "node" : *node);
    std::cout << "cluster CA and a first certificate in " << *dir << "\n";
  });

  auto name = std::make_shared<std::string>();
  auto ca_dir = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto role = std::make_shared<std::string>("user");
  CLI::App* cert = cmd->add_subcommand("cert", "issue a certificate for a node or a user, signed by the cluster CA");
  cert->add_option("NAME", *name, "the node's or user's name (letters, digits, '.', '_', '-')")->required();
  cert->add_option("--role", *role,
                   "node: a daemon, or a process that runs actors on the nodes (submit/run --daemons, Python "
                   "clients); user: submits, queries and stops jobs at the head only")
      ->capture_default_str();
  cert->add_option("--dir", *ca_dir, "the folder with the CA (ca.crt, ca.key) [default: as --tls-dir]");
  cert->add_option("-o,--output", *out, "the credentials folder to write [default: DIR/NAME]");
  cert->callback([name, ca_dir, out, role, &global] {
    const runtime::tls::MemberRole member_role = runtime::tls::parse_role(*role, "--role");
    const std::filesystem::path from =
        ca_dir->empty() ? runtime::tls::credentials_dir(global.tls_dir) : std::filesystem::path(*ca_dir);
    runtime::tls::check_identity_name(*name);
    const std::filesystem::path to = out->empty() ? from / *name : std::filesystem::path(*out);
    runtime::tls::issue_to_folder(from, *name, member_role, to);
    std::cout << runtime::tls::role_name(member_role) << " certificate for " << *name << " in " << to.string()
              << " (copy the folder to that node and point --tls-dir or PARTITA_TLS_DIR at it)\n";
  });
}

}  // namespace partita::cli
