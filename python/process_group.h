// A data-parallel process group of Python processes (partita.distributed): one rank per
// process, whose buffers are summed through an allreduce group of Partita's own
// (runtime/collective): each process runs the allreduce member of its rank, in its
// embedded runtime's actor system, and sums its buffers in place (no copy).
//
// The ranks find each other through the cluster's head (runtime/cluster/head.h:
// rendezvous): every rank's process is connected to the head (partita.init(address=HEAD)),
// names the group, its rank and the world size, and gets every rank's member back once all
// have arrived. Rank 0 then wires the ring; every rank waits, through a first sum of one
// float, until the ring is up, so that a group that cannot form fails in the constructor,
// on every rank, with the reason. A member accepts its ring connections on this machine's
// address toward the head (the one the operating system routes to the head by), which is
// how the other ranks reach it.
//
// A group of size 1 needs neither a runtime nor a cluster: a sum over one rank leaves the
// buffer as it is.
#pragma once

#include <caf/actor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "python/embedded_runtime.h"

namespace partita::runtime {
class Allreduce;
}

namespace partita::python {

struct ProcessGroupOptions {
  std::string group = "default";  // the rendezvous name: the ranks of one job agree on it
  int rank = 0;
  int size = 1;
  // For the rendezvous and the ring's wiring together; and for each sum.
  std::chrono::milliseconds timeout{300000};
  std::chrono::milliseconds op_timeout{60000};
};

class ProcessGroup : public RuntimeUser {
 public:
  // Throws UsageError for a rank outside 0..size-1, a size below 1, a size over 1 in a
  // runtime that is not connected to a cluster; RuntimeClosed when the runtime is not
  // running (size over 1); Error naming the problem when the head refuses the rendezvous
  // (other ranks gave another size, the rank is taken), when the group is not complete or
  // its ring is not up within the timeout.
  explicit ProcessGroup(const ProcessGroupOptions& options);
  ~ProcessGroup() override;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return options_.rank; }
  int size() const { return options_.size; }
  const std::string& group() const { return options_.group; }
  // The member's host address ("" for a group of size 1).
  const std::string& host() const { return host_; }

  // Replaces data[0..n) with its element-wise sum over the ranks. Every rank must call it,
  // with the same n, in the same order (n = 0 sums nothing). Throws RuntimeClosed after destroy() or once the
  // runtime stopped; Error naming the rank that was lost, the deadline that passed, sizes
  // that differ between ranks (the group is then broken: destroy it and make another).
  void allreduce_sum(float* data, size_t n);

  // Leaves the group: a last sum with the other ranks (so that none is still reading the
  // result of its last real sum, its failure ignored), then stops this rank's member (the
  // other ranks' next sum fails, naming this rank). Every rank calls it at the end. Later
  // calls throw RuntimeClosed. Idempotent.
  void destroy();
  // Stops this rank's member at once, without the last sum (the destructor's way).
  void close();
  bool destroyed() const;

  void close_for_shutdown() override;

 private:
  ProcessGroupOptions options_;
  std::string host_;
  mutable std::mutex mutex_;  // held by a sum; close waits for it
  bool closed_ = false;
  bool attached_ = false;
  bool runtime_stopped_ = false;
  std::mutex member_mutex_;  // guards member_ alone: close stops it while a sum holds mutex_
  caf::actor member_;
  std::unique_ptr<runtime::Allreduce> client_;
};

// The address of this machine that packets toward `host` leave from (no packet is sent:
// a UDP socket's connect only picks the route). Throws Error naming `host` when it does not
// resolve or has no route.
std::string local_address_toward(const std::string& host);

}  // namespace partita::python
