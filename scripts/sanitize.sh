#!/usr/bin/env bash
# The test suite built with AddressSanitizer and UndefinedBehaviorSanitizer, run through
# ctest: a sanitizer report aborts the test that triggered it, so it fails.
#
#   scripts/sanitize.sh          # the fast, torch-free binaries (what CI runs):
#                                # partita_core_tests, partita_messages_tests, partita_runtime_tests,
#                                # partita_embeddings_tests, partita_datasets_tests
#   scripts/sanitize.sh all      # the whole suite (the CLI and every test binary, libtorch code included)
#
# The fast binaries are built in the fuzz tree (clang, build-fuzz/ or PARTITA_FUZZ_BUILD_DIR,
# scripts/fuzz_tree.sh), whose torch-free libraries scripts/fuzz.sh compiles with ASan and
# UBSan anyway: CI compiles them once. Their tests that start `partita` (CLI commands,
# daemons as child processes) run the ordinary build's binary (PARTITA_BUILD_DIR, default
# build/; built here if missing): compiling the CLI's libtorch units with ASan too would take
# a CI run past its budget on a 2-core machine, so the sanitizers cover the test binaries'
# own code (every torch-free library), not those child processes. `all` builds and runs the
# sanitized CLI too, with gcc in build-asan/ (-DPARTITA_SANITIZE=address,undefined, at -O1:
# CMakeLists.txt says why).
#
# Further arguments go to ctest (-R PATTERN, ...).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHICH=fast
if [ "${1:-}" = all ]; then
  WHICH=all
  shift
fi

if [ "$WHICH" = fast ]; then
  PLAIN_DIR="${PARTITA_BUILD_DIR:-$ROOT/build}"
  if [ ! -x "$PLAIN_DIR/tools/partita" ]; then
    cmake -S "$ROOT" -B "$PLAIN_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$PLAIN_DIR" -j"$(nproc)" --target partita
  fi
  source "$ROOT/scripts/fuzz_tree.sh"  # sets FUZZ_DIR; its tests run $PLAIN_DIR/tools/partita
  TREE="$FUZZ_DIR"
else
  TREE="${PARTITA_ASAN_BUILD_DIR:-$ROOT/build-asan}"
  cmake -S "$ROOT" -B "$TREE" -DCMAKE_BUILD_TYPE=Release -DPARTITA_SANITIZE=address,undefined \
    -DPARTITA_TEST_CLI="" >/dev/null
fi
# A report fails the test (halt_on_error). handle_sigbus=0: Partita handles SIGBUS itself
# (a mapped file truncated under a job is named, base/mapped_files.h), which its tests check.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:handle_sigbus=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Leaks inside third-party libraries (fontconfig and libltdl under `partita plot`, CAF's
# BASP broker at exit), each explained in scripts/lsan.supp; the child processes the tests
# start inherit it.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/scripts/lsan.supp:print_suppressions=0}"
cd "$TREE"
if [ "$WHICH" = all ]; then
  # What the suite runs: every test binary and the CLI (benchmarks and the fuzzers are not
  # tests). The libtorch units compiled with ASan take most of this build's time.
  binaries=(partita partita_core_tests partita_messages_tests partita_runtime_tests partita_embeddings_tests partita_datasets_tests partita_actors_tests
            partita_dashboard_tests partita_torch_tests partita_training_tests)
  cmake --build . -j"$(nproc)" --target "${binaries[@]}"
  ctest --output-on-failure --timeout 900 -j2 "$@"
else
  binaries=(partita_core_tests partita_messages_tests partita_runtime_tests partita_embeddings_tests partita_datasets_tests)
  cmake --build . -j"$(nproc)" --target "${binaries[@]}"
  # Their tests carry the label torch_free (tests/CMakeLists.txt); the others are not built.
  ctest --output-on-failure --timeout 900 -j2 -L torch_free "$@"
fi
