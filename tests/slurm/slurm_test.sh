#!/usr/bin/env bash
# `partita start --slurm` under Debian's real Slurm (slurm-wlm), on hosts of their own.
#
#   slurm_test.sh PARTITA_BINARY SOURCE_DIR
#
# Makes two hosts (network namespaces with private addresses 10.78.S.1-2 on one bridge, as
# netns/netns_cluster.h makes them; each host's name in an /etc/netns/NS/hosts that `ip netns
# exec` mounts over /etc/hosts for what runs there), runs munged with a key of its own,
# slurmctld and one slurmd per host (each in a UTS namespace of its own whose host name is
# its node's) with a slurm.conf generated in a temporary folder (SLURM_CONF; nothing of
# Slurm's system-wide configuration is used or changed), then:
#   1. submits examples/slurm/train.sbatch on 2 nodes with a small generated-graph job: it must
#      end COMPLETED, and its parameter hash must be that of the same job on a cluster started
#      by hand (partita start --head, two nodes with start --address, job submit) on loopback;
#   2. kills (SIGKILL) the task of the second node while a job trains whose partitions fit
#      on one node (sbatch --no-kill, srun without --kill-on-bad-exit): the job recovers on
#      the first node and ends with the parameters of the same job run uninterrupted on the
#      hand-started cluster;
#   3. submits a long job the same way and scancels it while it trains: every partita process
#      of the step must be gone before Slurm would SIGKILL them (KillWait), the job CANCELLED,
#      and the allocation's credentials folder removed by task 0.
# Every wait has a deadline; the daemons, namespaces and hosts files are removed on any exit.
# Skipped (exit 77) only when not root or network namespaces cannot be made. The temporary
# folder is removed on success and kept (its path printed) on failure.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 PARTITA_BINARY SOURCE_DIR" >&2
  exit 2
