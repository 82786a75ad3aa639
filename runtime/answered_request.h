// A request, answered, leaves nothing behind.
//
// CAF 0.17 files the timeout of every request in the actor system's clock and does not
// take it out when the reply comes, for blocking and event-based actors alike: the entry
// (about 190 bytes) stays until the timeout would have fired. A thread that asks a sampler
// for every batch with a deadline of minutes grew its process by the entries of every
// batch of those minutes (a 500,000-request loop with a one-hour timeout: 5.7 -> 100 MB;
// with the timeout cancelled, flat), and a sampler's hop and feature requests did the same
// inside the actor. Every request made in a loop drops its timeout once answered:
// receive_reply for a blocking actor, forget_request_timeout in an event-based actor's
// reply and error handlers.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <utility>

namespace partita::runtime {

// Waits for the reply to `handle` (what self->request(...) returned) with `handlers`, as
// handle.receive(handlers...) does, then drops the request's timeout from the clock.
template <class Handle, class... Handlers>
void receive_reply(const caf::scoped_actor& self, Handle&& handle, Handlers&&... handlers) {
  const caf::message_id id = handle.id();
  std::forward<Handle>(handle).receive(std::forward<Handlers>(handlers)...);
  self->home_system().clock().cancel_request_timeout(self.ptr(), id);
}

// Drops the timeout of the request whose handle id() gave `id` (the reply's message id),
// from its reply or error handler. Harmless when the timeout has already fired.
template <class Self>
void forget_request_timeout(Self* self, caf::message_id id) {
  self->home_system().clock().cancel_request_timeout(self, id);
}

}  // namespace partita::runtime
