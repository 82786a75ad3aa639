#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest,
# then every fuzz target for a short fixed time (scripts/fuzz.sh; PARTITA_CI_FUZZ_SECONDS
# each, default 10; 0 skips it), failing on a finding, then the fast, torch-free test
# binaries under ASan and UBSan (scripts/sanitize.sh; PARTITA_CI_SANITIZE=0 skips it),
# built in the fuzz tree, so the instrumented libraries are compiled once (docs/contributing.md,
# "Fuzzing and sanitizers", has what each step costs). With arguments (ctest's:
# -R PATTERN, ...) only ctest runs. The learning-quality checks (label `quality`, minutes each)
# are scripts/quality.sh's, not this suite's.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$BUILD_DIR"
if [ $# -eq 0 ]; then
  ctest --output-on-failure --timeout 600 -j2 -LE quality
else
  ctest --output-on-failure --timeout 600 -j2 "$@"
fi
if [ $# -eq 0 ]; then
  FUZZ_SECONDS="${PARTITA_CI_FUZZ_SECONDS:-10}"
  # Both use the ordinary build's `partita` where a test starts one (scripts/fuzz_tree.sh).
  export PARTITA_BUILD_DIR="$BUILD_DIR"
  if [ "$FUZZ_SECONDS" != 0 ]; then "$ROOT/scripts/fuzz.sh" all "$FUZZ_SECONDS"; fi
  if [ "${PARTITA_CI_SANITIZE:-1}" != 0 ]; then "$ROOT/scripts/sanitize.sh"; fi
fi
