"""PyTorch's side of `bench_conv --cpu`: conv 3x3, 64 -> 64 channels, 56x56, batch 8, padding 1,
float32 on the CPU, the median of 5 timed calls after one warm-up call. Prints bench_conv's name.
    python3 bench/torch_conv_cpu.py"""
import time
import torch
import torch.nn.functional as F

print(f"torch: {torch.__version__}", flush=True)
print(f"torch_threads: {torch.get_num_threads()}", flush=True)
torch.manual_seed(0)
x, w = torch.randn(8, 64, 56, 56), torch.randn(64, 64, 3, 3)
F.conv2d(x, w, padding=1)
ts = []
for _ in range(5):
    t = time.perf_counter(); F.conv2d(x, w, padding=1); ts.append((time.perf_counter() - t) * 1e3)
ts.sort()
print(f"conv3x3_64_56_b8_fp32_cpu_ms: {ts[len(ts) // 2]}", flush=True)
