// The check every bad-input test makes: the call is refused with a UsageError whose message
// names the problem.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "test_util.h"

namespace partita::testing {

// Runs `run`; a failure unless it throws UsageError containing `why`. Other exceptions
// propagate (the test fails naming them).
inline void expect_usage_error(const std::function<void()>& run, const std::string& why) {
  try {
    run();
    ADD_FAILURE() << "accepted; expected: " << why;
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), why);
  }
}

}  // namespace partita::testing
