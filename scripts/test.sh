#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest.
# With PARTITA_HOSTILE=1, then the hostile-input checks (issue 14): every fuzz target for a
# short fixed time (scripts/fuzz.sh; PARTITA_CI_FUZZ_SECONDS each, default 15) and the fast,
# torch-free test binaries under ASan and UBSan (scripts/sanitize.sh). Not yet by default:
# they have not run on the tree that merged TLS into the transport they fuzz. With
# arguments (ctest's: -R PATTERN, ...) only ctest runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j2 "$@"
if [ $# -eq 0 ] && [ "${PARTITA_HOSTILE:-0}" = 1 ]; then
  FUZZ_SECONDS="${PARTITA_CI_FUZZ_SECONDS:-15}"
  if [ "$FUZZ_SECONDS" != 0 ]; then "$ROOT/scripts/fuzz.sh" all "$FUZZ_SECONDS"; fi
  "$ROOT/scripts/sanitize.sh"
fi
