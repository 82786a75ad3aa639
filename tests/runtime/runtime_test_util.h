// Helpers for the runtime tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

// Expects `part` inside `text`, printing the text when it is not.
#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (part) << "' not in: " << (text)
