// What the command line accepts as a number, and what it says when it does not.
//
// CLI11's own checks print "Value 0 not in range 0.000000 to 1797...(300 digits)" for
// `--nodes 0`, the same for `--threads abc`, and they wrap `--seed -5` to
// 18446744073709551611 and `--seed 99999999999999999999999` to 2^64 - 1 without a word.
// Every numeric flag goes through these instead:
//   --nodes: must be positive, got 0
//   --threads: expected an integer, got 'abc'
//   --seed: expected a non-negative integer, got '-5'
//   --seed: '99999999999999999999999' is out of range (at most 18446744073709551615)
//   --heartbeat-ms: '99999999999999999999' is too large
//   --noise: expected a finite number, got 'inf'
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace partita::cli {

// Thread-count flags stop here: more threads than this is a typo, and starting them
// (100,000 were started for `--threads 100000`) exhausts the machine before any work.
constexpr int kMaxThreads = 1024;

// A number (integer or real) > 0. A value that is not a number passes, so that
// check_number_syntax (which knows the flag's type) names what was expected.
CLI::Validator positive();
// A number >= min, the same way.
CLI::Validator at_least(double min);
// A number in [min, max], the same way.
CLI::Validator in_range(double min, double max);

// Adds to every integer and real flag of `app` and its subcommands (recursively) a check
// that the value is a number of the flag's type that fits it: no sign on unsigned flags, no
// fraction on integer flags, no silent saturation, no infinity or NaN on real flags. Call once, after every flag is added.
void check_number_syntax(CLI::App& app);

}  // namespace partita::cli
