#include "python/embedded_runtime.h"

#include <caf/all.hpp>

#include <utility>
#include <vector>

#include "actors/protocol.h"
#include "runtime/address.h"
#include "runtime/cluster/head_client.h"
#include "runtime/tls/credentials.h"
#include "training/job_actor_types.h"

namespace partita::python {

EmbeddedRuntime& EmbeddedRuntime::instance() {
  static EmbeddedRuntime* const runtime = new EmbeddedRuntime();
  return *runtime;
}

void EmbeddedRuntime::start(const RuntimeOptions& options) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (runtime_) throw UsageError("partita.init(): the runtime is running already in this process");
  if (options.threads < 0) throw UsageError("partita.init(): threads must be 0 (all cores) or more");
  runtime::ActorSystemOptions system;
  system.threads = options.threads;
  add_protocol_types(system);
  head_.clear();
  if (options.address.empty()) {
    runtime_ = runtime::Runtime::in_process(system, job_actor_types());
    return;
  }
  const runtime::Endpoint head = runtime::parse_endpoint(options.address, "partita.init(): address");
  // Before any actor system of this connection is made (runtime/tls/credentials.h).
  runtime::tls::set_process_credentials(runtime::tls::Credentials::load(runtime::tls::credentials_dir(options.tls_dir)));
  // Its loaders' partition and sampler actors run on the nodes and send it batches there: a
  // member of the cluster, whose certificate must be a node's (runtime/tls/roles.h).
  runtime::tls::require_node_role("partita.init(address='" + head.to_string() +
                                  "'): a Python cluster client runs its loaders' actors on the nodes");
  std::vector<std::string> nodes;
  {
    runtime::ActorSystemOptions client;
    client.threads = 1;
    client.networking = true;
    runtime::ActorSystem status_system(client);
    const runtime::ClusterStatus status = runtime::cluster_status(
        status_system, runtime::connect_head(status_system, head, options.timeout), head.to_string(), options.timeout);
    for (const runtime::NodeStatus& node : status.nodes) {
      if (node.alive) nodes.push_back(node.info.address);
    }
  }
  if (nodes.empty()) throw Error("partita.init(): the cluster of head " + head.to_string() + " has no live node");
  runtime_ = runtime::Runtime::connect(system, nodes, options.timeout);
  head_ = head.to_string();
}

void EmbeddedRuntime::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_) return;
  // Users first: each stops its actors and drops its clients of the actor system, which
  // the runtime's destruction below waits for.
  const std::set<RuntimeUser*> users = std::move(users_);
  users_.clear();
  for (RuntimeUser* user : users) user->close_for_shutdown();
  runtime_.reset();
  stopped_ = true;
}

bool EmbeddedRuntime::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return runtime_ != nullptr;
}

std::vector<std::string> EmbeddedRuntime::nodes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_) throw RuntimeClosed("partita.nodes(): the partita runtime is not running");
  std::vector<std::string> names;
  for (int n = 0; n < runtime_->num_nodes(); ++n) names.push_back(runtime_->node_name(n));
  return names;
}

std::string EmbeddedRuntime::head_address() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_) throw RuntimeClosed("the partita runtime is not running; call partita.init() first");
  return head_;
}

void EmbeddedRuntime::attach(RuntimeUser* user, const std::string& what,
                             const std::function<void(runtime::Runtime&)>& setup) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!runtime_) {
    throw RuntimeClosed(what + ": the partita runtime " +
                        (stopped_ ? std::string("was shut down (partita.shutdown()); call partita.init() again")
                                  : std::string("is not running; call partita.init() first")));
  }
  try {
    setup(*runtime_);
  } catch (...) {
    user->close_for_shutdown();
    throw;
  }
  users_.insert(user);
}

void EmbeddedRuntime::detach(RuntimeUser* user) {
  std::lock_guard<std::mutex> lock(mutex_);
  users_.erase(user);
}

caf::actor spawn_owner(caf::actor_system& system) {
  return system.spawn([]() -> caf::behavior { return {[](caf::ok_atom) {}}; });
}

}  // namespace partita::python
