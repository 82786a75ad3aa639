#!/usr/bin/env bash
# A long fuzzing campaign (the goal: 10 M executions per target, 0 open findings): runs the
# fuzz targets through scripts/fuzz.sh, in slices, until every target's executions summed
# over all its runs in fuzz-summary.tsv reach GOAL.
#
#   scripts/fuzz_campaign.sh [GOAL] [SLICE]    # default 10000000 executions, 600 s slices
#   scripts/fuzz_campaign.sh --status [GOAL]   # each target's executions so far, and the rest
#
# Each round picks the target nearest its goal in time (what it still needs over its rate
# in its runs so far; a target never run goes first, for 60 s, which gives its rate) and
# runs it for at most SLICE seconds, or what its goal needs at that rate. The counts live in the folder, so stopping the
# campaign anywhere (a slice killed mid-way loses that slice's count) and starting it again
# resumes. A target with a finding is left out for the rest of the campaign (fuzz.sh keeps
# the input and prints how to replay it; fix it, then start the campaign again); the
# campaign then ends with status 1.
#
# Meant to run for hours beside other work, niced, in a folder that outlives worktrees
# (fuzz.sh's PARTITA_FUZZ_BUILD_DIR), in a process group of its own so that one kill stops
# the slice running too:
#
#   mkdir -p ../fuzz-campaign; export PARTITA_FUZZ_BUILD_DIR=$PWD/../fuzz-campaign
#   setsid nohup nice -n 19 scripts/fuzz_campaign.sh >>"$PARTITA_FUZZ_BUILD_DIR/campaign.log" 2>&1 &
#   kill -- -"$(cat "$PARTITA_FUZZ_BUILD_DIR/campaign.pid")"       # stop it
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_DIR="${PARTITA_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SUMMARY="$FUZZ_DIR/fuzz-summary.tsv"

STATUS_ONLY=0
if [ "${1:-}" = --status ]; then
  STATUS_ONLY=1
  shift
fi
GOAL="${1:-10000000}"
SLICE="${2:-600}"
for value in "$GOAL" "$SLICE"; do
  if ! [[ "$value" =~ ^[1-9][0-9]*$ ]]; then
    echo "fuzz_campaign.sh: GOAL and SLICE must be positive whole numbers, got '$value'" >&2
    exit 2
  fi
done

# The targets, as fuzz/CMakeLists.txt lists them (the first word of each line of the list).
mapfile -t TARGETS < <(sed -n '/^set(PARTITA_FUZZ_TARGETS/,/^)/{/^ /s/^ *\([a-z_0-9]*\).*/\1/p}' "$ROOT/fuzz/CMakeLists.txt")
if [ ${#TARGETS[@]} -eq 0 ]; then
  echo "fuzz_campaign.sh: no targets found in fuzz/CMakeLists.txt" >&2
  exit 2
fi

# One line per target: name, executions so far, seconds run so far, seconds still needed at
# its rate (0 when done; -1 when never run).
progress() {
  local t
  for t in "${TARGETS[@]}"; do
    awk -F'\t' -v t="$t" -v goal="$GOAL" '
      $2 == t { runs += $4; secs += $3 }
      END {
        left = goal - runs
        if (left <= 0) need = 0
        else if (runs == 0 || secs == 0) need = -1
        else need = int(left / (runs / secs)) + 1
        printf "%s\t%d\t%d\t%d\n", t, runs, secs, need
      }' "$SUMMARY" 2>/dev/null || printf '%s\t0\t0\t-1\n' "$t"
  done
}

if [ "$STATUS_ONLY" = 1 ]; then
  printf '%-14s %12s %8s %7s  %s\n' target executions seconds exec/s "to $GOAL at that rate"
  progress | while IFS=$'\t' read -r t runs secs need; do
    rate=$([ "$secs" -gt 0 ] && echo $((runs / secs)) || echo -)
    case "$need" in
      0) left=done ;;
      -1) left="not run" ;;
      *) left="$((need / 3600)) h $((need % 3600 / 60)) min" ;;
    esac
    printf '%-14s %12d %8d %7s  %s\n' "$t" "$runs" "$secs" "$rate" "$left"
  done
  exit 0
fi

mkdir -p "$FUZZ_DIR"
echo $$ >"$FUZZ_DIR/campaign.pid"
failed=()
for (( ; ; )); do
  # The unfinished target that needs the least time, not yet failed in this campaign.
  next="" next_need=0
  while IFS=$'\t' read -r t runs secs need; do
    [ "$need" = 0 ] && continue
    [[ " ${failed[*]} " == *" $t "* ]] && continue
    if [ -z "$next" ] || [ "$need" -lt "$next_need" ]; then next=$t next_need=$need; fi
  done < <(progress)
  if [ -z "$next" ]; then break; fi
  # A target never run gets a short first slice, which gives its rate; then the order.
  seconds=$SLICE
  if [ "$next_need" -lt 0 ]; then seconds=$((SLICE < 60 ? SLICE : 60)); fi
  if [ "$next_need" -ge 0 ] && [ "$next_need" -lt "$SLICE" ]; then seconds=$((next_need < 30 ? 30 : next_need)); fi
  echo "fuzz_campaign.sh: $(date -u +%FT%TZ) $next for ${seconds}s" >&2
  if ! "$ROOT/scripts/fuzz.sh" "$next" "$seconds"; then
    failed+=("$next")
    echo "fuzz_campaign.sh: $next has a finding: left out of this campaign (see above)" >&2
  fi
done

echo "fuzz_campaign.sh: $(date -u +%FT%TZ) done (goal $GOAL executions per target)" >&2
"$0" --status "$GOAL" >&2
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz_campaign.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
