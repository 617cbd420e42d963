"""PyTorch's side of bench/bench_fp8.cpp: the same MLP block (x [M, 4096] -> linear 4096 -> 16384
-> gelu -> linear 16384 -> 4096) in bfloat16, forward and backward with a fixed output gradient,
and the forward under no_grad, timed as bench/torch_step_timing.py times steps. PyTorch has no
fp8 linear layer of its own (that lives in torchao or Transformer Engine, not on the machine), so
its bf16 block is the reference both rcuda blocks are compared with; torch._scaled_mm's raw fp8
rate on the first product's shape is printed beside it."""
import argparse
import torch
import torch.nn.functional as F
from torch_step_timing import log, per_step_us

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=8192)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--chunks", type=int, default=5)
a = p.parse_args()
log("torch", torch.__version__)
torch.manual_seed(0)
D, H, M = 4096, 16384, a.batch
dev, bf = "cuda", torch.bfloat16
l1 = torch.nn.Linear(D, H, device=dev, dtype=bf)
l2 = torch.nn.Linear(H, D, device=dev, dtype=bf)
x = torch.randn(M, D, device=dev, dtype=bf)
g = torch.randn(M, D, device=dev, dtype=bf) * 1e-3
flops = 2.0 * M * D * H * 2


def block(x): return l2(F.gelu(l1(x)))


def train():
    for p_ in (l1.weight, l1.bias, l2.weight, l2.bias): p_.grad = None
    block(x).backward(g)


def time(name, fl, fn):
    for _ in range(3): fn()
    us = per_step_us(dev, fn, a.steps, a.chunks)
    log(name + "_us", us)
    log(name + "_tflops", fl / us / 1e6)


time("torch_fp8_block_bf16_fwd_bwd", 3 * flops, train)
with torch.no_grad():
    time("torch_fp8_block_bf16_fwd", flops, lambda: block(x))
    # torch._scaled_mm on the first linear's product: e4m3 x e4m3, per-tensor scales, bf16 out.
    a8 = x.to(torch.float8_e4m3fn)
    b8 = l1.weight.to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=dev)
    time("torch_scaled_mm_4096x16384", 2.0 * M * D * H,
         lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=bf))
log("torch_fp8_block_peak_allocated_MB", torch.cuda.max_memory_allocated() / 1e6)
