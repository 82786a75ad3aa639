// The checks every bad-input test makes: what a call's Error says, that a call throws an
// Error naming the problem, and that a call is refused with a UsageError naming it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "test_util.h"

namespace partita::testing {

// The message of the partita::Error `run` throws; "" if it returns. Other exceptions
// propagate (the test fails naming them).
inline std::string error_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Runs `run`; a failure unless it throws UsageError containing `why`.
inline void expect_usage_error(const std::function<void()>& run, const std::string& why) {
  try {
    run();
    ADD_FAILURE() << "accepted; expected: " << why;
  } catch (const UsageError& e) {
    EXPECT_CONTAINS(e.what(), why);
  }
}

}  // namespace partita::testing

// `expression` throws a partita::Error whose message contains `part`.
#define EXPECT_THROW_CONTAINS(expression, part)                \
  do {                                                         \
    try {                                                      \
      expression;                                              \
      ADD_FAILURE() << #expression " did not throw";           \
    } catch (const ::partita::Error& e) {                      \
      EXPECT_CONTAINS(std::string(e.what()), part);            \
    }                                                          \
  } while (false)
