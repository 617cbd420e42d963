"""PyTorch's side of bench_lstm: the anchor's LSTM (shared/anchors/torch_train_h200.py):
nn.LSTM(256, 512, 2, batch_first=True), batch 64, 100 steps, a linear head 512 -> 10 on the last
step, cross-entropy, Adam (lr 1e-3); the training step (20 steps a chunk, 5 chunks) and the
inference forward of the LSTM alone (eval, no grad). Prints bench_lstm's `name: value` lines.
    python3 bench/torch_lstm.py [--device cuda|cpu] [--batch 64] [--steps 20] [--chunks 5]
        [--warmup 5] [--seq 100]"""
import torch, torch.nn as nn, torch.nn.functional as F
from torch_step_timing import log, parse, per_step_us, time_steps, LossTrace

a = parse(__doc__, batch=64, steps=20, chunks=5, warmup=5,
          extra=lambda p: p.add_argument("--seq", type=int, default=100))
dev = a.device
cpu = "_cpu" if dev == "cpu" else ""
name = f"lstm2x512_b{a.batch}_t{a.seq}"

torch.manual_seed(0)
lstm = nn.LSTM(256, 512, 2, batch_first=True).to(dev)
head = nn.Linear(512, 10).to(dev)
o = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), 1e-3)
xs = torch.randn(a.batch, a.seq, 256, device=dev)
ys = torch.randint(0, 10, (a.batch,), device=dev)
trace = LossTrace()


def train_step():
    o.zero_grad(set_to_none=True)
    out, _ = lstm(xs)
    loss = F.cross_entropy(head(out[:, -1]), ys)
    loss.backward(); o.step(); trace.record(loss)


log(f"{name}_train_step{cpu}_us", time_steps(f"{name}_train_step{cpu}", a, train_step, trace))

lstm.eval()
def infer():
    with torch.no_grad(): lstm(xs)
for _ in range(a.warmup): infer()
log(f"{name}_infer{cpu}_us", per_step_us(dev, infer, a.steps, a.chunks))
