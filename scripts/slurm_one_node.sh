#!/usr/bin/env bash
# A one-node Slurm cluster (munged, slurmctld, slurmd: Debian's slurmctld, slurmd, munge and slurm-client) for as long
# as COMMAND runs, in the network namespace this script runs in; its exit status is COMMAND's.
#
#   unshare -n scripts/slurm_one_node.sh [--cpus N] [--kill-wait S] -- COMMAND [ARG ...]
#
# Run it inside `unshare -n` (as root): the daemons then listen on the namespace's loopback alone and nothing leaves
# the machine. Everything lives in a fresh folder under ${TMPDIR:-/tmp} (configuration, munge key and socket, state,
# logs: SLURM_DIR in COMMAND's environment), removed at the end unless KEEP_SLURM_DIR=1. One node, `localhost`, with
# N CPUs (default 2) in partition `debug`; accounting off (sacct answers "accounting storage is disabled", as on a
# cluster without slurmdbd). COMMAND sees SLURM_CONF, so sbatch, squeue and scancel talk to this cluster.
set -euo pipefail
CPUS=2
KILL_WAIT=5
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus) CPUS=$2; shift 2 ;;
    --kill-wait) KILL_WAIT=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "slurm_one_node: unknown option $1; usage: $0 [--cpus N] [--kill-wait S] -- COMMAND" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "slurm_one_node: no COMMAND; usage: $0 [--cpus N] [--kill-wait S] -- COMMAND" >&2; exit 2; }
for tool in munged mungekey slurmctld slurmd sbatch squeue scancel ip; do
  command -v "$tool" >/dev/null || { echo "slurm_one_node: no $tool (apt-get install munge slurmctld slurmd slurm-client iproute2)" >&2; exit 3; }
done

if [ "$(ip -o link show | wc -l)" != 1 ]; then  # a namespace of its own holds loopback alone
  echo "slurm_one_node: run me inside unshare -n (this network namespace has interfaces other than lo)" >&2
  exit 2
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/slurm.XXXXXX")
chmod 700 "$DIR"
mkdir -p "$DIR/state" "$DIR/spool"

stop() {
  local status=$?
  for daemon in slurmd slurmctld munged; do
    [ -f "$DIR/$daemon.pid" ] && kill "$(cat "$DIR/$daemon.pid")" 2>/dev/null || true
  done
  for daemon in slurmd slurmctld munged; do  # wait for each to be gone (at most 10 s), then kill it
    [ -f "$DIR/$daemon.pid" ] || continue
    pid=$(cat "$DIR/$daemon.pid")
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  [ "${KEEP_SLURM_DIR:-0}" = 1 ] && echo "slurm_one_node: kept $DIR" >&2 || rm -rf "$DIR"
  exit "$status"
}
trap stop EXIT

# Loopback up, and a second loopback address: glibc's getaddrinfo (AI_ADDRCONFIG) answers nothing for "localhost"
# while 127.0.0.1 is the only address of the namespace, and slurmctld / slurmd resolve the host names they serve.
ip link set lo up
ip addr add 127.0.0.2/8 dev lo 2>/dev/null || true

mungekey --create --keyfile="$DIR/munge.key"
munged --force --socket="$DIR/munge.sock" --key-file="$DIR/munge.key" --pid-file="$DIR/munged.pid" \
  --log-file="$DIR/munged.log" --seed-file="$DIR/munged.seed"

cat >"$DIR/slurm.conf" <<CONF
ClusterName=mechrecall
SlurmctldHost=localhost
SlurmUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.sock
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
KillWait=$KILL_WAIT
NodeName=localhost CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$DIR/slurm.conf" SLURM_DIR="$DIR"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF" -N localhost
for _ in $(seq 300); do  # the node registers within seconds
  [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break
  sleep 0.1
done
[ "$(sinfo -h -o %t 2>/dev/null)" = idle ] || { echo "slurm_one_node: the node did not come up; see $DIR/*.log" >&2; KEEP_SLURM_DIR=1; exit 4; }

set +e
"$@"
