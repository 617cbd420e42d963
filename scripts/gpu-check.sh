#!/usr/bin/env bash
# The GPU machine's whole check: build with CUDA for the local GPU, run every test (the CUDA
# suites run there instead of skipping), compute-sanitizer memcheck and racecheck on the CUDA
# suites, the rcuda command with the real driver (doctor, monitor --profile, exporter), the R
# package's tests, then rcuda's benchmarks beside PyTorch's on the same shapes.
# Logs go to $OUT (or /tmp/rcuda-gpu); a summary is printed last.
#   scripts/gpu-check.sh [STAGE...]     stages: build tests cli memcheck racecheck r bench train train_r
#                                       layers fp8 profile r_bench jit onnx dlpack stress tarball
#                                       (train: the training step beside PyTorch's, the loss
#                                       curves compared, and the per-op host cost; layers: the
#                                       ResNet-18, MNIST-CNN and LSTM training steps and the
#                                       CUDA-graph steps beside PyTorch's; fp8: the fp8 tests and
#                                       the fp8 MLP block beside its bf16 twin; profile: the
#                                       graphs' kernels under Nsight Compute; r_bench: from R,
#                                       the MLP step (train_r), the MNIST CNN step beside
#                                       PyTorch's, the collector's settings swept, and fit()
#                                       against the hand-written loop; jit: jit_trace and
#                                       onnx_export's R tests and the traced CNN's host time;
#                                       onnx: ONNX import's tests, node tests and benchmark;
#                                       serve: the server's tests and load benchmark)
#                                       (default: all, in that order; a device call is limited
#                                       to 10 minutes, so split them over two calls)
#   QUICK=1 shortens the benchmarks; SANITIZE_FILTER=gtest-filter narrows the sanitizer runs.
# With .devdeps/ carried (../shared/device/README.md: R, cpp-httplib), it also builds the CLI
# and runs the R tests there. Without it, build with RCUDA_CMAKE_FLAGS=-DRCUDA_BUILD_CLI=OFF
# (the machine's cpp-httplib lacks its libraries).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/rcuda-gpu}
mkdir -p "$OUT"
if [ -f .devdeps/device-env.sh ]; then source .devdeps/device-env.sh; elif [ -f .devdeps-lean/device-env.sh ]; then source .devdeps-lean/device-env.sh;
elif [ -f .devdeps-cpp/device-env.sh ]; then source .devdeps-cpp/device-env.sh; fi
# ONNX's node tests (Debian's libonnx-testdata, which the GPU machine lacks): carry
# .devnode/node.tgz (tar czf .devnode/node.tgz -C /usr/share/libonnx-testdata/data node).
if [ -f .devnode/node.tgz ] && [ ! -d /usr/share/libonnx-testdata/data/node ]; then
  [ -d /tmp/onnx-testdata/node ] || { mkdir -p /tmp/onnx-testdata && tar xzf .devnode/node.tgz -C /tmp/onnx-testdata; }
  export RCUDA_ONNX_NODE_DATA=/tmp/onnx-testdata/node
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build tests cli memcheck racecheck r bench)
summary=()
step() { summary+=("$1: $2"); echo "== $1: $2"; }
RCUDA=build-gpu/apps/cli/rcuda
# Sanitizers run the CUDA suites minus the tests sized for the hardware (4 GiB tensors, 1e7
# samples, 64 MiB reductions), which take minutes under instrumentation and add no coverage.
SANITIZED=${SANITIZE_FILTER:-"Cuda*:-CudaRandomStreams.MoreThanTwoToThe31*:CudaRandomStreams.NormalStatistics*:CudaReduction.LargeInputs*:CudaMemory.*"}

run_build() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  local start=$(date +%s)
  if ! cmake -S . -B build-gpu -G Ninja -DRCUDA_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 ${RCUDA_CMAKE_FLAGS:-} \
        >"$OUT/configure.log" 2>&1 ||
     ! cmake --build build-gpu -j "$(nproc)" >"$OUT/build.log" 2>&1; then
    tail -n 60 "$OUT/configure.log" "$OUT/build.log"
    exit 1
  fi
  step build "ok in $(( $(date +%s) - start )) s"
}

