#!/usr/bin/env bash
# The main job, embedded default: no cluster, no download. Trains GraphSAGE on a synthetic
# SBM graph that the job generates and partitions into 2 parts (METIS), 2 partitions x 1
# trainer in one process, and prints the test accuracy (examples/sbm.yaml).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_TARGETS=partita  # the CLI and what it runs; ./scripts/test.sh builds the rest
source "$ROOT/scripts/setup.sh"

OUTPUT="${PARTITA_WORK_DIR:-$BUILD_DIR/main-job}"
"$BUILD_DIR/tools/partita" run "$ROOT/examples/sbm.yaml" --output "$OUTPUT" --overwrite
