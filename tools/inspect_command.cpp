// partita inspect DIR: the partition report, after checking the folder.
#include <spdlog/spdlog.h>

#include <iostream>

#include "partitioner/partition_format.h"
#include "partitioner/partition_report.h"
#include "tools/commands.h"

namespace partita::cli {

void add_inspect_command(CLI::App& app, const GlobalOptions&) {
  struct Options {
    std::string dir;
    bool json = false;
    bool verify = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("inspect", "show and check a partition folder");
  cmd->add_option("dir", o->dir, "partition folder")->required();
  cmd->add_flag("--json", o->json, "print the report as JSON");
  cmd->add_flag("--verify", o->verify,
                "also check every checksum and that each node and edge is stored exactly once");
  cmd->callback([o] {
    PartitionFolder folder(o->dir);
    if (o->verify) {
      folder.verify_all(Verify::kFull);
      spdlog::info("{}: all checksums match; every node and edge is stored exactly once", o->dir);
    } else {
      for (int p = 0; p < folder.meta().num_parts; ++p) folder.load_part(p, Verify::kStructure);
    }
    std::cout << (o->json ? format_report_json(folder.meta()) : format_report_table(folder.meta()));
  });
}

}  // namespace partita::cli