run_tests() {
  # PyTorch's gradients of composite models and its layers' values and gradients for
  # tests/golden (skipped without them).
  export RCUDA_GOLDEN_DIR=/tmp/rcuda-golden
  python3 tests/golden/make_golden_grads.py $RCUDA_GOLDEN_DIR >"$OUT/golden.log" 2>&1 ||
    echo "golden gradients: $(tail -1 "$OUT/golden.log")"
  python3 tests/golden/make_golden_layers.py $RCUDA_GOLDEN_DIR >"$OUT/golden_layers.log" 2>&1 ||
    echo "golden layers: $(tail -1 "$OUT/golden_layers.log")"
  python3 tests/golden/make_golden_scaler.py $RCUDA_GOLDEN_DIR >"$OUT/golden_scaler.log" 2>&1 ||
    echo "golden scaler: $(tail -1 "$OUT/golden_scaler.log")"
  python3 tests/golden/make_golden_autocast.py $RCUDA_GOLDEN_DIR >"$OUT/golden_autocast.log" 2>&1 ||
    echo "golden autocast: $(tail -1 "$OUT/golden_autocast.log")"
  python3 tests/golden/make_golden_rnn.py $RCUDA_GOLDEN_DIR >"$OUT/golden_rnn.log" 2>&1 ||
    echo "golden recurrent layers: $(tail -1 "$OUT/golden_rnn.log")"
  build-gpu/tests/rcuda_tests >"$OUT/tests.log" 2>&1
  local status=$?
  grep -E "^\[  FAILED  \]" "$OUT/tests.log" | head -30
  # A crash (a signal: exit above 128) ends the binary mid-test: name that test, then run the
  # tests after it, so that one crash does not hide the rest.
  if [ "$status" -gt 128 ]; then
    local crashed
    crashed=$(grep '^\[ RUN      \]' "$OUT/tests.log" | tail -1 | awk '{print $4}')
    step "tests crashed" "signal $((status - 128)) in $crashed"
    build-gpu/tests/rcuda_tests --gtest_filter="-$crashed" >"$OUT/tests_after_crash.log" 2>&1
    grep -E "^\[  FAILED  \]|^\[  PASSED|^\[ RUN      \]" "$OUT/tests_after_crash.log" | tail -20
  fi
  step tests "exit $status; $(grep -E '^\[  PASSED' "$OUT/tests.log" | tail -1) $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$OUT/tests.log") failed, $(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$OUT/tests.log") skipped"
  grep -E "^\[  SKIPPED \] [A-Za-z]" "$OUT/tests.log" | grep Cuda | head
}

