"""PyTorch's side of bench_train: the MLP 784-512-512-10, batch 256, Adam (lr 1e-3), as in
shared/anchors/torch_train_h200.py. Writes the initial weights, the batches and PyTorch's loss
curve (200 steps) as raw little-endian files into DIR for bench_train to read, then times
PyTorch's eager step (foreach and fused Adam) and, on the CPU, its CPU step. Prints `name: value`.
    python3 bench/torch_train_mlp.py DIR [--device cuda|cpu] [--steps 200]"""
import argparse, os, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("dir"); p.add_argument("--device", default="cuda"); p.add_argument("--steps", type=int, default=200)
a = p.parse_args()
dev = a.device
os.makedirs(a.dir, exist_ok=True)
torch.backends.cuda.matmul.allow_tf32 = False
def log(k, v): print(f"{k}: {v}", flush=True)
log("torch", torch.__version__)

def mlp(): return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
def save(name, t): t.detach().cpu().contiguous().numpy().tofile(os.path.join(a.dir, name + ".bin"))

torch.manual_seed(0)
model = mlp()
for i, layer in enumerate([model[0], model[2], model[4]]):
    save(f"w{i + 1}", layer.weight); save(f"b{i + 1}", layer.bias)
S = 20
xs = torch.randn(S, 256, 784); ys = torch.randint(0, 10, (S, 256))
save("x", xs); save("y", ys)

init = [t.detach().clone() for t in model.parameters()]

def curve(device, dtype):
    """The loss at each of a.steps Adam steps from the saved weights, in `dtype` on `device`."""
    m = mlp().to(device, dtype)
    with torch.no_grad():
        for p, v in zip(m.parameters(), init): p.copy_(v)
    o = torch.optim.Adam(m.parameters(), 1e-3)
    xd, yd = xs.to(device, dtype), ys.to(device)
    out = []
    for s in range(a.steps):
        o.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m(xd[s % S]), yd[s % S]); loss.backward(); o.step()
        out.append(loss.detach())
    return torch.stack(out).double().cpu()

def max_rel(u, v): return float(((u - v).abs() / v.abs()).max())
c32, c64 = curve(dev, torch.float32), curve(dev, torch.float64)
save("torch_losses", c32.float()); save("torch_losses64", c64)
log("torch_loss_first", float(c32[0])); log("torch_loss_last", float(c32[-1]))
# How far float32 curves drift apart by rounding alone: PyTorch against itself in float64, and
# (on the GPU) against its own CPU run.
log("torch_float32_vs_float64_max_rel_diff", max_rel(c32, c64))
if dev != "cpu":
    log("torch_cuda_vs_cpu_float32_max_rel_diff", max_rel(c32, curve("cpu", torch.float32)))
model = model.to(dev); xs = xs.to(dev); ys = ys.to(dev)

def step_of(m, o, x, y):
    def step():
        o.zero_grad(set_to_none=True); F.cross_entropy(m(x), y).backward(); o.step()
    return step

def per_step_us(step, n=50, chunks=7, warm=10):  # as torch_train_h200.py
    for _ in range(warm): step()
    if dev == "cpu":
        ts = []
        for _ in range(chunks):
            t = time.perf_counter()
            for _ in range(n): step()
            ts.append((time.perf_counter() - t) * 1e6 / n)
        ts.sort(); return round(ts[len(ts) // 2], 1)
    torch.cuda.synchronize(); ts = []
    for _ in range(chunks):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n): step()
        e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) * 1e3 / n)
    ts.sort(); return round(ts[len(ts) // 2], 1)

x, y = xs[0], ys[0]
kinds = [("foreach", {}), ("fused", {"fused": True})] if dev != "cpu" else [("foreach", {})]
for name, kw in kinds:
    torch.manual_seed(0); m = mlp().to(dev); o = torch.optim.Adam(m.parameters(), 1e-3, **kw)
    step = step_of(m, o, x, y)
    if dev != "cpu":  # peak during the timed steps above what model, optimizer state and data hold
        for _ in range(10): step()
        torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
    log(f"torch_mlp_b256_adam_{name}_{dev}_step_us", per_step_us(step, n=50 if dev != "cpu" else 10, chunks=7 if dev != "cpu" else 3))
    if dev != "cpu":
        log(f"torch_mlp_b256_adam_{name}_step_peak_above_base_MB", (torch.cuda.max_memory_allocated() - base) / 1e6)
        log(f"torch_mlp_b256_adam_{name}_base_allocated_MB", base / 1e6)
