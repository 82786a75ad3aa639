#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest,
# then every fuzz target for a short fixed time (scripts/fuzz.sh; PARTITA_CI_FUZZ_SECONDS
# each, default 10; 0 skips it), failing on a finding. With PARTITA_CI_SANITIZE=1, then the
# fast, torch-free test binaries under ASan and UBSan too (scripts/sanitize.sh): not yet by
# default, because its build (~12 CPU-min) would take a clean run on a 2-core machine to
# about 30 minutes (README.md, "Fuzzing and sanitizers", says what each step costs). With
# arguments (ctest's: -R PATTERN, ...) only ctest runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j2 "$@"
if [ $# -eq 0 ]; then
  FUZZ_SECONDS="${PARTITA_CI_FUZZ_SECONDS:-10}"
  if [ "$FUZZ_SECONDS" != 0 ]; then "$ROOT/scripts/fuzz.sh" all "$FUZZ_SECONDS"; fi
  if [ "${PARTITA_CI_SANITIZE:-0}" = 1 ]; then PARTITA_BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/sanitize.sh"; fi
fi
