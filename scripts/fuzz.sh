#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in build-fuzz/ and runs
# them:
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]      # default: all, 60 seconds each
#
# TARGET is a name from fuzz/CMakeLists.txt (codec, npy, job_yaml, ...). Each target starts
# from its seeds (build-fuzz/seeds/TARGET, written by partita_fuzz_seeds from the project's
# writers, tests/corpus/readers, examples/ and the dataset slices in fuzz/seeds/), the
# inputs that once crashed it (fuzz/regressions/TARGET/, kept in the repository: each must
# keep passing) and its corpus (build-fuzz/corpus/TARGET, which the runs grow and later
# runs resume from). A crash, a sanitizer report, a hang over
# 10 s or an allocation over 2 GiB stops the target: the script goes on with the others,
# then fails, naming the input it kept in build-fuzz/crashes/TARGET/ and the command that
# reproduces it. Executions per target are appended to build-fuzz/fuzz-summary.tsv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${1:-all}"
SECONDS_EACH="${2:-60}"
if ! [[ "$SECONDS_EACH" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS must be a positive whole number, got '$SECONDS_EACH'" >&2
  exit 2
fi

# The tree: build-fuzz/ or PARTITA_FUZZ_BUILD_DIR (scripts/fuzz_tree.sh says how it is configured).
source "$ROOT/scripts/fuzz_tree.sh"
cmake --build "$FUZZ_DIR" -j"$(nproc)" --target partita_fuzzers

if [ "$TARGET" = all ]; then
  targets=()
  for bin in "$FUZZ_DIR"/fuzz/fuzz_*; do targets+=("$(basename "$bin" | sed 's/^fuzz_//')"); done
else
  if [ ! -x "$FUZZ_DIR/fuzz/fuzz_$TARGET" ]; then
    echo "fuzz.sh: no target '$TARGET' (see fuzz/CMakeLists.txt)" >&2
    exit 2
  fi
  targets=("$TARGET")
fi

rm -rf "$FUZZ_DIR/seeds"
"$FUZZ_DIR/fuzz/partita_fuzz_seeds" "$FUZZ_DIR/seeds" "$ROOT/tests/corpus/readers" "$ROOT/examples" "$ROOT/fuzz/seeds"

failed=()
for t in "${targets[@]}"; do
  corpus="$FUZZ_DIR/corpus/$t" crashes="$FUZZ_DIR/crashes/$t" log="$FUZZ_DIR/logs/$t.log"
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")" "$FUZZ_DIR/seeds/$t"
  regressions=()
  if [ -d "$ROOT/fuzz/regressions/$t" ]; then regressions=("$ROOT/fuzz/regressions/$t"); fi
  echo "fuzz.sh: $t for ${SECONDS_EACH}s" >&2
  status=0
  # -timeout: a hang is a finding; -rss_limit_mb/-malloc_limit_mb: so is memory no input
  # this small may need. Leak detection stays on (libFuzzer's default).
  "$FUZZ_DIR/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
    "$corpus" "$FUZZ_DIR/seeds/$t" "${regressions[@]}" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$SECONDS_EACH" "${runs:-0}" "$status" \
    >>"$FUZZ_DIR/fuzz-summary.tsv"
  if [ "$status" -ne 0 ]; then
    echo "fuzz.sh: $t FAILED (exit $status) after ${runs:-?} executions; its log's end:" >&2
    grep -v '^#' "$log" | tail -40 >&2
    kept=$(ls -t "$crashes" 2>/dev/null | head -1)
    if [ -n "$kept" ]; then
      echo "fuzz.sh: input kept: $crashes/$kept (reproduce: $FUZZ_DIR/fuzz/fuzz_$t $crashes/$kept)" >&2
    fi
    failed+=("$t")
  else
    echo "fuzz.sh: $t: ${runs:-?} executions, no crash" >&2
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]}" >&2
  exit 1
fi
