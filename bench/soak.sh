#!/usr/bin/env bash
# Memory, threads and file descriptors over a long job: does anything grow per epoch?
#
#   bench/soak.sh [EPOCHS] [WORKDIR] [SETUPS]  # default: 300 epochs, a temporary folder,
#                                              # "local local-a1 daemons"
#
# Runs the same job (GraphSAGE on a generated 20k-node SBM graph, 2 partitions: about ten
# epochs a second on 2 cores) in three set-ups, one after the other:
#   local       `partita run`: every actor in one process
#   local-a1    the same under MALLOC_ARENA_MAX=1 (one malloc arena: growth that other
#               arenas would hide shows)
#   daemons     `partita submit --daemons` to 2 daemons on loopback (--insecure), each
#               daemon sampled (the job's trainers and partitions live there)
# and samples each process's resident memory (VmRSS), its anonymous part (RssAnon),
# threads and open descriptors every second. It prints, per process, the median of the
# samples of the run's second tenth (past start-up: graph loaded, first epochs done) and
# the median of its last tenth, and the growth between them in percent: the goal is at
# most 1%.
#
# Why medians of tenths: a heap trimmed between epochs gives pages back and takes them
# again within an epoch, so one sample reads a few percent above or below its neighbours
# and a growth figure from two single samples spread over 7 points in three rounds.
# Nothing here is a test: CI runs the per-epoch object counts (tests/training,
# "NothingGrowsPerEpoch"); this measures bytes over minutes.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PARTITA="${PARTITA:-$ROOT/build/tools/partita}"
EPOCHS="${1:-300}"
WORK="${2:-$(mktemp -d)}"
SETUPS="${3:-local local-a1 daemons}"
mkdir -p "$WORK"
cleanup() {
  for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

cat >"$WORK/job.yaml" <<EOF
data:
  generate: {kind: sbm, nodes: 20000, classes: 4, features: 16, avg_degree: 10, seed: 1}
  num_partitions: 2
model: {kind: graphsage, hidden: 32, layers: 2, dropout: 0.3}
sampling: {fanouts: [5, 5], batch_size: 256}
train: {epochs: $EPOCHS, learning_rate: 0.01, seed: 1, threads: 1}
EOF

# Samples PID every second into FILE until it exits: time rss_kb anon_kb threads fds.
sample() {
  local pid=$1 file=$2
  while [ -e "/proc/$pid/status" ]; do
    local rss anon threads fds
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    anon=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    threads=$(ls "/proc/$pid/task" 2>/dev/null | wc -l)
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && echo "$(date +%s.%N) $rss $anon $threads $fds" >>"$file"
    sleep 1
  done
}

# Prints the growth of FILE's samples from the median of the run's second tenth to the
# median of its last tenth (the very last sample may catch the process exiting: left out).
report() {
  local name=$1 file=$2
  awk -v name="$name" '
    function median(values, lo, hi,    n, i, j, v, sorted) {
      n = 0
      for (i = lo; i <= hi; i++) sorted[++n] = values[i]
      for (i = 2; i <= n; i++) {  # insertion sort: a tenth of a run is at most a few hundred samples
        v = sorted[i]
        for (j = i - 1; j >= 1 && sorted[j] > v; j--) sorted[j + 1] = sorted[j]
        sorted[j + 1] = v
      }
      return n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
    }
    { t[NR]=$1; rss[NR]=$2; anon[NR]=$3; thr[NR]=$4; fd[NR]=$5 }
    END {
      if (NR < 20) { printf "%-18s too few samples (%d, need 20)\n", name, NR; exit }
      last = NR - 1
      tenth = int(last / 10)
      a_lo = tenth + 1; a_hi = 2 * tenth
      b_lo = last - tenth + 1; b_hi = last
      r0 = median(rss, a_lo, a_hi); r1 = median(rss, b_lo, b_hi)
      n0 = median(anon, a_lo, a_hi); n1 = median(anon, b_lo, b_hi)
      printf "%-18s %5.0f s  rss %7.1f -> %7.1f MB (%+5.2f%%)  anon %7.1f -> %7.1f MB (%+5.2f%%)  threads %d -> %d  fds %d -> %d\n",
        name, t[last] - t[1], r0/1024, r1/1024, 100*(r1-r0)/r0,
        n0/1024, n1/1024, 100*(n1-n0)/n0, thr[a_lo], thr[last], fd[a_lo], fd[last]
    }' "$file"
}

# The partition folder once, so every set-up starts training at once.
"$PARTITA" --log-level warn run "$WORK/job.yaml" --output "$WORK/warm" --overwrite >/dev/null 2>&1 || true

echo "soak: $EPOCHS epochs of GraphSAGE on a 20k-node SBM graph, 2 partitions; samples every second" >&2
for setup in local local-a1; do
  case " $SETUPS " in *" $setup "*) ;; *) continue ;; esac
  rm -f "$WORK/$setup.samples"
  if [ "$setup" = local-a1 ]; then export MALLOC_ARENA_MAX=1; else unset MALLOC_ARENA_MAX; fi
  "$PARTITA" --log-level warn run "$WORK/job.yaml" --output "$WORK/$setup" --overwrite >"$WORK/$setup.log" 2>&1 &
  pid=$!
  sleep 0.2
  # `partita` executes partita-full in place: the same PID.
  sample "$pid" "$WORK/$setup.samples"
  wait "$pid" || { echo "soak: the $setup job failed:" >&2; tail -5 "$WORK/$setup.log" >&2; exit 1; }
  report "$setup" "$WORK/$setup.samples"
done
unset MALLOC_ARENA_MAX
case " $SETUPS " in *" daemons "*) ;; *) exit 0 ;; esac

daemons=() pids=()
for i in 1 2; do
  "$PARTITA" --insecure --log-level warn daemon --listen 127.0.0.1:0 --name "soak-$i" >"$WORK/daemon-$i.out" 2>"$WORK/daemon-$i.log" &
  pids+=($!)
done
for i in 1 2; do
  for _ in $(seq 100); do
    address=$(sed -n 's/^partita daemon listening on //p' "$WORK/daemon-$i.out")
    [ -n "$address" ] && break
    sleep 0.1
  done
  [ -n "$address" ] || { echo "soak: daemon $i did not start" >&2; exit 1; }
  daemons+=("$address")
done
for i in 0 1; do sample "${pids[$i]}" "$WORK/daemon-$((i + 1)).samples" & done
"$PARTITA" --insecure --log-level warn submit "$WORK/job.yaml" --daemons "$(IFS=,; echo "${daemons[*]}")" \
  --output "$WORK/daemons" --overwrite >"$WORK/submit.log" 2>&1 ||
  { echo "soak: the job on daemons failed:" >&2; tail -5 "$WORK/submit.log" >&2; exit 1; }
kill "${pids[@]}"
wait "${pids[@]}" 2>/dev/null || true
sleep 1
for i in 1 2; do report "daemon $i" "$WORK/daemon-$i.samples"; done
