#include "runtime/client.h"

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "runtime/address.h"
#include "runtime/errors.h"
#include "runtime/tls/caf_gateway.h"
#include "runtime/answered_request.h"

namespace partita::runtime {

PublishedActor connect_published(caf::actor_system& system, const Endpoint& endpoint,
                                 std::chrono::milliseconds timeout, const std::string& failure) {
  caf::scoped_actor self{system};
  PublishedActor result;
  std::optional<caf::error> failed;
  runtime::receive_reply(
      self, self->request(tls::middleman_actor(system), timeout, caf::connect_atom::value, endpoint.host, endpoint.port),
          [&](const caf::node_id&, caf::strong_actor_ptr& p, std::set<std::string>& ifs) {
            result.actor = std::move(p);
            result.interface = std::move(ifs);
          },
          [&](caf::error& err) { failed = std::move(err); });
  if (failed) throw Error(failure + " " + endpoint.to_string() + ": " + describe(system, *failed));
  if (!result.actor) throw Error(failure + " " + endpoint.to_string() + ": no actor is published there");
  return result;
}

DaemonConnection DaemonConnection::connect(caf::actor_system& system, const std::string& address,
                                           std::chrono::milliseconds timeout) {
  const Endpoint endpoint = parse_endpoint(address, "daemon address");
  if (endpoint.port == 0) throw UsageError("daemon address '" + address + "': port 0 cannot be connected to");
  // A node refuses a user's certificate after the handshake; said here, before, with why.
  tls::require_node_role("cannot connect to daemon " + address + " to run actors on it");
  PublishedActor published = connect_published(system, endpoint, timeout, "cannot connect to daemon");
  if (!system.assignable<host_actor>(published.interface)) {
    throw Error("cannot connect to daemon " + address +
                ": the actor published there is not a Partita host (another program, or another version)");
  }
  return DaemonConnection(system, address, caf::actor_cast<host_actor>(std::move(published.actor)));
}

Error DaemonConnection::failure(const std::string& doing, const caf::error& error) const {
  // Our own errors already name the daemon; CAF's (timeout, receiver down) need the address.
  if (error.category() == kErrorCategory) return Error(describe(*system_, error));
  return Error("daemon " + address_ + ": " + doing + " failed: " + describe(*system_, error));
}

void DaemonConnection::fail_if_lost() const {
  // CAF does not bounce a request sent to the proxy of an actor on a lost node: it would
  // wait out the whole timeout. Monitoring a dead actor answers at once, so check first.
  if (std::optional<Error> lost = wait_lost(std::chrono::milliseconds(0))) throw *lost;
}

HostInfo DaemonConnection::ping(std::chrono::milliseconds timeout) const {
  fail_if_lost();
  caf::scoped_actor self{*system_};
  HostInfo info;
  std::optional<caf::error> failed;
  runtime::receive_reply(self, self->request(host_, timeout, ping_atom::value),
          [&](pong_atom, std::string& name, std::string& version) {
            info.name = std::move(name);
            info.version = std::move(version);
          },
          [&](caf::error& err) { failed = std::move(err); });
  if (failed) throw failure("ping", *failed);
  return info;
}

caf::actor DaemonConnection::spawn(const std::string& type, const Settings& settings,
                                   std::chrono::milliseconds timeout, const caf::actor& owner) const {
  fail_if_lost();
  caf::scoped_actor self{*system_};
  caf::actor result;
  std::optional<caf::error> failed;
  runtime::receive_reply(self, self->request(host_, timeout, spawn_atom::value, type, settings, owner),
      [&](caf::actor& actor) { result = std::move(actor); },
               [&](caf::error& err) { failed = std::move(err); });
  if (failed) throw failure("spawn '" + type + "'", *failed);
  return result;
}

void DaemonConnection::request_shutdown() const { caf::anon_send(host_, shutdown_atom::value); }

std::optional<Error> DaemonConnection::wait_lost(std::chrono::milliseconds timeout) const {
  // A fresh actor that monitors nothing else, so the only down message it can get is the
  // host's (at once if the host is already gone).
  caf::scoped_actor self{*system_};
  self->monitor(host_);
  std::optional<Error> lost;
  self->receive(
      [&](caf::down_msg& msg) {
        const std::string why = msg.reason == caf::exit_reason::user_shutdown
                                    ? "it shut down"
                                    : describe(*system_, msg.reason);
        lost = Error("lost daemon " + address_ + ": " + why);
      },
      caf::after(timeout) >> [] {});
  self->demonitor(host_.address());  // monitors outlive the scoped actor otherwise: one per call
  return lost;
}

}  // namespace partita::runtime
