#!/usr/bin/env bash
# `rcuda stress` on the GPU machine (docs/stress.md): build the CLI and the tests with CUDA, run
# the stress's tests (the GPU ones included), the command's checks on the GPU (a run, its
# baseline, a bad baseline file, SIGINT), then level 1 beside PyTorch's matmul throughput
# (bench/stress_vs_torch.py). Logs go to $OUT (default /tmp/rcuda-gpu); a summary is printed last.
#   bench/stress_gpu.sh [STAGE...]     stages: build tests cli bench (default: all, in that order;
#                                      a device call is limited to 10 minutes: build in one call,
#                                      the rest in a second)
# The CLI needs cpp-httplib: carry .devdeps (../shared/device/README.md); this script sources its
# device-env.sh when it is there.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/rcuda-gpu}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
if [ -f .devdeps/device-env.sh ]; then source .devdeps/device-env.sh; elif [ -f .devdeps-lean/device-env.sh ]; then source .devdeps-lean/device-env.sh; fi
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build tests cli bench)
summary=()
step() { summary+=("$1: $2"); echo "== $1: $2"; }

for s in "${stages[@]}"; do
  case $s in
    build)
      start=$(date +%s)
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
      if cmake -S . -B "$BUILD" -G Ninja -DRCUDA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
           >"$OUT/stress-configure.log" 2>&1 &&
         cmake --build "$BUILD" -j "$(nproc)" --target rcuda_cli rcuda_tests rcuda_fake_nvml \
           >"$OUT/stress-build.log" 2>&1; then
        step build "ok in $(( $(date +%s) - start )) s"
      else
        tail -n 40 "$OUT/stress-configure.log" "$OUT/stress-build.log"
        step build "FAILED (logs in $OUT)"
      fi ;;
    tests)
      "$BUILD"/tests/rcuda_tests --gtest_filter='Stress*:FakeNvml*' >"$OUT/stress-tests.log" 2>&1
      status=$?
      grep -E "^\[  FAILED  \]|^\[  SKIPPED \]|of the first run|^NVML" "$OUT/stress-tests.log" | head -20
      step tests "exit $status; $(grep -E '^\[  PASSED' "$OUT/stress-tests.log" | tail -1) $(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$OUT/stress-tests.log") skipped" ;;
    cli)
      CLI_CHECK_ONLY=stress scripts/cli-check.sh "$BUILD" >"$OUT/stress-cli.log" 2>&1
      status=$?
      grep -E "^(ok|FAIL) " "$OUT/stress-cli.log"
      step cli "exit $status; $(tail -1 "$OUT/stress-cli.log")" ;;
    bench)
      python3 bench/stress_vs_torch.py --rcuda "$BUILD/apps/cli/rcuda" >"$OUT/stress-bench.txt" 2>"$OUT/stress-bench.err"
      status=$?
      cat "$OUT/stress-bench.txt"
      [ $status -eq 0 ] || tail -20 "$OUT/stress-bench.err"
      step bench "exit $status; $(grep '^rcuda_stress_wall_s' "$OUT/stress-bench.txt")" ;;
    *) echo "stress_gpu: unknown stage $s (build tests cli bench)"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}"
