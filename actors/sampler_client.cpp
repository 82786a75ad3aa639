#include "actors/sampler_client.h"

#include <caf/all.hpp>

#include <utility>

#include "base/error.h"
#include "messages/codec.h"
#include "runtime/answered_request.h"

namespace partita {

SamplerClient::SamplerClient(caf::actor_system& system, sampler_actor sampler, std::chrono::milliseconds deadline,
                             std::string name)
    : system_(system), sampler_(std::move(sampler)), deadline_(deadline), name_(std::move(name)), self_(system) {
  if (!sampler_) throw UsageError(name_ + ": no sampler actor");
}

namespace {

std::string transport_failure(caf::actor_system& system, const caf::error& e, std::chrono::milliseconds deadline) {
  return e == caf::sec::request_timeout ? "no answer within " + std::to_string(deadline.count()) + " ms"
                                        : system.render(e);
}

}  // namespace

void wire_sampler(caf::actor_system& system, const sampler_actor& sampler, const std::vector<caf::actor>& partitions,
                  const std::vector<std::string>& addresses, std::chrono::milliseconds deadline) {
  caf::scoped_actor self{system};
  std::string failure;
  runtime::receive_reply(self, self->request(sampler, deadline, partitions_atom::value, partitions, addresses),
          [&](Encoded& reply) {
            try {
              decode_sampler_ack(Span<const char>(reply.bytes));
            } catch (const Error& e) {
              failure = e.what();
            }
          },
          [&](caf::error& e) { failure = transport_failure(system, e, deadline); });
  if (!failure.empty()) throw Error(failure);
}

template <class What, class... Ts>
int64_t SamplerClient::ask_for_epoch(const What& what, Ts&&... request) {
  std::string failure;
  int64_t batches = 0;
  runtime::receive_reply(self_, self_->request(sampler_, deadline_, std::forward<Ts>(request)...),
          [&](Encoded& reply) {
            try {
              batches = decode_sampler_ack(Span<const char>(reply.bytes));
            } catch (const Error& e) {
              failure = e.what();
            }
          },
          [&](caf::error& e) { failure = transport_failure(system_, e, deadline_); });
  if (!failure.empty()) throw Error(name_ + ": " + what() + ": " + failure);
  return batches;
}

int64_t SamplerClient::start_link_plan(const EpochPlan& plan) {
  Encoded message;
  Encoder().link_plan(plan, message.bytes);
  return ask_for_epoch([&] { return "link plan of epoch " + std::to_string(plan.epoch); }, link_plan_atom::value,
                       std::move(message));
}

int64_t SamplerClient::start_epoch(const std::string& split, uint64_t plan_seed, uint64_t epoch, int64_t batch_size,
                                   bool shuffle) {
  return ask_for_epoch([&] { return "epoch " + std::to_string(epoch) + " of '" + split + "'"; }, epoch_atom::value,
                       split, plan_seed, epoch, batch_size, shuffle);
}

MiniBatch SamplerClient::next() {
  SampleKey key;
  return next(key);
}

MiniBatch SamplerClient::next(SampleKey& key) {
  std::string failure;
  MiniBatch batch;
  runtime::receive_reply(self_, self_->request(sampler_, deadline_, next_atom::value),
          [&](SampledBatch& reply) {
            if (!reply.ok()) {
              failure = reply.error;
              return;
            }
            key = reply.key;
            batch = std::move(*reply.batch);  // the only holder in this process
            if (reply.pool) pool_ = reply.pool;
          },
          [&](caf::error& e) { failure = transport_failure(system_, e, deadline_); });
  if (!failure.empty()) throw Error(name_ + ": " + failure);
  return batch;
}

std::function<void(std::vector<float>&&)> SamplerClient::recycler() const {
  return [pool = pool_](std::vector<float>&& x) {
    if (auto p = pool.lock()) p->give_back(std::move(x));
  };
}

}  // namespace partita
