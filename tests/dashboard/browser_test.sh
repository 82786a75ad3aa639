#!/usr/bin/env bash
# The status page in a real browser.
#
#   browser_test.sh PARTITA_BINARY ARTEFACT_DIR
#
# Runs a short real job (`partita run` on a small generated SBM graph, 2 partitions) with
# --dashboard on a free loopback port (port 0: the job prints the one it got), waits
# until the job has finished 2 epochs, then loads the job's page in headless Chromium
# (Debian's chromium) twice: --dump-dom, checking that all six charts carry data points
# and that the job's state ("running") is shown; and --screenshot, kept as
# ARTEFACT_DIR/dashboard.png (with the DOM as ARTEFACT_DIR/dashboard.html). Then it asks
# for an unknown job's page and checks the 404 names the job.
#
# Every step has a deadline; the job and Chromium run in process groups of their own that
# are killed on any exit. Loopback only: Chromium starts with its background networking
# off (no component updates, no sync: the flags of chrome() below) and a fresh profile.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 PARTITA_BINARY ARTEFACT_DIR" >&2
  exit 2
fi
partita=$1
artefacts=$2
command -v chromium >/dev/null || { echo "FAIL: chromium is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
mkdir -p "$artefacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/partita-browser-test.XXXXXX")
groups=()  # process groups to kill on exit

cleanup() {
  local status=$?
  for g in "${groups[@]}"; do
    kill -KILL -- "-$g" 2>/dev/null || true
    kill -KILL "$g" 2>/dev/null || true  # its group may not exist yet: setsid had not run
  done
  wait 2>/dev/null || true
  if [ "$status" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "browser test FAILED (exit $status); its files are in $work" >&2
    [ -f "$work/job.err" ] && tail -5 "$work/job.err" >&2
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# GET PATH from the job's server with bash's /dev/tcp (no curl needed); prints the response.
http_get() {
  local path=$1
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&3
  timeout 5 cat <&3 || true
  exec 3<&-
}

# Enough epochs that the job is still running when the browser looks (about 0.1 s each);
# it is killed once the checks are done.
cat > "$work/job.yaml" <<'EOF'
data:
  generate: {kind: sbm, nodes: 20000, classes: 4, features: 16, avg_degree: 8, seed: 1}
  num_partitions: 2
model: {kind: graphsage, hidden: 16, layers: 2}
sampling: {fanouts: [5, 5], batch_size: 64}
train: {epochs: 2000}
output: browser-run
EOF

# The output files exist before the job starts: under load the shell reads job.out before
# the child has opened it.
: > "$work/job.out"
: > "$work/job.err"
setsid timeout --kill-after=5 240 "$partita" --threads 2 run "$work/job.yaml" --dashboard 0 \
  > "$work/job.out" 2> "$work/job.err" &
groups+=($!)

port=""
for _ in $(seq 300); do
  port=$(sed -n 's|^status page on http://127\.0\.0\.1:\([0-9]*\)/$|\1|p' "$work/job.out")
  [ -n "$port" ] && break
  kill -0 "${groups[0]}" 2>/dev/null || fail "the job ended before serving its status page"
  sleep 0.2
done
[ -n "$port" ] || fail "no 'status page on' line from the job within 60 s"
echo "== status page on port $port"

# Wait for 2 finished epochs, so every curve has points to draw.
ready=""
for _ in $(seq 600); do
  jobs=$(http_get /api/jobs)
  if grep -q '"last_epoch":{[^}]*"epoch":[2-9]' <<< "$jobs"; then ready=yes; break; fi
  kill -0 "${groups[0]}" 2>/dev/null || fail "the job ended before its second epoch"
  sleep 0.2
done
[ -n "$ready" ] || fail "the job did not finish 2 epochs within 120 s"

chrome() {
  local profile=$1
  shift
  setsid timeout --kill-after=5 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --virtual-time-budget=5000 "$@" &
  local pid=$!
  groups+=($pid)
  wait "$pid"
}

echo "== chromium --dump-dom"
chrome "$work/profile-dom" --dump-dom "http://127.0.0.1:$port/jobs/browser-run" \
  > "$artefacts/dashboard.html" 2> "$work/chromium-dom.err" || fail "chromium --dump-dom failed (see $work/chromium-dom.err)"
dom="$artefacts/dashboard.html"
for series in step-loss step-accuracy step-throughput epoch-loss epoch-accuracy epoch-throughput; do
  points=$(grep -o "<svg[^>]*data-series=\"$series\"[^>]*>" "$dom" | sed -n 's/.*data-points="\([0-9]*\)".*/\1/p')
  [ -n "$points" ] || fail "no chart '$series' on the page (see $dom)"
  [ "$points" -ge 2 ] || fail "chart '$series' has $points point(s), expected at least 2"
  echo "chart $series: $points points"
done
# The drawn curves themselves: a path with segments and, per epoch chart, its dots.
grep -q '<path class="line series-step"[^>]* d="M[^"]*L' "$dom" || fail "no drawn step curve in the DOM"
[ "$(grep -o '<circle class="point point-val"' "$dom" | wc -l)" -ge 2 ] || fail "no epoch points drawn"
grep -q 'class="job-state state-running">running<' "$dom" || fail "the job's state 'running' is not shown (see $dom)"
grep -q '<td>in-process</td><td class="state-up">up</td>' "$dom" || fail "the node's state is not shown (see $dom)"

echo "== chromium --screenshot"
chrome "$work/profile-shot" --window-size=1300,1100 --screenshot="$artefacts/dashboard.png" \
  "http://127.0.0.1:$port/jobs/browser-run" > /dev/null 2> "$work/chromium-shot.err" \
  || fail "chromium --screenshot failed (see $work/chromium-shot.err)"
[ "$(head -c 8 "$artefacts/dashboard.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] \
  || fail "$artefacts/dashboard.png is not a PNG"
echo "screenshot: $artefacts/dashboard.png"

echo "== an unknown job's page"
# Matched with here-strings, not `echo | head | grep -q`: with pipefail, a reader that
# stops early (head, grep -q) can kill the writer with SIGPIPE and fail a matching check.
response=$(http_get /jobs/no-such-job)
status_line=${response%%$'\n'*}
grep -q ' 404 ' <<< "$status_line" || fail "an unknown job's page is not a 404: $status_line"
grep -q "no job 'no-such-job'" <<< "$response" || fail "the 404 does not name the job"

kill -0 "${groups[0]}" 2>/dev/null || fail "the job ended during the checks (they must see it running)"
echo "browser test passed"
