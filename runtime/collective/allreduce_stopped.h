// The end of an allreduce member that was stopped on purpose (its job's driver stops the
// group when the job is cancelled or ends early): what Allreduce::sum throws then, so that a
// trainer can tell an orderly stop from a failure and log it as one.
#pragma once

#include "base/error.h"

namespace partita::runtime {

class AllreduceStopped : public Error {
 public:
  using Error::Error;
};

}  // namespace partita::runtime
