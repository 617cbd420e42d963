"""PyTorch on the shapes of bench/bench_cuda.cpp, timed the same way as
shared/anchors/torch_h200.py (CUDA-event medians of 20 after 3 warm-ups). Prints `name: value`
lines with the same names as bench_cuda, for bench/compare.py."""
import sys
import time

import torch


def log(k, v):
    print(f"{k}: {v:.4g}", flush=True)


def cuda_time(fn, iters=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def host_time(fn, iters=5, warm=1):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(iters):
        t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


quick = "--quick" in sys.argv
N = 2000 if quick else 10000
ms = cuda_time(lambda: torch.randn(N, N, device="cuda"), iters=50, warm=10)  # as bench_cuda.cpp
log("randn_1e4_cuda_ms", ms); log("randn_1e4_cuda_GBps", N * N * 4 / ms / 1e6)
log("randn_1e4_cpu_ms", host_time(lambda: torch.randn(N, N)))
# Poisson and Gamma draws, as bench_cuda.cpp's bench_samplers.
S = 1000000 if quick else 10000000
rates = torch.where(torch.rand(S, device="cuda") < 0.5, 4.0, 40.0)
alpha = torch.where(torch.rand(S, device="cuda") < 0.5, 0.5, 5.0)
log("poisson_1e7_cuda_ms", cuda_time(lambda: torch.poisson(rates)))
log("gamma_1e7_cuda_ms", cuda_time(lambda: torch._standard_gamma(alpha)))
rates_cpu, alpha_cpu = rates.cpu(), alpha.cpu()
log("poisson_1e7_cpu_ms", host_time(lambda: torch.poisson(rates_cpu)))
log("gamma_1e7_cpu_ms", host_time(lambda: torch._standard_gamma(alpha_cpu)))
N = 2048 if quick else 10000
A = torch.randn(N, N, device="cuda"); B = torch.randn(N, N, device="cuda")
torch.backends.cuda.matmul.allow_tf32 = False
log("matmul_1e4_fp32_TFLOPs", 2 * N**3 / cuda_time(lambda: A @ B) / 1e9)
torch.backends.cuda.matmul.allow_tf32 = True
log("matmul_1e4_tf32_TFLOPs", 2 * N**3 / cuda_time(lambda: A @ B) / 1e9)
torch.backends.cuda.matmul.allow_tf32 = False
for dt in (torch.float16, torch.bfloat16):
    Ah, Bh = A.to(dt), B.to(dt)
    log(f"matmul_1e4_{dt}_TFLOPs", 2 * N**3 / cuda_time(lambda: Ah @ Bh) / 1e9)
del A, B, Ah, Bh
M = 2048 if quick else 8192
Ab = torch.randn(M, M, device="cuda", dtype=torch.bfloat16); Bb = torch.randn(M, M, device="cuda", dtype=torch.bfloat16)
log("matmul_8192_bf16_TFLOPs", 2 * M**3 / cuda_time(lambda: Ab @ Bb) / 1e9)
A8 = Ab.to(torch.float8_e4m3fn); B8 = Bb.to(torch.float8_e4m3fn).t().contiguous().t()
one = torch.tensor(1.0, device="cuda")
log("matmul_8192_fp8_TFLOPs", 2 * M**3 / cuda_time(lambda: torch._scaled_mm(A8, B8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)) / 1e9)
del Ab, Bb, A8, B8
x = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
log("d2d_copy_GBps_rw", 2 * x.numel() / cuda_time(lambda: y.copy_(x)) / 1e6)
del x, y
h = torch.empty(1024**3, dtype=torch.uint8).pin_memory(); d = torch.empty(1024**3, dtype=torch.uint8, device="cuda")
log("h2d_pinned_GBps", h.numel() / cuda_time(lambda: d.copy_(h, non_blocking=True)) / 1e6)
log("d2h_pinned_GBps", h.numel() / cuda_time(lambda: h.copy_(d, non_blocking=True)) / 1e6)
hp = torch.zeros(1024**3, dtype=torch.uint8)  # touched pages, as bench_cuda.cpp's (empty() would read the zero page)
log("h2d_pageable_GBps", hp.numel() / cuda_time(lambda: d.copy_(hp)) / 1e6)
del h, d, hp
n = 2**24 if quick else 2**28
a = torch.randn(n, device="cuda"); b = torch.randn(n, device="cuda")
log("add_2e8_GBps_rw", 3 * n * 4 / cuda_time(lambda: a + b) / 1e6)
log("sum_2e8_GBps", n * 4 / cuda_time(lambda: a.sum()) / 1e6)
s = torch.randn(4096, 4096, device="cuda")
log("softmax_4096_ms", cuda_time(lambda: torch.softmax(s, 1)))
a1 = torch.ones(1, device="cuda"); b1 = torch.ones(1, device="cuda")
for _ in range(100): a1 + b1
torch.cuda.synchronize()
reps = 10000
def loop_cuda():
    for _ in range(reps): a1 + b1
    torch.cuda.synchronize()
log("op_overhead_cuda_us", host_time(loop_cuda) * 1e3 / reps)
c1 = torch.ones(1); e1 = torch.ones(1)
def loop_cpu():
    for _ in range(reps): c1 + e1
log("op_overhead_cpu_us", host_time(loop_cpu) * 1e3 / reps)
