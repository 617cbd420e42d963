#!/usr/bin/env bash
# `make test` after the engine is built: the R package's tarball check (scripts/r-tarball-check.sh)
# runs beside the rest of the build and the C++ tests, its lines prefixed with "[r] ".
# Exits non-zero when either side fails, after both have finished.
#   BUILD=dir     the engine's CMake build (default: build); `rcuda` and `rcuda_cli` built already
#   JOBS=n        compile jobs for the rest of the build (default: nproc)
#   MPIRUN=cmd    how to start mpirun (the Makefile adds what root needs)
#
# Note [The R check beside the C++ build]
# On a 2-core machine `make test` was the build (about 14 minutes with CUDA), then the C++ tests
# (2.5), then the tarball check (7: install, then R CMD check's tests on one core). The tarball's
# engine comes from ccache once `rcuda` and `rcuda_cli` are built, and R CMD check leaves a core
# idle, so the tarball check starts as soon as the engine exists and the test binaries compile
# beside it (docs/build-time.md has the figures).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD:-build}
jobs=${JOBS:-$(nproc)}
read -r -a mpirun <<<"${MPIRUN:-mpirun --oversubscribe}"

r_log="$build/r-tarball-check.log"
(BUILD="$build" scripts/r-tarball-check.sh 2>&1; echo "$?" >"$r_log.status") |
  tee "$r_log" | sed -u 's/^/[r] /' &
r_pid=$!

cpp_failed=""
step() {
  echo "run-tests: $*"
  if ! "$@"; then cpp_failed="$cpp_failed"$'\n'"  $*"; fi
}
# The test binaries first (rcuda_every_test: not the benchmarks): a failure there fails every test
# after it, so stop at it.
if cmake --build "$build" -j "$jobs" --target rcuda_every_test; then
  step "$build/tests/rcuda_tests"
  step "$build/tests/rcuda_server_tests"
  step env "${mpirun[@]}" -np 2 "$build/tests/rcuda_dist_tests"
  step env "${mpirun[@]}" -np 3 "$build/tests/rcuda_dist_tests"
  step env BUILD="$build" tests/dist/dead_rank.sh
  step env BUILD="$build" tests/dist/slurm_single_node.sh
  step scripts/cli-check.sh "$build"
else
  cpp_failed=$'\n'"  cmake --build $build"
fi

wait "$r_pid"
r_status=$(cat "$r_log.status" 2>/dev/null || echo 1)
rm -f "$r_log.status"

status=0
if [ -n "$cpp_failed" ]; then
  echo "run-tests: FAILED:$cpp_failed" >&2
  status=1
fi
if [ "$r_status" != 0 ]; then
  echo "run-tests: FAILED: scripts/r-tarball-check.sh (exit $r_status; log $r_log)" >&2
  status=1
fi
[ "$status" = 0 ] && echo "run-tests: every test passed"
exit "$status"
