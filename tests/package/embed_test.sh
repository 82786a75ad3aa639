#!/usr/bin/env bash
# The used-by test: a host application builds against the installed package and runs.
#
#   embed_test.sh BUILD_DIR SOURCE_DIR
#
# Installs BUILD_DIR into a temporary prefix (cmake --install), configures and builds
# SOURCE_DIR/examples/embed out of tree against that prefix alone (CMAKE_PREFIX_PATH; a
# fresh build folder), checks that no include path points into the source tree, then runs
# the example in-process (mode 1) and on two `partita daemon`s of the installed prefix on
# loopback (mode 2), then with its own registered model (--own-model) in process and on two
# daemons of the example itself (--serve); the daemons and the example speak TLS, with
# credentials of a cluster made by the installed `partita cluster init` and `cluster cert`.
# It checks that each printed its progress lines and final metrics, exited 0, and that each
# pair ended with the same metrics. Every step has a deadline; the daemons are killed on any
# exit. No network.
# The temporary folder is removed on success and kept (its path printed) on failure.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/partita-embed-test.XXXXXX")
daemons=()

cleanup() {
  local status=$?
  for pid in "${daemons[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "embed test FAILED (exit $status); its files are in $work" >&2
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Runs "$@" with a deadline, its output in $work/$name.log, shown if it fails.
run_step() {
  local name=$1 seconds=$2
  shift 2
  echo "== $name: $*"
  if ! timeout --kill-after=10 "$seconds" "$@" > "$work/$name.log" 2>&1; then
    cat "$work/$name.log" >&2
    fail "$name failed or took more than $seconds s"
  fi
}

# What a run of the example must have printed: progress from the callback, each epoch's
# metrics, and the final metrics.
check_output() {
  local name=$1 log=$work/$1.log
  grep -q '^progress: epoch 1/5 step 1/' "$log" || fail "$name: no progress line from the callback (see $log)"
  grep -q '^epoch 5/5 done: .* test accuracy ' "$log" || fail "$name: no metrics of the last epoch (see $log)"
  grep -q '^final: epochs 5, .* test accuracy ' "$log" || fail "$name: no final metrics (see $log)"
  grep '^final:' "$log"
}

launcher=()
if command -v ccache > /dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  # The installed headers' paths are in this run's temporary folder: relative to it, the
  # compile is the last run's (same headers, same flags), a cache hit instead of a rebuild.
  export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
fi

# The package of a sanitizer build (PARTITA_SANITIZE=address,undefined, set by the test from
# the build's cache) holds instrumented static libraries: a host links the runtimes too.
sanitize=()
if [ -n "${PARTITA_SANITIZE:-}" ]; then
  sanitize=("-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=$PARTITA_SANITIZE")
fi

prefix=$work/prefix
run_step install 120 cmake --install "$build_dir" --prefix "$prefix"
[ -x "$prefix/bin/partita" ] || fail "the install has no bin/partita"
ls "$prefix"/lib*/cmake/Partita/PartitaConfig.cmake > /dev/null 2>&1 || fail "the install has no PartitaConfig.cmake"

run_step configure 120 cmake -S "$source_dir/examples/embed" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" "${sanitize[@]}"
run_step build 300 cmake --build "$work/build"
if grep -q -- "$source_dir" "$work/build/CMakeFiles/partita_embed.dir/flags.make"; then
  fail "the example compiled against the source tree, not the installed headers: $(grep -- "$source_dir" \
    "$work/build/CMakeFiles/partita_embed.dir/flags.make")"
fi

cd "$work"
run_step in-process 120 "$work/build/partita_embed" --output "$work/run-in-process"
check_output in-process

# Starts two daemons of "$@" (with --listen 127.0.0.1:0 or --serve 127.0.0.1:0 in it) on free
# loopback ports, named $1-0 and $1-1 in $work, each ready when it prints its address
# (a line matching $2); sets `addresses`. Their output files exist before they start: the
# background shell that redirects into one may not have created it yet when the loop below
# first reads it.
start_daemons() {
  local name=$1 ready=$2
  shift 2
  addresses=()
  local first=${#daemons[@]}
  for d in 0 1; do
    : > "$work/$name-$d.out"
    "$@" > "$work/$name-$d.out" 2> "$work/$name-$d.err" &
    daemons+=($!)
  done
  for d in 0 1; do
    local address=
    for _ in $(seq 300); do
      address=$(sed -n "s/^$ready //p" "$work/$name-$d.out")
      [ -n "$address" ] && break
      kill -0 "${daemons[$((first + d))]}" 2> /dev/null || { cat "$work/$name-$d.err" >&2; fail "$name $d exited before it was ready"; }
      sleep 0.1
    done
    [ -n "$address" ] || fail "$name $d printed no address within 30 s"
    addresses+=("$address")
  done
}

# Mode 2: two daemons of the installed binary, over TLS: a cluster CA with the daemons'
# certificate (cluster init), and a node's certificate for the application (cluster cert).
run_step cluster-init 60 "$prefix/bin/partita" cluster init "$work/tls"
run_step cluster-cert 60 "$prefix/bin/partita" cluster cert embed --role node --dir "$work/tls" -o "$work/tls-embed"
start_daemons daemon 'partita daemon listening on' "$prefix/bin/partita" --tls-dir "$work/tls" daemon --listen 127.0.0.1:0
run_step daemons 120 "$work/build/partita_embed" --daemons "${addresses[0]},${addresses[1]}" --tls-dir "$work/tls-embed" \
  --output "$work/run-daemons"
check_output daemons
grep -q '^runtime: 2 node(s) (daemons)' "$work/daemons.log" || fail "mode 2 did not run on the two daemons"
# Batches do not depend on where partitions live: the same job, the same metrics.
[ "$(grep '^final:' "$work/in-process.log")" = "$(grep '^final:' "$work/daemons.log")" ] ||
  fail "the daemons' final metrics differ from the in-process run's"

# The application's own model (--own-model): in process, then on two daemons of the
# application itself (--serve), which registered it as `partita daemon` has not.
run_step own-in-process 120 "$work/build/partita_embed" --own-model --output "$work/run-own"
check_output own-in-process
start_daemons serve 'partita_embed serving on' "$work/build/partita_embed" --serve 127.0.0.1:0 --tls-dir "$work/tls"
run_step own-daemons 120 "$work/build/partita_embed" --own-model --daemons "${addresses[0]},${addresses[1]}" \
  --tls-dir "$work/tls-embed" --output "$work/run-own-daemons"
check_output own-daemons
[ "$(grep '^final:' "$work/own-in-process.log")" = "$(grep '^final:' "$work/own-daemons.log")" ] ||
  fail "the application's daemons' final metrics with its own model differ from the in-process run's"
echo "embed test passed"
