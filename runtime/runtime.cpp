#include "runtime/runtime.h"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <set>
#include <thread>

#include "runtime/address.h"
#include "runtime/errors.h"
#include "runtime/answered_request.h"

namespace partita::runtime {

namespace {

constexpr std::chrono::milliseconds kInProcessTimeout{30000};

}  // namespace

Runtime::Runtime(const ActorSystemOptions& options, std::chrono::milliseconds timeout)
    : system_(std::make_unique<ActorSystem>(options)), timeout_(timeout) {
  // Does nothing but exist: the nodes watch it (host.h) and stop its actors when it goes.
  owner_ = system_->get().spawn([]() -> caf::behavior { return {[](caf::ok_atom) {}}; });
}

std::unique_ptr<Runtime> Runtime::in_process(const ActorSystemOptions& options, ActorTypeRegistry registry) {
  ActorSystemOptions local = options;
  local.networking = false;  // nothing leaves the process
  std::unique_ptr<Runtime> runtime(new Runtime(local, kInProcessTimeout));
  // The same host actor a daemon publishes: spawns go through one code path either way,
  // and stopping it stops every actor it spawned.
  runtime->local_host_ = spawn_host(runtime->system(), HostInfo{"in-process", partita_version()}, std::move(registry));
  return runtime;
}

std::unique_ptr<Runtime> Runtime::connect(ActorSystemOptions options, const std::vector<std::string>& daemons,
                                          std::chrono::milliseconds timeout) {
  if (daemons.empty()) throw UsageError("no daemon addresses given");
  std::set<std::string> seen;
  for (const std::string& address : daemons) {
    const std::string canonical = parse_endpoint(address, "daemon address").to_string();
    if (!seen.insert(canonical).second) throw UsageError("daemon " + address + " is listed twice");
  }
  options.networking = true;
  std::unique_ptr<Runtime> runtime(new Runtime(options, timeout));
  for (const std::string& address : daemons) {
    runtime->daemons_.push_back(DaemonConnection::connect(runtime->system(), address, timeout));
    const HostInfo info = runtime->daemons_.back().ping(timeout);
    if (info.version != partita_version()) {
      throw Error("daemon " + address + " runs Partita " + info.version + ", this is " + partita_version());
    }
    spdlog::info("connected to daemon {} ({})", address, info.name);
  }
  return runtime;
}

Runtime::~Runtime() {
  for (const auto& [actor, node] : spawned_) caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(owner_, caf::exit_reason::user_shutdown);
  if (local_host_) caf::anon_send(local_host_, shutdown_atom::value);
  // Our actor system's destructor waits for the in-process actors; daemons keep running.
}

std::string Runtime::node_name(int node) const {
  if (!is_distributed()) return "in-process";
  if (node < 0 || node >= num_nodes()) return "node " + std::to_string(node);
  return daemons_[node].address();
}

caf::actor Runtime::spawn(int node, const std::string& type, const Settings& settings, const caf::actor& owner) {
  if (node < 0 || node >= num_nodes()) {
    throw UsageError("node " + std::to_string(node) + " does not exist (" + std::to_string(num_nodes()) + " node(s))");
  }
  caf::actor actor;
  if (is_distributed()) {
    actor = daemons_[node].spawn(type, settings, timeout_, owner ? owner : owner_);
  } else {
    caf::scoped_actor self{system()};
    std::optional<caf::error> failed;
    runtime::receive_reply(
        self, self->request(local_host_, timeout_, spawn_atom::value, type, settings, owner ? owner : owner_),
        [&](caf::actor& a) { actor = std::move(a); }, [&](caf::error& err) { failed = std::move(err); });
    if (failed) throw Error(describe(system(), *failed));
  }
  spawned_.emplace_back(actor, node);
  return actor;
}

int Runtime::node_of(const caf::actor_addr& actor) const {
  for (const auto& [a, node] : spawned_) {
    if (a.address() == actor) return node;
  }
  return -1;
}

std::optional<Error> Runtime::lost_node_within(std::chrono::milliseconds grace) const {
  const auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    if (std::optional<Error> lost = lost_node()) return lost;
    if (!is_distributed() || std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::optional<Error> Runtime::lost_node() const {
  for (const DaemonConnection& daemon : daemons_) {
    if (std::optional<Error> lost = daemon.wait_lost(std::chrono::milliseconds(0))) return lost;
  }
  return std::nullopt;
}

std::vector<int> Runtime::lost_nodes() const {
  std::vector<int> lost;
  for (size_t node = 0; node < daemons_.size(); ++node) {
    if (daemons_[node].wait_lost(std::chrono::milliseconds(0))) lost.push_back(static_cast<int>(node));
  }
  return lost;
}

}  // namespace partita::runtime
