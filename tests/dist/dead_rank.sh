#!/usr/bin/env bash
# A rank that hangs or dies mid-loop must make the others fail within the group's timeout, never
# hang the job (src/dist/README.md, "When a rank dies or hangs"). Runs build/tests/rcuda_dist_fault
# under Open MPI's mpirun with 3 ranks, rank 1 failing at step 5:
#   - hangs (with and without shape checks): ranks 0 and 2 print a DistError naming rank 1, within
#     the timeout plus the probe's grace; the job exits non-zero;
#   - dies (SIGKILL): mpirun ends the job at once and exits non-zero; under --enable-recovery, where
#     mpirun lets the survivors run, they print the DistError naming rank 1 within the timeout.
# Usage: BUILD=build tests/dist/dead_rank.sh
set -u
build=${BUILD:-build}
fault="$build/tests/rcuda_dist_fault"
timeout_s=3
limit_s=$((timeout_s + 10))  # per run: the timeout, the probe's grace, start-up and teardown
[ -x "$fault" ] || { echo "dead_rank.sh: $fault not built" >&2; exit 2; }
if [ "$(id -u)" -eq 0 ]; then  # Open MPI refuses root without these (containers, CI)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

failures=0
fail() {
  echo "dead_rank.sh: FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME EXPECT MPIRUN_OPTIONS... -- PROGRAM_ARGS...
#   EXPECT: "named" (ranks 0 and 2 must print the DistError) or "ended" (the job must just end).
run() {
  local name=$1 expect=$2
  shift 2
  local options=()
  while [ "$1" != -- ]; do options+=("$1"); shift; done
  shift
  local out start rc elapsed
  out=$(mktemp)
  start=$(date +%s%N)
  timeout $((limit_s + 20)) mpirun --oversubscribe "${options[@]}" -np 3 "$fault" "$@" >"$out" 2>&1
  rc=$?
  elapsed=$((($(date +%s%N) - start) / 1000000))
  echo "dead_rank.sh: $name: exit status $rc after $elapsed ms"
  if [ "$rc" -eq 124 ]; then
    fail "$name: the job hung"
  elif [ "$elapsed" -gt $((limit_s * 1000)) ]; then
    fail "$name: the job took $elapsed ms, more than $limit_s s"
  fi
  grep -q "finished every step" "$out" && fail "$name: a rank finished every step"
  # Every DistError printed names rank 1 at the step it stopped.
  if grep "DistError" "$out" | grep -vq "rank 1 did not answer within $timeout_s s (all_reduce #5)"; then
    fail "$name: a DistError that does not name rank 1: $(grep DistError "$out")"
  fi
  case $expect in
    named)
      for r in 0 2; do
        local line
        line=$(grep "^\[rank $r\] DistError after" "$out")
        if [ -z "$line" ]; then
          fail "$name: rank $r printed no DistError"
        else
          echo "  $line"
          # "after S s": the timeout plus at most the probe's grace (3 s) and a second of slack.
          local waited=${line#*after }
          waited=${waited%% s:*}
          awk -v w="$waited" -v t="$timeout_s" 'BEGIN { exit !(w >= t - 0.1 && w <= t + 4) }' ||
            fail "$name: rank $r waited $waited s for a timeout of $timeout_s s"
        fi
      done
      [ "$rc" -ne 0 ] || [[ " ${options[*]} " == *" --enable-recovery "* ]] ||
        fail "$name: the job exited 0"
      ;;
    ended)
      [ "$rc" -ne 0 ] || fail "$name: the job exited 0"
      ;;
  esac
  rm -f "$out"
}

run "hung rank" named -- hung "$timeout_s"
run "hung rank, no shape checks" named -- hung "$timeout_s" nocheck
run "dead rank" ended -- dead "$timeout_s"
run "dead rank, no shape checks" ended -- dead "$timeout_s" nocheck
# mpirun --enable-recovery lets the survivors run on (and returns 0 whatever they return).
run "dead rank under --enable-recovery" named --enable-recovery -- dead "$timeout_s"

if [ "$failures" -gt 0 ]; then
  echo "dead_rank.sh: $failures failure(s)" >&2
  exit 1
fi
echo "dead_rank.sh: every surviving rank failed in time"
