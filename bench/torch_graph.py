"""PyTorch's CUDA-graph steps beside bench/bench_graph.cpp: the graphed() training steps of
shared/anchors/torch_train_h200.py (MLP 784-512-512-10 batch 256 Adam, the MNIST CNN batch 128
Adam, capturable=True) and an MLP inference forward at batch 8 as one replay. Timing as the
anchors (median of CUDA-event-timed chunks). Prints `name: value`."""
import sys, torch, torch.nn as nn, torch.nn.functional as F
import torch_step_timing as timing
from torch_step_timing import log

torch.backends.cudnn.benchmark = True
dev = "cuda"

# --profile: one replay of each graph inside an NVTX range "timed", for
# `ncu --nvtx --nvtx-include timed/` (as bench_graph --steps 1 --chunks 1).
# --only PREFIX: only the figures whose names start with PREFIX (as bench_graph --only).
PROFILE = "--profile" in sys.argv
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else ""

def wanted(name):  # the figure's name starts with ONLY (or ONLY names more than the prefix)
    return name.startswith(ONLY) or ONLY.startswith(name)

def per_step_us(step, n=50, chunks=7, warm=10):  # the anchors' defaults
    for _ in range(warm): step()
    if PROFILE: n, chunks = 1, 1
    torch.cuda.nvtx.range_push("timed")
    us = round(timing.per_step_us(dev, step, n, chunks), 1)
    torch.cuda.nvtx.range_pop()
    return us

def mlp(): return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)

class MnistNet(nn.Module):
    def __init__(s):
        super().__init__(); s.c1 = nn.Conv2d(1, 32, 3); s.c2 = nn.Conv2d(32, 64, 3)
        s.d1 = nn.Dropout(0.25); s.d2 = nn.Dropout(0.5); s.f1 = nn.Linear(9216, 128); s.f2 = nn.Linear(128, 10)
    def forward(s, x):
        x = F.relu(s.c1(x)); x = F.max_pool2d(F.relu(s.c2(x)), 2); x = torch.flatten(s.d1(x), 1)
        return F.log_softmax(s.f2(s.d2(F.relu(s.f1(x)))), 1)

def graphed(model, opt, x, y, loss_fn):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True); loss_fn(model(x), y).backward(); opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph(); opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = loss_fn(model(x), y); loss.backward(); opt.step()
    return g.replay

log("torch", torch.__version__)
if wanted("mlp_b256"):
    x = torch.randn(256, 784, device=dev); y = torch.randint(0, 10, (256,), device=dev)
    m = mlp(); o = torch.optim.Adam(m.parameters(), 1e-3, capturable=True)
    log("mlp_b256_adam_graph_step_us", per_step_us(graphed(m, o, x, y, F.cross_entropy)))
if wanted("mnistcnn"):
    x = torch.randn(128, 1, 28, 28, device=dev); y = torch.randint(0, 10, (128,), device=dev)
    m = MnistNet().to(dev); o = torch.optim.Adam(m.parameters(), 1e-3, capturable=True)
    log("mnistcnn_b128_fp32_graph_step_us", per_step_us(graphed(m, o, x, y, F.nll_loss)))
if not wanted("mlp_b8"):
    sys.exit(0)
m = mlp().eval(); x = torch.randn(8, 784, device=dev)
with torch.no_grad():
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g): out = m(x)
log("mlp_b8_infer_graph_replay_us", per_step_us(g.replay))
