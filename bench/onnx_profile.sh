#!/usr/bin/env bash
# Where the time of ResNet-18 imported from ONNX goes on the GPU, beside PyTorch's: the CUDA
# kernels of a float16 batch-64 run (Nsight Systems' kernel summary for rcuda's bench_onnx, the
# PyTorch profiler's for the module), to compare kernel by kernel. Needs bench/onnx_resnet.sh's
# models (made here when missing) and a CUDA build in $BUILD.
#   bench/onnx_profile.sh [fp16|fp32] [BATCH]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
tag=${1:-fp16}
batch=${2:-64}
models=/tmp/rcuda-onnx-bench
[ -f "$models/resnet18_$tag.onnx" ] || python3 bench/torch_onnx_resnet.py "$models" --iters 3 >/dev/null 2>&1
if command -v nsys >/dev/null; then
  nsys profile -t cuda -o /tmp/onnx_rcuda --force-overwrite true "$BUILD/bench/bench_onnx" \
    "$models/resnet18_$tag.onnx" --device cuda --batch "$batch" --tag "$tag" --iters 300 --benchmark \
    >/dev/null 2>&1
  nsys stats --report cuda_gpu_kern_sum --format csv /tmp/onnx_rcuda.nsys-rep 2>/dev/null |
    python3 -c '
import csv, sys
rows = list(csv.DictReader(l for l in sys.stdin if "," in l))
total = sum(float(r["Total Time (ns)"]) for r in rows)
print("rcuda kernels: %.2f ms in all over the profiled runs" % (total / 1e6))
for r in rows[:25]:
    print("%6.1f%% %8d x %s" % (100 * float(r["Total Time (ns)"]) / total, int(r["Instances"]), r["Name"][:110]))'
else
  echo "no nsys on this machine"
fi
python3 - "$tag" "$batch" <<'PY'
import os, sys, torch
sys.path.insert(0, "tests/onnx_models")
from make_fixtures import ResNet18, randomize_batch_norm
dtype = torch.float16 if sys.argv[1] == "fp16" else torch.float32
torch.backends.cudnn.benchmark = True
m = randomize_batch_norm(ResNet18()).eval().to("cuda", dtype)
x = torch.randn(int(sys.argv[2]), 3, 224, 224, device="cuda", dtype=dtype)
with torch.inference_mode():
    for _ in range(5):
        m(x)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        for _ in range(20):
            m(x)
        torch.cuda.synchronize()
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=100))
PY
