#!/usr/bin/env bash
# The start-up of a command that never trains, through `partita` (no libtorch) next to the
# same command through `partita-full` (every command, libtorch loaded), in interleaved
# rounds; prints the median seconds of each (tools/main.cpp says why there are two).
#
#   bench/cli_startup.sh [BUILD_DIR] [ROUNDS]      # defaults: build, 9
set -euo pipefail
BUILD="${1:-build}"
ROUNDS="${2:-9}"
for b in partita partita-full; do
  [ -x "$BUILD/tools/$b" ] || { echo "cli_startup.sh: no $BUILD/tools/$b (build first)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A small partition folder for `inspect` to read (the command's own work is ~1 ms).
"$BUILD/tools/partita" --log-level error generate sbm --nodes 2000 -o "$work/graph" >/dev/null
"$BUILD/tools/partita" --log-level error partition -f npy -i "$work/graph" -o "$work/parts" -k 2 >/dev/null
declare -A times
for ((r = 0; r < ROUNDS; r++)); do
  for b in partita partita-full; do
    start=$(date +%s%N)
    "$BUILD/tools/$b" --log-level error inspect "$work/parts" >/dev/null
    times[$b]+="$(( ($(date +%s%N) - start) / 1000 )) "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] / 1e6}'; }
light=$(echo "${times[partita]}" | median)
full=$(echo "${times[partita-full]}" | median)
printf 'partita inspect: %.3f s (median of %d)   partita-full inspect: %.3f s   ratio %.0fx\n' \
  "$light" "$ROUNDS" "$full" "$(echo "$full / $light" | bc -l)"
