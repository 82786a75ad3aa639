#include "bench/bench_cluster.h"

#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.h"
#include "base/subprocess.h"

namespace partita::bench {

std::vector<std::string> BenchCluster::command(const std::vector<std::string>& argv) const {
  return hosts != nullptr ? hosts->command(0, argv) : argv;
}

runtime::DaemonChild start_member(const NetnsCluster* hosts, int host, const std::vector<std::string>& args,
                                  const std::string& listen, const std::string& level) {
  std::vector<std::string> wrapper{self_executable(), "--log-level", level};
  if (hosts != nullptr) wrapper = hosts->command(host, wrapper);
  const std::string binary = wrapper.front();
  wrapper.erase(wrapper.begin());
  return runtime::start_daemon_child(binary, args, wrapper, std::chrono::seconds(30), listen);
}

runtime::DaemonChild& add_node(BenchCluster& c, int host, const std::string& name) {
  if (c.hosts == nullptr) host = 0;
  c.nodes.push_back(start_member(c.hosts, host, {"--join", c.head.address, "--name", name, "--cache", c.dir + "/cache-" + name},
                                 c.hosts != nullptr ? c.hosts->address(host) + ":0" : "127.0.0.1:0"));
  c.node_hosts.push_back(host);
  return c.nodes.back();
}

int alive_nodes(const BenchCluster& c, double timeout_seconds) {
  const ProcessResult r = run_process(
      c.command({self_executable(), "--log-level", "warn", "status", "--address", c.head.address, "--json"}), timeout_seconds);
  const nlohmann::json s = nlohmann::json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || !s.is_object()) return -1;
  int alive = 0;
  for (const auto& node : s["nodes"]) alive += node["state"] == "alive" ? 1 : 0;
  return alive;
}

std::unique_ptr<BenchCluster> start_cluster(const NetnsCluster* hosts, int n, const std::string& dir, int head_port,
                                            const std::string& head_level, std::chrono::seconds bound) {
  auto c = std::make_unique<BenchCluster>();
  c->hosts = hosts;
  c->dir = dir;
  c->runs = dir + "/runs";
  c->head = start_member(hosts, 0, {"--head", "--runs", c->runs},
                         hosts ? hosts->address(0) + ":" + std::to_string(head_port) : "127.0.0.1:0", head_level);
  for (int i = 0; i < n; ++i) add_node(*c, hosts != nullptr ? i % hosts->hosts() : 0, "node-" + std::to_string(i));
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const int alive = alive_nodes(*c, 60);
    if (alive == n) return c;
    if (std::chrono::steady_clock::now() > until) {
      throw Error(std::to_string(std::max(alive, 0)) + " of " + std::to_string(n) + " nodes alive at the head " +
                  c->head.address + " after " + std::to_string(bound.count()) + " s" +
                  (alive < 0 ? " (it does not answer `partita status`)" : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace partita::bench
