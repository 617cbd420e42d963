#!/usr/bin/env bash
# The GPU machine's whole check in one call: build with CUDA for the local GPU, run every test
# (the CUDA suites run there instead of skipping), compute-sanitizer memcheck and racecheck on
# the CUDA suites, then rcuda's benchmarks beside PyTorch's on the same shapes.
# Logs go to $OUT (or /tmp/rcuda-gpu); a summary table is printed last.
#   scripts/gpu-check.sh [--no-sanitizer] [--no-bench] [--quick]
# With .devdeps/ carried (../shared/device/README.md: R, cpp-httplib), it also runs the R
# package's tests and `rcuda doctor` there. Without it, build with
# RCUDA_CMAKE_FLAGS=-DRCUDA_BUILD_CLI=OFF (the machine's cpp-httplib lacks its libraries).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/rcuda-gpu}
mkdir -p "$OUT"
[ -f .devdeps/device-env.sh ] && source .devdeps/device-env.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
sanitizer=1 bench=1 quick=""
for a in "$@"; do
  case $a in
    --no-sanitizer) sanitizer=0 ;;
    --no-bench) bench=0 ;;
    --quick) quick=--quick ;;
  esac
done
summary=()
step() { summary+=("$1: $2"); echo "== $1: $2"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
if ! cmake -S . -B build-gpu -G Ninja -DRCUDA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 ${RCUDA_CMAKE_FLAGS:-} \
      >"$OUT/configure.log" 2>&1 ||
   ! cmake --build build-gpu -j "$(nproc)" >"$OUT/build.log" 2>&1; then
  tail -60 "$OUT/configure.log" "$OUT/build.log"
  exit 1
fi
step build "ok in $(( $(date +%s) - start )) s"

build-gpu/tests/rcuda_tests >"$OUT/tests.log" 2>&1
status=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests from .* ran" "$OUT/tests.log" | tail -6
grep -E "^\[  FAILED  \]" "$OUT/tests.log" | head -30
step tests "exit $status; $(grep -E '^\[  PASSED' "$OUT/tests.log" | tail -1) $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/tests.log") failed, $(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$OUT/tests.log") skipped"

if [ -x build-gpu/apps/cli/rcuda ]; then
  build-gpu/apps/cli/rcuda doctor >"$OUT/doctor.txt" 2>&1
  step "rcuda doctor" "exit $? ($(tail -1 "$OUT/doctor.txt"))"
fi
if command -v Rscript >/dev/null; then
  BUILD=build-gpu R_CHECK=0 scripts/r-check.sh >"$OUT/r-check.log" 2>&1
  step "R package tests" "exit $? ($(grep -E '^r-check: [0-9]' "$OUT/r-check.log" | tail -1))"
fi

if [ $sanitizer = 1 ]; then
  for tool in memcheck racecheck; do
    timeout 240 compute-sanitizer --tool $tool --error-exitcode 3 \
      build-gpu/tests/rcuda_tests --gtest_filter='Cuda*' >"$OUT/$tool.log" 2>&1
    step "compute-sanitizer $tool" "exit $? ($(grep -E 'ERROR SUMMARY' "$OUT/$tool.log" | tail -1))"
  done
fi

if [ $bench = 1 ]; then
  build-gpu/bench/bench_cuda $quick >"$OUT/bench_rcuda.txt" 2>&1
  step bench_cuda "exit $?"
  PYTHONUNBUFFERED=1 python3 bench/torch_baseline.py $quick >"$OUT/bench_torch.txt" 2>&1
  step torch_baseline "exit $?"
  python3 bench/compare.py "$OUT/bench_rcuda.txt" "$OUT/bench_torch.txt" | tee "$OUT/compare.md"
fi
printf '%s\n' "${summary[@]}"