run_cli() {
  [ -x $RCUDA ] || { step cli "not built"; return; }
  $RCUDA doctor >"$OUT/doctor.txt" 2>&1
  step "rcuda doctor" "exit $? ($(tail -1 "$OUT/doctor.txt"))"
  $RCUDA doctor --json >"$OUT/doctor.json" 2>/dev/null
  step "rcuda doctor --json" "$(python3 tests/cli/validate_doctor_json.py "$OUT/doctor.json" 2>&1 | tail -1)"
  $RCUDA monitor --duration 10 --profile --output "$OUT/monitor.csv" 2>"$OUT/monitor.err"
  step "rcuda monitor" "exit $? ($(grep -o 'after it .*' "$OUT/monitor.err"))"
  cat "$OUT/monitor.err"
  # Where a monitor's CPU goes: its threads and their CPU ticks after 4 s, then a run with
  # OpenBLAS limited to one thread.
  $RCUDA monitor --duration 6 >/dev/null 2>&1 &
  local mpid=$!
  sleep 4
  for t in /proc/$mpid/task/*; do echo "$(cat $t/comm) $(awk '{print $14 + $15}' $t/stat)"; done |
    sort | uniq -c | sort -rn | head -12
  wait $mpid
  OPENBLAS_NUM_THREADS=1 $RCUDA monitor --duration 10 --output /dev/null 2>&1 | grep -o 'after it .*' |
    sed 's/^/OPENBLAS_NUM_THREADS=1: /'
  $RCUDA exporter --port 9477 >"$OUT/exporter.log" 2>&1 &
  local pid=$! code=""
  sleep 2
  code=$(python3 -c '
import sys, urllib.request
r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:9477/metrics",
                           headers={"Accept": "application/openmetrics-text"}), timeout=5)
open(sys.argv[1], "wb").write(r.read()); print(r.status)' "$OUT/metrics.txt")
  kill -INT $pid; wait $pid
  step "rcuda exporter" "scrape $code, $(grep -c '^rcuda_gpu_' "$OUT/metrics.txt") GPU samples, last line '$(tail -1 "$OUT/metrics.txt")', exit on SIGINT $?"
}

run_sanitizer() {
  timeout 280 compute-sanitizer --tool "$1" --error-exitcode 3 \
    build-gpu/tests/rcuda_tests --gtest_filter="$SANITIZED" >"$OUT/$1.log" 2>&1
  step "compute-sanitizer $1" "exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$1.log" | tail -1); $(grep -E '^\[  PASSED' "$OUT/$1.log" | tail -1))"
}

run_r() {
  command -v Rscript >/dev/null || { step "R package tests" "no R (carry .devdeps)"; return; }
  BUILD=build-gpu R_CHECK=0 scripts/r-check.sh >"$OUT/r-check.log" 2>&1
  step "R package tests" "exit $? ($(grep -E '^r-check: [0-9]' "$OUT/r-check.log" | tail -1))"
}

# DLPack with PyTorch's CUDA tensors (docs/dlpack.md): the R package against build-gpu, its
# DLPack tests with a CUDA PyTorch. Needs R and reticulate (r-cran-reticulate and its Depends
# among the carried .debs) beside the engine's libraries.
run_dlpack() {
  build-gpu/tests/rcuda_tests --gtest_filter='DLPack*' >"$OUT/dlpack-cpp.log" 2>&1
  step "DLPack C++ tests" "exit $? ($(grep -E '^\[  PASSED' "$OUT/dlpack-cpp.log" | tail -1))"
  command -v Rscript >/dev/null || { step "DLPack R tests" "no R (carry .devdeps)"; return; }
  local lib=build-gpu/r-lib
  mkdir -p "$lib" && rm -f r/src/*.o r/src/*.so
  RCUDA_HOME=$PWD RCUDA_BUILD=$PWD/build-gpu R CMD INSTALL --no-multiarch -l "$lib" r \
    >"$OUT/dlpack-r-install.log" 2>&1 || { step "DLPack R tests" "install failed"; return; }
  (cd r/tests && RETICULATE_PYTHON=${RETICULATE_PYTHON:-$(command -v python3)} R_LIBS=../../$lib \
    Rscript -e 'library(testthat); library(rcuda); r <- as.data.frame(test_file("testthat/test-dlpack.R", reporter = "summary")); cat(sprintf("dlpack: %d expectations, %d failed, %d skipped\n", sum(r$nb), sum(r$failed), sum(r$skipped)))') \
    >"$OUT/dlpack-r.log" 2>&1
  step "DLPack R tests" "exit $? ($(grep -E '^dlpack: ' "$OUT/dlpack-r.log" | tail -1))"
}

# `rcuda stress` (docs/stress.md): its tests, its checks on the GPU and level 1 beside PyTorch.
run_stress() {
  OUT=$OUT BUILD=build-gpu bench/stress_gpu.sh tests cli bench >"$OUT/stress.log" 2>&1
  step "rcuda stress" "exit $? ($(tail -3 "$OUT/stress.log" | tr '\n' ' '))"
}

# The source tarball installed the R way with CUDA on (build-gpu's CMake choices), a short
# training run from that library; R CMD check left out (R_CHECK=0), the r stage runs the tests.
run_tarball() {
  command -v Rscript >/dev/null || { step "R tarball with CUDA" "no R (carry .devdeps)"; return; }
  BUILD=build-gpu R_CHECK=0 scripts/r-tarball-check.sh >"$OUT/r-tarball.log" 2>&1
  step "R tarball with CUDA" "exit $? ($(grep -E 'training on|loss ' "$OUT/r-tarball.log" | tr '\n' ' '))"
}

run_bench() {
  local quick=""
  [ -n "${QUICK:-}" ] && quick=--quick
  build-gpu/bench/bench_cuda $quick >"$OUT/bench_rcuda.txt" 2>&1
  step bench_cuda "exit $?"
  PYTHONUNBUFFERED=1 python3 bench/torch_baseline.py $quick >"$OUT/bench_torch.txt" 2>&1
  step torch_baseline "exit $?"
  python3 bench/compare.py "$OUT/bench_rcuda.txt" "$OUT/bench_torch.txt" | tee "$OUT/compare.md"
}

run_train() {
  local dir=/tmp/rcuda-train
  PYTHONUNBUFFERED=1 python3 bench/torch_train_mlp.py $dir --device cuda >"$OUT/train_torch.txt" 2>&1
  step torch_train_mlp "exit $?"
  build-gpu/bench/bench_train $dir --device cuda >"$OUT/train_rcuda.txt" 2>&1
  step bench_train "exit $?"
  cat "$OUT/train_torch.txt" "$OUT/train_rcuda.txt"
  # The same loop on the machine's CPU beside PyTorch's CPU (50 steps: the curves and the time).
  PYTHONUNBUFFERED=1 python3 bench/torch_train_mlp.py $dir-cpu --device cpu --steps 50 >"$OUT/train_torch_cpu.txt" 2>&1
  build-gpu/bench/bench_train $dir-cpu --device cpu --steps 50 >"$OUT/train_rcuda_cpu.txt" 2>&1
  step "bench_train cpu" "exit $?"
  cat "$OUT/train_torch_cpu.txt" "$OUT/train_rcuda_cpu.txt"
  OMP_NUM_THREADS=1 build-gpu/bench/bench_op_overhead >"$OUT/overhead.txt" 2>&1
  step bench_op_overhead "exit $?"
  cat "$OUT/overhead.txt"
}

# Installs the R package into build-gpu/r-lib when missing or older than a file under r/.
install_r() {
  if [ ! -f build-gpu/r-lib/rcuda/DESCRIPTION ] ||
     [ -n "$(find r -newer build-gpu/r-lib/rcuda/DESCRIPTION -type f | head -1)" ]; then
    mkdir -p build-gpu/r-lib
    rm -f r/src/*.o r/src/*.so
    MAKEFLAGS=-j$(nproc) RCUDA_HOME=$PWD RCUDA_BUILD=$PWD/build-gpu R CMD INSTALL --no-multiarch -l build-gpu/r-lib r \
      >"$OUT/r-install.log" 2>&1 || { tail -20 "$OUT/r-install.log"; return 1; }
  fi
}

# Traced graphs and ONNX export from R (r/tests/testthat/test-jit.R, against ONNX Runtime), then
# the traced MNIST CNN's host time beside the R module's (bench/bench_jit_trace_r.R).
run_jit() {
  command -v Rscript >/dev/null || { step jit "no R (carry .devdeps)"; return; }
  install_r || { step jit "R package did not install"; return; }
  (cd r/tests/testthat && R_LIBS=$PWD/../../../build-gpu/r-lib Rscript -e \
    'library(testthat); library(rcuda); test_file("test-jit.R", reporter = "summary", stop_on_failure = TRUE)') \
    >"$OUT/jit_tests.txt" 2>&1
  step "test-jit.R" "exit $? ($(grep -cE '^[0-9]+\. ' "$OUT/jit_tests.txt") listed)"
  tail -15 "$OUT/jit_tests.txt"
  R_LIBS=build-gpu/r-lib Rscript bench/bench_jit_trace_r.R >"$OUT/jit_bench.txt" 2>&1
  step bench_jit_trace_r "exit $?"
  cat "$OUT/jit_bench.txt"
}

# ONNX import on the GPU: the import tests (PyTorch's models, CUDA-graph replay), ONNX's node
# tests on CUDA with their per-operator table, the ResNet-18 benchmark beside PyTorch and ONNX
# Runtime (bench/onnx_resnet.sh), and onnx_load's R tests when R is there.
run_onnx() {
  local node_tests=""
  [ -d "${RCUDA_ONNX_NODE_DATA:-/usr/share/libonnx-testdata/data/node}" ] && node_tests=":OnnxNodeTests.*Cuda"
  build-gpu/tests/rcuda_tests --gtest_filter="*OnnxImport*:*PyTorchModels*$node_tests" \
    >"$OUT/onnx_tests.log" 2>&1
  local status=$?
  grep -E "^\[  FAILED  \]|Failure" "$OUT/onnx_tests.log" | head -20
  step "onnx tests" "exit $status; $(grep -E '^\[  PASSED' "$OUT/onnx_tests.log" | tail -1)"
  if [ -n "$node_tests" ]; then
    build-gpu/tests/onnx_node_runner --device cuda --failures-only \
      --report "$OUT/onnx-node-report-cuda.md" >"$OUT/onnx_node_cuda.txt" 2>&1
    step "onnx node tests on cuda" "$(tail -1 "$OUT/onnx_node_cuda.txt")"
    grep -E "^failed" "$OUT/onnx_node_cuda.txt" | head -20
    tail -1 "$OUT/onnx-node-report-cuda.md"
  fi
  bench/onnx_resnet.sh >"$OUT/onnx_bench.txt" 2>&1
  step "onnx_resnet.sh" "exit $?"
  cat "$OUT/onnx_bench.txt"
  if command -v Rscript >/dev/null && install_r; then
    (cd r/tests/testthat && R_LIBS=$PWD/../../../build-gpu/r-lib Rscript -e \
      'library(testthat); library(rcuda); test_file("test-onnx-load.R", reporter = "summary")') \
      >"$OUT/onnx_r.txt" 2>&1
    step "test-onnx-load.R" "exit $?"
    tail -15 "$OUT/onnx_r.txt"
  fi
}

# The inference server (docs/serving.md): the runtime's and the server's tests on the GPU, then
# bench/serve_load.sh (hey at 1, 16 and 64 clients, MLP and ResNet-18, with and without dynamic
# batching, beside the in-process throughput; the overload check); with R, test-serve.R.
run_serve() {
  build-gpu/tests/rcuda_tests --gtest_filter='*Runtime*:*Served*:*Repository*:*FusedBiasRelu*' \
    >"$OUT/serve_runtime.log" 2>&1
  step "runtime tests" "exit $?; $(grep -E '^\[  PASSED' "$OUT/serve_runtime.log" | tail -1) $(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$OUT/serve_runtime.log") skipped"
  grep -E "^\[  FAILED  \]" "$OUT/serve_runtime.log" | head
  if [ -x build-gpu/tests/rcuda_server_tests ]; then
    build-gpu/tests/rcuda_server_tests >"$OUT/serve_server.log" 2>&1
    step "server tests" "exit $?; $(grep -E '^\[  PASSED' "$OUT/serve_server.log" | tail -1)"
    grep -E "^\[  FAILED  \]" "$OUT/serve_server.log" | head
  fi
  if command -v hey >/dev/null; then
    BUILD=build-gpu OUT="$OUT/serve" REQUESTS=${SERVE_REQUESTS:-3000} RUN_LIMIT_S=${SERVE_RUN_S:-15} INPROCESS_S=5 \
      OVERLOAD_S=${SERVE_OVERLOAD_S:-30} bench/serve_load.sh cuda >"$OUT/serve_bench.txt" 2>&1
    step "serve_load.sh" "exit $?"
    cat "$OUT/serve_bench.txt"
  else
    step "serve_load.sh" "no hey (carry it: .devdeps-cpp/hey)"
  fi
  if command -v Rscript >/dev/null && install_r; then
    (cd r/tests/testthat && R_LIBS=$PWD/../../../build-gpu/r-lib RCUDA_CLI=$PWD/../../../$RCUDA Rscript -e \
      'library(testthat); library(rcuda); for (f in c("test-serve.R", "test-serving-example.R")) test_file(f, reporter = "summary")') \
      >"$OUT/serve_r.txt" 2>&1
    step "test-serve.R" "exit $?"
    tail -15 "$OUT/serve_r.txt"
  fi
}

# The MLP step from R (bench/bench_train_r.R) on the data the train stage wrote.
run_train_r() {
  command -v Rscript >/dev/null || { step "train_r" "no R (carry .devdeps)"; return; }
  [ -f /tmp/rcuda-train/x.bin ] ||
    PYTHONUNBUFFERED=1 python3 bench/torch_train_mlp.py /tmp/rcuda-train --device cuda >"$OUT/train_torch.txt" 2>&1
  # (Re)installed when missing or older than a file under r/ (an install left by an earlier run).
  if [ ! -f build-gpu/r-lib/rcuda/DESCRIPTION ] ||
     [ -n "$(find r -newer build-gpu/r-lib/rcuda/DESCRIPTION -type f | head -1)" ]; then
    mkdir -p build-gpu/r-lib
    rm -f r/src/*.o r/src/*.so
    MAKEFLAGS=-j$(nproc) RCUDA_HOME=$PWD RCUDA_BUILD=$PWD/build-gpu R CMD INSTALL --no-multiarch -l build-gpu/r-lib r \
      >"$OUT/r-install.log" 2>&1 || { tail -20 "$OUT/r-install.log"; return; }
  fi
  R_LIBS=build-gpu/r-lib Rscript bench/bench_train_r.R /tmp/rcuda-train --device cuda >"$OUT/train_r.txt" 2>&1
  step "bench_train_r" "exit $?"
  grep -E "torch_mlp|peak|base" "$OUT/train_torch.txt"
  cat "$OUT/train_r.txt"
}

# The R package's benchmarks (bench/README.md, "From R"): the MLP step and its memory
# (bench_train_r.R, as train_r), the MNIST CNN step and its memory beside PyTorch's
# (bench_cnn_r.R from torch_cnn.py's weights), the collector's settings (bench_r_memory.R) and
# fit() against the hand-written loop (bench_fit_r.R). About two minutes.
run_r_bench() {
  command -v Rscript >/dev/null || { step "r_bench" "no R (carry .devdeps)"; return; }
  run_train_r
  # The time rule allowed up to 0.4 of the live bytes (memory traded for time; r/README.md).
  R_LIBS=build-gpu/r-lib Rscript bench/bench_train_r.R /tmp/rcuda-train --device cuda --flat-steps 2000 \
    --gc max_live_fraction=0.4 >"$OUT/train_r_max04.txt" 2>&1
  step "bench_train_r --gc max_live_fraction=0.4" "exit $?"
  local dir=/tmp/rcuda-cnn
  PYTHONUNBUFFERED=1 python3 bench/torch_cnn.py --device cuda --save $dir >"$OUT/torch_cnn.txt" 2>&1
  step "torch_cnn.py --save" "exit $?"
  R_LIBS=build-gpu/r-lib Rscript bench/bench_cnn_r.R --device cuda --dir $dir >"$OUT/cnn_r.txt" 2>&1
  step "bench_cnn_r" "exit $?"
  R_LIBS=build-gpu/r-lib Rscript bench/bench_cnn_r.R --device cuda --dir $dir --gc max_live_fraction=0.4 \
    >"$OUT/cnn_r_max04.txt" 2>&1
  grep -E "step_us|peak_allocated|base_allocated" "$OUT/torch_cnn.txt"
  cat "$OUT/cnn_r.txt"
  echo "-- with --gc max_live_fraction=0.4:"; grep -E "step_us|peak" "$OUT/cnn_r_max04.txt"
  R_LIBS=build-gpu/r-lib Rscript bench/bench_r_memory.R --device cuda \
    --settings ${R_MEMORY_SETTINGS:-reference,default,no_release,no_safe_points,max_0.4,max_1} \
    >"$OUT/r_memory.md" 2>&1
  step "bench_r_memory" "exit $?"
  cat "$OUT/r_memory.md"
  [ -z "${RCUDA_FASHION_MNIST:-}" ] && [ -d .devdata/fashion-mnist ] && export RCUDA_FASHION_MNIST=$PWD/.devdata/fashion-mnist
  R_LIBS=build-gpu/r-lib Rscript bench/bench_fit_r.R --device cuda >"$OUT/fit_r.txt" 2>&1
  step "bench_fit_r" "exit $?"
  cat "$OUT/fit_r.txt"
  echo "== r_bench summary"
  grep -hE "peak_allocated_MB|_step_us|torch_mlp.*peak|mnistcnn_b128_fp32_step_us" "$OUT/train_torch.txt" "$OUT/torch_cnn.txt" 2>/dev/null
  grep -hE "step_us|peak|rel_diff_to_torch|over_loop|identical" "$OUT/train_r.txt" "$OUT/cnn_r.txt" "$OUT/fit_r.txt"
  echo "-- rcuda.gc_max_live_fraction = 0.4:"
  grep -hE "step_us|peak" "$OUT/train_r_max04.txt" "$OUT/cnn_r_max04.txt"
}

# ResNet-18 (fp32; bf16 channels-last) and the MNIST CNN (fp32) training steps from C++ beside
# PyTorch's same models (bench/README.md), and PyTorch's bf16 autocast (the anchor's setting) for
# reference; compare.py pairs them into $OUT/layers_compare.md.
run_layers() {
  local quick=""
  [ -n "${QUICK:-}" ] && quick="--steps 3 --chunks 3 --warmup 2"
  local ours="$OUT/layers_rcuda.txt" theirs="$OUT/layers_torch.txt" status=0
  : >"$ours"; : >"$theirs"
  for args in "" "--dtype bfloat16 --channels-last" "--autocast --channels-last"; do
    build-gpu/bench/bench_resnet --device cuda $args $quick >>"$ours" 2>&1 || status=$?
  done
  for args in "" "--autocast"; do
    build-gpu/bench/bench_cnn --device cuda $args $quick >>"$ours" 2>&1 || status=$?
  done
  build-gpu/bench/bench_lstm --device cuda $quick >>"$ours" 2>&1 || status=$?
  build-gpu/bench/bench_graph >>"$ours" 2>&1 || status=$?
  step "bench_resnet, bench_cnn, bench_lstm, bench_graph" "exit $status"
  status=0
  for args in "" "--dtype bfloat16 --channels-last" "--autocast --channels-last"; do
    PYTHONUNBUFFERED=1 python3 bench/torch_resnet.py --device cuda $args $quick >>"$theirs" 2>&1 || status=$?
  done
  for args in "" "--autocast"; do
    PYTHONUNBUFFERED=1 python3 bench/torch_cnn.py --device cuda $args $quick >>"$theirs" 2>&1 || status=$?
  done
  PYTHONUNBUFFERED=1 python3 bench/torch_lstm.py --device cuda $quick >>"$theirs" 2>&1 || status=$?
  PYTHONUNBUFFERED=1 python3 bench/torch_graph.py >>"$theirs" 2>&1 || status=$?
  step "torch_resnet.py, torch_cnn.py, torch_lstm.py, torch_graph.py" "exit $status"
  python3 bench/compare.py "$ours" "$theirs" | tee "$OUT/layers_compare.md"
  grep -vE "^[a-z0-9_]+: " "$ours" "$theirs" | head -20  # errors and anything else not a figure
}

# The fp8 MLP block beside its bf16 twin and PyTorch's bf16 block (bench/bench_fp8.cpp,
# bench/torch_fp8.py) and the fp8 tests.
run_fp8() {
  build-gpu/tests/rcuda_tests --gtest_filter='*Float8*:*Fp8*:*ScaledMm*' >"$OUT/fp8_tests.log" 2>&1
  step "fp8 tests" "exit $? ($(grep -E '^\[  PASSED' "$OUT/fp8_tests.log" | tail -1))"
  grep -E "^\[  FAILED  \]" "$OUT/fp8_tests.log" | head
  build-gpu/bench/bench_fp8 >"$OUT/fp8_rcuda.txt" 2>&1
  step bench_fp8 "exit $?"
  PYTHONUNBUFFERED=1 python3 bench/torch_fp8.py >"$OUT/fp8_torch.txt" 2>&1
  step torch_fp8.py "exit $?"
  cat "$OUT/fp8_rcuda.txt" "$OUT/fp8_torch.txt"
}

# The kernels of the MLP's b8 inference graph and of the MNIST CNN's graphed step, rcuda's and
# PyTorch's, each with its duration, under Nsight Compute (the graphs' nodes one by one; clocks
# left alone). Only the timed replay is profiled (the NVTX range "timed" of bench_graph and of
# torch_graph.py --profile), not the warm-up and cuDNN's autotuning before it.
run_profile() {
  command -v ncu >/dev/null || { step profile "no ncu"; return; }
  local ncu=(timeout 240 ncu --clock-control none --graph-profiling node --nvtx --nvtx-include timed/
             --metrics gpu__time_duration.sum --csv)
  for only in ${PROFILE_ONLY:-mlp_b8 mnistcnn}; do
    "${ncu[@]}" build-gpu/bench/bench_graph --only $only --steps 1 --chunks 1 \
      >"$OUT/ncu_$only.csv" 2>"$OUT/ncu_$only.err"
    step "ncu $only" "exit $? ($(python3 bench/ncu_kernels.py "$OUT/ncu_$only.csv" | head -1))"
    python3 bench/ncu_kernels.py "$OUT/ncu_$only.csv" --top 20 >"$OUT/ncu_$only.txt" 2>&1
    (cd bench && "${ncu[@]}" python3 torch_graph.py --profile --only $only) \
      >"$OUT/ncu_torch_$only.csv" 2>"$OUT/ncu_torch_$only.err"
    step "ncu torch_graph.py $only" "exit $? ($(python3 bench/ncu_kernels.py "$OUT/ncu_torch_$only.csv" | head -1))"
    python3 bench/ncu_kernels.py "$OUT/ncu_torch_$only.csv" --top 20 >"$OUT/ncu_torch_$only.txt" 2>&1
  done
}

for s in "${stages[@]}"; do
  case $s in
    build) run_build ;;
    tests) run_tests ;;
    cli) run_cli ;;
    memcheck | racecheck) run_sanitizer "$s" ;;
    r) run_r ;;
    bench) run_bench ;;
    dlpack) run_dlpack ;;
    stress) run_stress ;;
    tarball) run_tarball ;;
    train) run_train ;;
    train_r) run_train_r ;;
    layers) run_layers ;;
    fp8) run_fp8 ;;
    profile) run_profile ;;
    r_bench) run_r_bench ;;
    jit) run_jit ;;
    onnx) run_onnx ;;
    serve) run_serve ;;
    *) echo "gpu-check: unknown stage $s (build tests cli memcheck racecheck r bench train train_r layers fp8 profile r_bench jit onnx serve)"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}"
