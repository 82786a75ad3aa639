#!/usr/bin/env bash
# Sourced by scripts/fuzz.sh and scripts/sanitize.sh: configures the fuzz tree (clang,
# -DPARTITA_FUZZ=ON: the libraries with ASan, UBSan and libFuzzer's coverage) in FUZZ_DIR,
# PARTITA_FUZZ_BUILD_DIR or build-fuzz/. One tree serves both scripts, so the instrumented
# libraries are compiled once: fuzz.sh builds the fuzzers in it, sanitize.sh the fast test
# binaries, whose tests run the ordinary build's `partita` (PARTITA_TEST_CLI,
# PARTITA_BUILD_DIR or build/) rather than compiling the CLI's libtorch units with ASan.
#
# PARTITA_FUZZ_BUILD_DIR puts the build, corpora, findings, logs and counts elsewhere (a
# long campaign's folder, scripts/fuzz_campaign.sh). A folder configured from another
# source tree (a worktree since merged, say) is built again from empty, so that no object of
# the other tree survives; its corpora, findings, logs and counts stay.
FUZZ_DIR="${PARTITA_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
if [ -f "$FUZZ_DIR/CMakeCache.txt" ] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT" "$FUZZ_DIR/CMakeCache.txt"; then
  echo "fuzz tree: $FUZZ_DIR was built from another source tree; building it again from $ROOT" >&2
  find "$FUZZ_DIR" -mindepth 1 -maxdepth 1 ! -name corpus ! -name crashes ! -name logs ! -name fuzz-summary.tsv \
    ! -name 'campaign*' -exec rm -rf {} +
fi
CC=clang CXX=clang++ cmake -S "$ROOT" -B "$FUZZ_DIR" -DCMAKE_BUILD_TYPE=Release -DPARTITA_FUZZ=ON \
  -DPARTITA_BUILD_TESTS=ON -DPARTITA_TEST_CLI="${PARTITA_BUILD_DIR:-$ROOT/build}/tools/partita" >/dev/null