fi
partita=$(readlink -f "$1")
source_dir=$(cd "$2" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the Slurm test needs root (network namespaces, slurmd)"
  exit 77
fi
probe="pts-probe-$$"
if ! ip netns add "$probe" 2>/dev/null; then
  echo "SKIP: cannot create network namespaces (ip netns add failed: no CAP_SYS_ADMIN?)"
  exit 77
fi
ip netns del "$probe"

for tool in munged munge slurmctld slurmd sbatch scontrol scancel sinfo unshare; do
  command -v "$tool" > /dev/null || { echo "FAIL: $tool is missing (scripts/setup.sh installs slurm-wlm and munge)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/partita-slurm-test.XXXXXX")
chmod 755 "$work"  # munge's socket folder must be searchable by all
subnet=$(( $$ % 250 + 1 ))
ns_sw="pts-$$-sw"
hosts=(sn0 sn1)
ns=("pts-$$-h0" "pts-$$-h1")
addr=("10.78.$subnet.1" "10.78.$subnet.2")
daemons=()   # munged, slurmctld, slurmds: killed on exit

cleanup() {
  local status=$?
  set +e
  # What the hosts still run (a failed step's slurmstepd and partita processes), then the daemons.
  for pid in $(host_processes slurmstepd) $(host_processes srun) $(host_partitas); do kill -9 "$pid" 2>/dev/null; done
  # A batch script and its srun outlive their slurmd when it is killed: anything that runs
  # from this test's folder (a mktemp name no other process uses).
  [ -n "${work:-}" ] && for pid in $(pgrep -f -- "$work/"); do kill -9 "$pid" 2>/dev/null; done
  for pid in "${daemons[@]}"; do kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  [ -n "${hand_home:-}" ] && [ -f "$hand_home/.partita/head.pid" ] && hand_down
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null; rm -rf "/etc/netns/$n"; done
  ip netns del "$ns_sw" 2>/dev/null
  if [ "$status" -eq 0 ]; then
    rm -rf "$work"
  else
    echo "Slurm test FAILED (exit $status); its files are in $work" >&2
  fi
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Waits until "$@" succeeds, at most $1 seconds (then fails naming $2).
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local until=$(( $(date +%s) + seconds ))
  until "$@" > /dev/null 2>&1; do
    [ "$(date +%s)" -lt "$until" ] || fail "$what: not within $seconds s"
    sleep 0.5
  done
}

# The partita processes running on the two hosts (in their network namespaces): slurmstepd
# detaches from slurmd, so a step's processes are not slurmd's descendants.
host_partitas() { host_processes partita-full; }
host_processes() {  # host_processes NAME: the pids of the processes named NAME on the hosts
  local nets=() i pid
  for i in 0 1; do nets+=("$(in_host "$i" readlink /proc/self/ns/net)"); done
  for pid in $(pgrep -x "$1"); do
    local net
    net=$(readlink "/proc/$pid/ns/net" 2>/dev/null) || continue
    [ "$net" = "${nets[0]}" ] || [ "$net" = "${nets[1]}" ] && echo "$pid"
  done
  return 0
}

in_host() {  # in_host I COMMAND...: runs COMMAND on host I
  local i=$1
  shift
  ip netns exec "${ns[$i]}" "$@"
}

# --- the hosts ---------------------------------------------------------------------------
ip netns add "$ns_sw"
ip -n "$ns_sw" link add br0 type bridge
ip -n "$ns_sw" link set br0 up
for i in 0 1; do
  ip netns add "${ns[$i]}"
  ip link add eth0 netns "${ns[$i]}" type veth peer name "p$i" netns "$ns_sw"
  ip -n "$ns_sw" link set "p$i" master br0 up
  ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev eth0
  ip -n "${ns[$i]}" link set eth0 up
  ip -n "${ns[$i]}" link set lo up
  mkdir -p "/etc/netns/${ns[$i]}"
  printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "${addr[0]}" "${hosts[0]}" "${addr[1]}" "${hosts[1]}" \
    > "/etc/netns/${ns[$i]}/hosts"
done

# --- munge and Slurm ---------------------------------------------------------------------
mkdir -m 700 "$work/munge-key"
dd if=/dev/urandom of="$work/munge-key/key" bs=1024 count=1 status=none
chmod 400 "$work/munge-key/key"
mkdir -m 755 "$work/munge"
munged --foreground --force --key-file="$work/munge-key/key" --socket="$work/munge/socket" \
  --pid-file="$work/munge/pid" --log-file="$work/munge/log" --seed-file="$work/munge/seed" > "$work/munge/out" 2>&1 &
daemons+=($!)
wait_for 20 "munged's socket" test -S "$work/munge/socket"

# This machine's processors as slurmd counts them (slurmd -C), for every node alike.
hardware=$(slurmd -C | head -1 | grep -o 'CPUs=.*ThreadsPerCore=[0-9]*')
[ -n "$hardware" ] || fail "slurmd -C printed no hardware line"
mkdir -p "$work/state" "$work/spool/${hosts[0]}" "$work/spool/${hosts[1]}" "$work/log"
: > "$work/plugstack.conf"
chmod 644 "$work/plugstack.conf"
# cgroup.conf beside slurm.conf: slurmd loads a cgroup plugin even with proctrack/linuxproc,
# and the autodetection finds no cgroup file system on this machine's tmpfs /sys/fs/cgroup.
printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n' > "$work/cgroup.conf"
cat > "$work/slurm.conf" <<CONF
ClusterName=partita-test
SlurmctldHost=${hosts[0]}(${addr[0]})
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd-%n.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd-%n.log
PlugStackConfig=$work/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=60
MinJobAge=600
NodeName=${hosts[0]} NodeAddr=${addr[0]} $hardware State=UNKNOWN
NodeName=${hosts[1]} NodeAddr=${addr[1]} $hardware State=UNKNOWN
PartitionName=test Nodes=${hosts[0]},${hosts[1]} Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf

# `ip netns exec` directly, not in_host: $! must be the daemon's pid (ip, unshare and sh
# exec it), not a subshell's.
ip netns exec "${ns[0]}" unshare --uts sh -c "hostname ${hosts[0]} && exec slurmctld -D -f $SLURM_CONF" \
  > "$work/log/slurmctld.out" 2>&1 &
daemons+=($!)
for i in 0 1; do
  ip netns exec "${ns[$i]}" unshare --uts sh -c "hostname ${hosts[$i]} && exec slurmd -D -f $SLURM_CONF" \
    > "$work/log/slurmd-$i.out" 2>&1 &
  daemons+=($!)
done
idle() { [ "$(in_host 0 sinfo -h -o '%D %t' | tr -d ' ')" = "2idle" ]; }
wait_for 60 "both slurmds idle in sinfo (see $work/log)" idle

# --- the job, on Slurm -------------------------------------------------------------------
submit=$work/submit
mkdir -p "$submit/examples/slurm" "$work/home"
cp "$source_dir/examples/slurm/train.sbatch" "$submit/"
cat > "$submit/small.yaml" <<'YAML'
data:
  generate: {kind: sbm, nodes: 3000, classes: 4, features: 16, avg_degree: 6, seed: 1}
  num_partitions: 2
model: {kind: graphsage, hidden: 16, layers: 2}
sampling: {fanouts: [5, 5], batch_size: 100}
train: {epochs: 2, optimizer: adam, learning_rate: 0.01, threads: 1, seed: 3}
YAML
sed 's/epochs: 2,/epochs: 100000,/' "$submit/small.yaml" > "$submit/long.yaml"
# Both partitions fit on one node, so that the job outlives the loss of the other.
cat > "$submit/recover.yaml" <<'YAML'
data:
  generate: {kind: sbm, nodes: 20000, classes: 4, features: 16, avg_degree: 6, seed: 2}
  num_partitions: 2
model: {kind: graphsage, hidden: 16, layers: 2}
sampling: {fanouts: [5, 5], batch_size: 10}
train: {epochs: 20, optimizer: adam, learning_rate: 0.01, threads: 1, seed: 3, checkpoint_every_steps: 10}
cluster: {partitions_per_node: 2}
YAML
# Without --kill-on-bad-exit (and with sbatch --no-kill), a task that dies leaves the step running.
cat > "$submit/recover.sbatch" <<'SBATCH'
#!/bin/bash
srun --label partita start --slurm --submit recover.yaml --runs "$SLURM_SUBMIT_DIR/partita-runs"
SBATCH

# Runs sbatch on host 0 from the submit folder (SLURM_SUBMIT_DIR) with `partita` (the binary
# under test) first on PATH; prints the job's id.
sbatch_job() {
  (cd "$submit" && in_host 0 env PATH="$(dirname "$partita"):$PATH" HOME="$work/home" \
    sbatch --parsable -N 2 "$@")
}
job_state() { in_host 0 scontrol show job "$1" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
finished() { case "$(job_state "$1")" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) return 0 ;; esac; return 1; }
logged_hash() { grep -ho 'parameter hash [0-9]*' "$@" | tail -1 | awk '{print $3}'; }

echo "== sbatch train.sbatch small.yaml"
id=$(sbatch_job train.sbatch small.yaml)
wait_for 400 "job $id to finish (state $(job_state "$id"))" finished "$id"
state=$(job_state "$id")
out="$submit/partita-$id.out"
[ "$state" = COMPLETED ] || { cat "$out" >&2; fail "job $id ended $state, not COMPLETED"; }
grep -q 'node(s) joined' "$out" || fail "task 0 did not report the nodes joining (see $out)"
slurm_hash=$(logged_hash "$submit"/partita-runs/small-*/driver.log)
[ -n "$slurm_hash" ] || fail "no parameter hash in the Slurm job's driver.log (see $submit/partita-runs)"
[ ! -e "$submit/.partita-slurm-$id" ] || fail "the allocation's credentials folder was not removed"
echo "Slurm job $id: COMPLETED, parameter hash $slurm_hash"

# --- the same job on a cluster started by hand ---------------------------------------------
hand_home=$work/hand
mkdir -p "$hand_home"
hand() { HOME="$hand_home" timeout --kill-after=10 "$@"; }
hand_down() { hand 60 "$partita" down --yes > "$work/hand-down.log" 2>&1 || true; }
echo "== the same job on a hand-started cluster"
hand 90 "$partita" start --head --listen 127.0.0.1:0 --runs "$hand_home/runs" > "$work/hand-head.log" 2>&1 \
  || { cat "$work/hand-head.log" >&2; fail "start --head"; }
head_address=$(cat "$hand_home/.partita/head_address")
for n in a b; do
  hand 90 "$partita" start --address "$head_address" --listen 127.0.0.1:0 --name "$n" --cache "$hand_home/cache-$n" \
    > "$work/hand-node-$n.log" 2>&1 || { cat "$work/hand-node-$n.log" >&2; fail "start --address (node $n)"; }
done
hand 400 "$partita" job submit "$submit/small.yaml" > "$work/hand-job.log" 2>&1 \
  || { cat "$work/hand-job.log" >&2; fail "the hand-started cluster's job failed"; }
hand_hash=$(logged_hash "$hand_home"/runs/small-*/driver.log)
hand 400 "$partita" job submit "$submit/recover.yaml" > "$work/hand-recover.log" 2>&1 \
  || { cat "$work/hand-recover.log" >&2; fail "the hand-started cluster's recover.yaml failed"; }
hand_recover_hash=$(logged_hash "$hand_home"/runs/recover-*/driver.log)
hand_down
[ -n "$hand_hash" ] || fail "no parameter hash in the hand-started job's driver.log"
echo "hand-started cluster: parameter hash $hand_hash"
[ "$slurm_hash" = "$hand_hash" ] || fail "parameter hash on Slurm $slurm_hash, on the hand-started cluster $hand_hash"

# --- a task lost to Slurm is a lost node -------------------------------------------------
echo "== a task killed mid-job"
id=$(sbatch_job --no-kill recover.sbatch)
out="$submit/slurm-$id.out"
log() { cat "$submit"/partita-runs/recover-*/driver.log 2>/dev/null; }
trains() { log | grep -qE 'epoch 2/20'; }
wait_for 300 "job $id to train (see $out)" trains
victim=$(for pid in $(pgrep -x partita-full); do
  [ "$(readlink "/proc/$pid/ns/net")" = "$(in_host 1 readlink /proc/self/ns/net)" ] && echo "$pid"; done; true)
[ "$(echo "$victim" | wc -w)" -eq 1 ] || fail "expected one partita process on ${hosts[1]}, found: $victim"
kill -9 "$victim"
wait_for 400 "job $id to finish after losing ${hosts[1]}" finished "$id"
log | grep -q "lost ${hosts[1]} .*restart 1 of at most" || { log >&2; fail "the job did not recover from losing ${hosts[1]}"; }
log | grep -q 'job recover-[0-9]*: epoch 20:' || { cat "$out" >&2; fail "the recovered job did not finish its 20 epochs"; }
recover_hash=$(logged_hash "$submit"/partita-runs/recover-*/driver.log)
[ "$recover_hash" = "$hand_recover_hash" ] \
  || fail "parameter hash after the lost task $recover_hash, uninterrupted on the hand-started cluster $hand_recover_hash"
echo "lost task: the job recovered (restart 1) to parameter hash $recover_hash"

# --- scancel of a running job -------------------------------------------------------------
echo "== scancel of a running job"
id=$(sbatch_job train.sbatch long.yaml)
out="$submit/partita-$id.out"
training() { grep -qE 'epoch 1[^0-9]' "$submit"/partita-runs/long-*/driver.log 2>/dev/null; }
wait_for 300 "job $id to train (see $out)" training
partitas=($(host_partitas))
# Task 0's supervisor, its head and node (and the job's driver), task 1's node.
[ "${#partitas[@]}" -ge 4 ] || fail "expected at least 4 partita processes on the hosts, found ${#partitas[@]}"
in_host 0 scancel "$id"
gone() { for pid in "${partitas[@]}"; do [ -d "/proc/$pid" ] && return 1; done; return 0; }
# Before KillWait (60 s): they stopped on Slurm's SIGTERM, not on its SIGKILL.
wait_for 50 "every partita process of job $id to stop after scancel (pids ${partitas[*]})" gone
wait_for 30 "job $id to be CANCELLED" finished "$id"
[ "$(job_state "$id")" = CANCELLED ] || fail "job $id ended $(job_state "$id") after scancel"
[ ! -e "$submit/.partita-slurm-$id" ] || fail "task 0 did not remove the credentials folder after scancel"
grep -q 'stopping the head and this node' "$out" || fail "task 0 did not stop on the signal (see $out)"
echo "scancel: ${#partitas[@]} partita processes stopped, job CANCELLED"
echo "PASS"
