#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest.
# Then the hostile-input checks (issue 14): every fuzz target for a short fixed time
# (scripts/fuzz.sh; PARTITA_CI_FUZZ_SECONDS each, default 15, 0 skips them) and the fast,
# torch-free test binaries under ASan and UBSan (scripts/sanitize.sh). With arguments
# (ctest's: -R PATTERN, ...) only ctest runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j2 "$@"
if [ $# -eq 0 ]; then
  FUZZ_SECONDS="${PARTITA_CI_FUZZ_SECONDS:-15}"
  if [ "$FUZZ_SECONDS" != 0 ]; then "$ROOT/scripts/fuzz.sh" all "$FUZZ_SECONDS"; fi
  "$ROOT/scripts/sanitize.sh"
fi
