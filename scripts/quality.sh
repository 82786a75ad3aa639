#!/usr/bin/env bash
# The quality tier: the suite's learning-quality checks (ctest label `quality`: the *Quality
# suites of partita_training_tests, each a published anchor over several seeds), then every
# task's example job on its real dataset (../shared/data), as shipped, over several training
# seeds, and one table: dataset, model, metric, mean ± spread over the seeds, the published
# anchor, the time. Minutes per job on 2 cores, so it is not part of scripts/test.sh; the
# suite keeps tests of each code path that take seconds.
#
#   ./scripts/quality.sh                 # every job, seeds 1 2 3
#   ./scripts/quality.sh cora aifb       # some of them
#   PARTITA_QUALITY_SEEDS="1 2" ./scripts/quality.sh
#   PARTITA_QUALITY_CTEST=0 ./scripts/quality.sh   # the table alone
#
# Each run's folder is kept under $PARTITA_QUALITY_DIR (default build/quality/JOB-sSEED),
# its log beside it (JOB-sSEED.log); the table is printed and written to build/quality/table.md.
# The metric is the selected epoch's (train.select; the run's report.json names it: the best
# validation epoch of a job with validation, else the last); spread is half the range
# over the seeds; a baseline the job measures itself (rating regression: the per-movie mean)
# is averaged beside it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${PARTITA_BUILD_DIR:-$ROOT/build}"
BUILD_TARGETS="partita partita_training_tests"
source "$ROOT/scripts/setup.sh"
if [ "${PARTITA_QUALITY_CTEST:-1}" != 0 ] && [ $# -eq 0 ]; then
  (cd "$BUILD_DIR" && ctest --output-on-failure -L quality)
fi
PARTITA="$BUILD_DIR/tools/partita"
# The examples name their datasets (data.dataset: cora): they read the tree's copies (CMake's
# PARTITA_DATA_DIR, docs/datasets.md "Mirrors and local copies") instead of downloading them.
if [ -z "${PARTITA_DATA_DIR:-}" ]; then
  PARTITA_DATA_DIR="$(sed -n 's/^PARTITA_DATA_DIR:PATH=//p' "$BUILD_DIR/CMakeCache.txt")"
  export PARTITA_DATA_DIR
fi
OUT="${PARTITA_QUALITY_DIR:-$BUILD_DIR/quality}"
SEEDS="${PARTITA_QUALITY_SEEDS:-1 2 3}"
mkdir -p "$OUT"

# job | dataset | model | metric key in metrics.jsonl | anchor (published) | baseline key (optional)
JOBS="cora|Cora|GraphSAGE|test_accuracy|0.79-0.80 (GraphSAGE in PyG/DGL)
cora_gcn|Cora|GCN|test_accuracy|0.815 (Kipf & Welling 2017)
cora_gat|Cora|GAT|test_accuracy|0.830 (Veličković et al. 2018)
aifb|AIFB|R-GCN|test_accuracy|0.958 (Schlichtkrull et al. 2018)
cora_link|Cora links|GraphSAGE + dot|test.auc|0.910 (GAE), 0.914 (VGAE)
fb15k237|FB15k-237|DistMult|test.mrr|0.241 (ConvE paper's DistMult)
fb15k237_complex|FB15k-237|ComplEx|test.mrr|0.247 (ConvE paper's ComplEx)
fb15k237_rgcn|FB15k-237|R-GCN + DistMult|test.mrr|0.248 (Schlichtkrull et al. 2018)
movielens_link|MovieLens latest-small, time split|hetero GraphSAGE|test.auc|none for this split|
movielens_link_history|MovieLens latest-small, time split, history|hetero GraphSAGE|test.auc|none for this split|
movielens_rating|MovieLens latest-small, time split|hetero GraphSAGE|test.rmse|none for this split|test.rmse_destination_mean
movielens_rating_history|MovieLens latest-small, time split, history|hetero GraphSAGE|test.rmse|none for this split|test.rmse_destination_mean
movielens_rating_mf|MovieLens latest-small, random split|biased MF|test.rmse|0.93 (biased MF), 0.92 (SVD++)|test.rmse_destination_mean
movielens_rating_random|MovieLens latest-small, random split|hetero GraphSAGE|test.rmse|0.93 (biased MF), 0.92 (SVD++)|test.rmse_destination_mean"

wanted=("$@")
selected() {
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w
  for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}
for w in "${wanted[@]}"; do
  grep -q "^$w|" <<<"$JOBS" || { echo "quality.sh: no job '$w' (one of: $(cut -d'|' -f1 <<<"$JOBS" | tr '\n' ' '))" >&2; exit 2; }
done

results="$OUT/results.tsv"
: >"$results"
while IFS='|' read -r job dataset model metric anchor baseline; do
  selected "$job" || continue
  for seed in $SEEDS; do
    run="$OUT/$job-s$seed"
    start=$(date +%s)
    if ! "$PARTITA" run "$ROOT/examples/$job.yaml" --seed "$seed" --output "$run" --overwrite </dev/null >"$run.log" 2>&1; then
      echo "quality.sh: $job seed $seed failed; its log: $run.log" >&2
      tail -5 "$run.log" >&2
      exit 1
    fi
    seconds=$(( $(date +%s) - start ))
    values=$(/usr/bin/python3 - "$run/metrics.jsonl" "$metric" "${baseline:-}" "$run/report.json" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
selected = json.load(open(sys.argv[4]))["selected_epoch"]
last = [l for l in lines if sys.argv[2] in l and l["epoch"] == selected]
if not last:
    sys.exit(f"{sys.argv[1]}: the selected epoch {selected} reports no {sys.argv[2]}")
print(last[-1][sys.argv[2]], last[-1].get(sys.argv[3], "") if sys.argv[3] else "", sep="\t")
EOF
)
    value=${values%%$'\t'*}
    printf '%s\t%s\t%s\t%s\n' "$job" "$seed" "$values" "$seconds" >>"$results"
    echo "quality.sh: $job seed $seed: $metric $value in $seconds s" >&2
  done
done <<<"$JOBS"

/usr/bin/python3 - "$results" "$OUT/table.md" "$SEEDS" <<EOF
import statistics, sys
jobs = {}
for row in open(sys.argv[1]):
    job, seed, value, base, seconds = row.rstrip("\n").split("\t")
    jobs.setdefault(job, []).append((int(seed), float(value), float(base) if base else None, int(seconds)))
meta = {}
for line in """$JOBS""".splitlines():
    job, dataset, model, metric, anchor, baseline = (line.split("|") + [""])[:6]
    meta[job] = (dataset, model, metric, anchor, baseline)
out = ["| dataset | model | metric | mean ± spread (seeds " + " ".join(sys.argv[3].split()) + ") | values | anchor | "
       "baseline in the same runs | time per run |",
       "|---|---|---|---|---|---|---|---|"]
for job, runs in jobs.items():
    dataset, model, metric, anchor, baseline = meta[job]
    values = [v for _, v, _, _ in runs]
    mean = statistics.mean(values)
    spread = (max(values) - min(values)) / 2
    bases = [b for _, _, b, _ in runs if b is not None]
    base = f"{baseline} {statistics.mean(bases):.3f}" if bases else ""
    time = statistics.median(s for _, _, _, s in runs)
    out.append(f"| {dataset} | {model} | {metric} | {mean:.3f} ± {spread:.3f} | "
               f"{', '.join(f'{v:.3f}' for v in values)} | {anchor} | {base} | {time:.0f} s |")
text = "\n".join(out) + "\n"
open(sys.argv[2], "w").write(text)
print(text, end="")
EOF
