#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 600 -j2 "$@"
