#include "python/sampler_session.h"

#include <caf/all.hpp>

#include <utility>

#include "base/error.h"
#include "runtime/address.h"

namespace partita::python {

namespace {

std::string fanout_text(const std::vector<int>& fanouts) {
  std::string text;
  for (int f : fanouts) text += (text.empty() ? "" : ",") + std::to_string(f);
  return text;
}

}  // namespace

SamplerSession::SamplerSession(const GraphHandle& graph, int part, const SessionOptions& options, std::string name)
    : name_(std::move(name)) {
  const int parts = graph.meta().num_parts;
  if (part < 0 || part >= parts) {
    throw UsageError(name_ + ": partition " + std::to_string(part) + " is not one of the graph's " +
                     std::to_string(parts));
  }
  if (options.fanouts.empty()) throw UsageError(name_ + ": num_neighbors is empty: give one fanout per hop");
  // The settings the job driver gives them (training/job_driver.cpp).
  const runtime::Settings common{{"dir", graph.dir()},
                                 {"fanouts", fanout_text(options.fanouts)},
                                 {"replace", options.replace ? "true" : "false"},
                                 {"disjoint", options.disjoint ? "true" : "false"},
                                 {"features", options.features},
                                 {"temporal", options.temporal},
                                 {"temporal_strategy", options.temporal_strategy}};
  EmbeddedRuntime::instance().attach(this, name_, [&](runtime::Runtime& rt) {
    // Each handle is kept as soon as it exists, so that a failure further on stops it.
    const auto keep = [this](caf::actor a) {
      std::lock_guard<std::mutex> actors(actors_mutex_);
      actors_.push_back(a);
      return a;
    };
    {
      std::lock_guard<std::mutex> actors(actors_mutex_);
      owner_ = spawn_owner(rt.system());
    }
    // As a job places them: partition p and its sampler on node p mod D (one node in-process).
    const auto node_of = [&rt](int p) { return p % rt.num_nodes(); };
    runtime::Settings sampler = common;
    sampler["part"] = std::to_string(part);
    sampler["labels"] = graph.meta().has_labels ? "true" : "false";
    sampler["prefetch"] = std::to_string(options.prefetch);
    sampler["deadline_ms"] = std::to_string(options.deadline.count());
    sampler_actor handle;
    std::vector<caf::actor> partitions(static_cast<size_t>(parts));
    try {
      handle = caf::actor_cast<sampler_actor>(keep(rt.spawn(node_of(part), "sampler", sampler, owner_)));
      // The sampler reads its own part directly; the others through their actors.
      for (int p = 0; p < parts; ++p) {
        if (p == part) continue;
        runtime::Settings settings = common;
        settings["part"] = std::to_string(p);
        // Its feature channel listens where samplers on the other nodes reach its node.
        if (rt.is_distributed()) {
          settings["channel_host"] = runtime::parse_endpoint(rt.node_name(node_of(p)), "node").host;
        }
        partitions[p] = keep(rt.spawn(node_of(p), "partition", settings, owner_));
      }
    } catch (const UsageError& e) {
      throw UsageError(name_ + ": " + e.what());
    } catch (const Error& e) {
      throw Error(name_ + ": " + e.what());
    }
    try {
      // On a cluster, the sampler's node connects to the others directly (protocol.h).
      std::vector<std::string> addresses;
      if (rt.is_distributed()) {
        for (int p = 0; p < parts; ++p) addresses.push_back(rt.node_name(node_of(p)));
      }
      wire_sampler(rt.system(), handle, partitions, addresses, options.deadline);
    } catch (const Error& e) {
      throw Error(name_ + ": the sampler's set-up failed: " + e.what());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    client_ = std::make_unique<SamplerClient>(rt.system(), handle, options.deadline, name_);
  });
}

SamplerSession::~SamplerSession() {
  EmbeddedRuntime::instance().detach(this);
  close();
}

void SamplerSession::check_open() const {
  std::lock_guard<std::mutex> actors(actors_mutex_);
  if (closed_.empty()) return;
  if (runtime_gone_) throw RuntimeClosed(closed_);
  throw Error(closed_);
}

template <class Ask>
auto SamplerSession::ask(Ask request) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_open();
  try {
    return request();
  } catch (const Error&) {
    // Released by a close while waiting: say so, rather than how the sampler stopped.
    check_open();
    throw;
  }
}

int64_t SamplerSession::start_split_epoch(const std::string& split, uint64_t seed, uint64_t epoch,
                                          int64_t batch_size, bool shuffle) {
  return ask([&] { return client_->start_epoch(split, seed, epoch, batch_size, shuffle); });
}

int64_t SamplerSession::start_plan(const EpochPlan& plan) {
  return ask([&] { return client_->start_link_plan(plan); });
}

MiniBatch SamplerSession::next(SampleKey& key) {
  return ask([&] {
    MiniBatch batch = client_->next(key);
    recycler_ = client_->recycler();
    return batch;
  });
}

std::function<void(std::vector<float>&&)> SamplerSession::recycler() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recycler_ ? recycler_ : [](std::vector<float>&&) {};
}

void SamplerSession::close() { close_with(name_ + ": closed", false); }

void SamplerSession::close_for_shutdown() {
  close_with(name_ + ": the partita runtime was shut down (partita.shutdown()); after partita.init() make a new one",
             true);
}

void SamplerSession::close_with(const std::string& why, bool runtime_gone) {
  {
    // First, without waiting: a consumer blocked in next() holds mutex_ until its sampler
    // answers, which it does at once when it exits; the consumer then reads why.
    std::lock_guard<std::mutex> actors(actors_mutex_);
    if (closed_.empty()) {
      closed_ = why;
      runtime_gone_ = runtime_gone;
    }
    for (const caf::actor& a : actors_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    if (owner_) caf::anon_send_exit(owner_, caf::exit_reason::user_shutdown);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  client_.reset();
  std::lock_guard<std::mutex> actors(actors_mutex_);
  actors_.clear();
  owner_ = caf::actor();
}

}  // namespace partita::python
