#!/usr/bin/env bash
# rcuda's ONNX import beside PyTorch and ONNX Runtime on ResNet-18 at 224x224 (issue: ONNX import):
# batch 1 and 64, float32 and float16, on CUDA eager and as CUDA-graph replay against PyTorch
# eager and PyTorch's CUDA graphs, and on the CPU (float32) against ONNX Runtime's CPU provider
# with the same thread count; the load time. Needs a CUDA build in $BUILD (default build-gpu).
#   bench/onnx_resnet.sh [THREADS]       (default: all cores)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-/tmp/rcuda-gpu}
threads=${1:-$(nproc)}
models=/tmp/rcuda-onnx-bench
mkdir -p "$OUT" "$models"
python3 bench/torch_onnx_resnet.py "$models" --threads "$threads" >"$OUT/onnx_torch.txt" 2>"$OUT/onnx_torch.err" ||
  { tail -20 "$OUT/onnx_torch.err"; exit 1; }
bench=$BUILD/bench/bench_onnx
: >"$OUT/onnx_rcuda.txt"
for tag in fp32 fp16; do
  model=$models/resnet18_$tag.onnx
  $bench "$model" --name resnet18 --device cuda --tag $tag --check "$models/check_input.pb" \
    "$models/check_output_$tag.pb" --iters 5 | grep max_rel >>"$OUT/onnx_rcuda.txt"
  for batch in 1 64; do
    iters=$([ $batch = 1 ] && echo 200 || echo 40)
    $bench "$model" --name resnet18 --device cuda --batch $batch --tag $tag --iters $iters --benchmark \
      | grep img_per_s >>"$OUT/onnx_rcuda.txt"
    $bench "$model" --name resnet18 --device cuda --batch $batch --tag $tag --iters $iters --benchmark \
      --cuda-graph | grep img_per_s >>"$OUT/onnx_rcuda.txt"
    # The file's NCHW layout kept (Note [Channels-last convolutions]), for comparison.
    RCUDA_ONNX_CHANNELS_LAST=0 $bench "$model" --name resnet18 --device cuda --batch $batch \
      --tag ${tag}_nchw --iters $iters --benchmark | grep img_per_s >>"$OUT/onnx_rcuda.txt"
  done
done
for batch in 1 64; do
  iters=$([ $batch = 1 ] && echo 20 || echo 5)  # batch 64: 5 runs, 3 warm-up (the figure moved by a tenth with 3)
  OMP_NUM_THREADS=$threads $bench "$models/resnet18_fp32.onnx" --name resnet18 --device cpu --batch $batch \
    --iters $iters | grep -v "load_ms" >>"$OUT/onnx_rcuda.txt"
done
# How the CPU figures scale with threads, beside ONNX Runtime's (batch 1).
for t in 1 4 $threads; do
  OMP_NUM_THREADS=$t $bench "$models/resnet18_fp32.onnx" --name resnet18 --device cpu --batch 1 \
    --tag fp32_t$t --iters 20 | grep img_per_s >>"$OUT/onnx_rcuda.txt"
  python3 - "$models/resnet18_fp32.onnx" $t <<'PY' >>"$OUT/onnx_torch.txt"
import sys, time, numpy as np, onnxruntime as ort
o = ort.SessionOptions(); o.intra_op_num_threads = int(sys.argv[2]); o.inter_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"])
x = np.random.randn(1, 3, 224, 224).astype(np.float32)
for _ in range(5): s.run(None, {"image": x})
t0 = time.perf_counter()
for _ in range(20): s.run(None, {"image": x})
print("resnet18_b1_fp32_t%s_cpu_img_per_s: %.1f" % (sys.argv[2], 20 / (time.perf_counter() - t0)))
PY
done
# The load time on the CPU (no device context in it): the file read, initializers, binding.
$bench "$models/resnet18_fp32.onnx" --name resnet18 --device cpu --iters 1 | grep load_ms >>"$OUT/onnx_rcuda.txt"
python3 bench/compare.py "$OUT/onnx_rcuda.txt" "$OUT/onnx_torch.txt"
