#!/usr/bin/env bash
# The main job, embedded default: no cluster, no download. Generates a synthetic SBM graph,
# partitions it with METIS into 2 parts, and prints the partition report.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"

PARTITA="$BUILD_DIR/tools/partita"
WORK="${PARTITA_WORK_DIR:-$BUILD_DIR/main-job}"
mkdir -p "$WORK"
"$PARTITA" generate sbm --nodes 200000 --classes 8 --features 64 --seed 1 \
  --output "$WORK/sbm" --overwrite
"$PARTITA" partition --input "$WORK/sbm" --format npy --parts 2 --seed 1 \
  --output "$WORK/sbm-2parts" --overwrite
"$PARTITA" inspect "$WORK/sbm-2parts" --verify >/dev/null  # checks every byte; the report was printed above
