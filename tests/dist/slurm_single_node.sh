#!/usr/bin/env bash
# The process groups and data-parallel training started by Slurm's srun instead of mpirun
# (docs/distributed.md, "Launching"): a single-node Slurm (slurmctld, slurmd and munged from
# Debian's slurm-wlm and munge) is configured in a temporary folder, on loopback ports, run for
# the test and stopped. srun starts 2 and then 3 ranks of rcuda_dist_tests through PMIx (Open
# MPI finds Slurm's PMIx server), which read their ranks from Slurm's variables.
#   BUILD=build tests/dist/slurm_single_node.sh
# Exits non-zero when a check fails or Slurm cannot be started (the logs are printed).
set -uo pipefail
BUILD=${BUILD:-build}
TESTS=$(realpath "$BUILD/tests/rcuda_dist_tests")
for tool in srun slurmctld slurmd munged sinfo scontrol; do
  command -v "$tool" >/dev/null || { echo "slurm_single_node: $tool not found (scripts/install-deps.sh installs slurm-wlm and munge)"; exit 1; }
done
[ -x "$TESTS" ] || { echo "slurm_single_node: $TESTS missing: build first"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "slurm_single_node: slurmd must run as root to start jobs (run as root, as CI does)"; exit 1; }

dir=$(mktemp -d /tmp/rcuda-slurm.XXXXXX)
mkdir -p "$dir/state" "$dir/spool" "$dir/run"
stop() {
  SLURM_CONF=$dir/slurm.conf scontrol shutdown >/dev/null 2>&1
  for pid in run/slurmd.pid run/slurmctld.pid; do
    [ -f "$dir/$pid" ] && kill "$(cat "$dir/$pid")" 2>/dev/null
  done
  munged -s --socket="$dir/run/munge.sock" >/dev/null 2>&1
  sleep 1
  rm -rf "$dir"
}
trap stop EXIT
fail() {
  echo "slurm_single_node: $1"
  tail -n 20 "$dir"/*.log 2>/dev/null
  exit 1
}

# Two free loopback ports for the controller and the node daemon.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')

head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 400 "$dir/munge.key"
munged -f --key-file="$dir/munge.key" --socket="$dir/run/munge.sock" --pid-file="$dir/run/munged.pid" \
  --seed-file="$dir/run/munged.seed" --log-file="$dir/munged.log" || fail "munged did not start"

host=$(hostname -s)
cat >"$dir/slurm.conf" <<EOF
ClusterName=rcudatest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -i || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" || fail "slurmd did not start"
for _ in $(seq 1 50); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %T | grep -q idle || fail "the node never became idle"

failures=0
for n in 2 3; do
  out="$dir/ranks$n.txt"
  # --overcommit: 3 ranks on a 2-CPU machine, as mpirun --oversubscribe in make test.
  RCUDA_EXPECT_LAUNCHER=slurm timeout 300 srun -n "$n" --overcommit --mpi=pmix "$TESTS" \
    --gtest_filter="-Nccl*" >"$out" 2>&1
  status=$?
  if [ $status -eq 0 ] && grep -q "\[  PASSED  \]" "$out" && grep -q "$n ranks" "$out"; then
    echo "ok   - srun -n $n: $(grep -m1 '\[  PASSED  \]' "$out" | sed 's/.*PASSED  \] *//; s/\.$//') on $n ranks"
  else
    echo "FAIL - srun -n $n (exit $status)"
    tail -n 30 "$out"
    failures=$((failures + 1))
  fi
done
exit $failures
