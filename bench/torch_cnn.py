"""PyTorch's side of bench_cnn: the MNIST-example CNN (class MnistNet of
shared/anchors/torch_train_h200.py), batch 128, Adam (lr 1e-3), log_softmax + nll_loss (--loss ce:
cross_entropy on the logits), one fixed random batch, timed as the anchor (50 steps a chunk, 7
chunks, 10 warm-up steps). --dtype bfloat16 puts the model and the input in bfloat16; --autocast
is the anchor's bf16 figure (a float32 model under autocast). Prints bench_cnn's `name: value`
lines.
    python3 bench/torch_cnn.py [--device cuda|cpu] [--dtype float32|bfloat16] [--channels-last]
        [--autocast] [--batch 128] [--steps 50] [--chunks 7] [--warmup 10] [--no-benchmark]
        [--loss nll|ce] [--save DIR]
--save DIR also writes the initial parameters (c1_weight.bin, ..., f2_bias.bin), the batch (x.bin,
y.bin: 0-based int64 classes) and the eval-mode loss of the initial model (torch_eval_loss.bin) as
raw little-endian files, for bench/bench_cnn_r.R to start from the same weights."""
import contextlib, os
import torch, torch.nn as nn, torch.nn.functional as F
from torch_step_timing import host_us, log, parse, tag, time_steps, LossTrace

a = parse(__doc__, batch=128, steps=50, chunks=7, warmup=10,
          extra=lambda p: (p.add_argument("--loss", default="nll", choices=["nll", "ce"]),
                           p.add_argument("--save", default=None)))
dev = a.device


class MnistNet(nn.Module):  # the anchor's; forward returns logits for --loss ce
    def __init__(s):
        super().__init__(); s.c1 = nn.Conv2d(1, 32, 3); s.c2 = nn.Conv2d(32, 64, 3)
        s.d1 = nn.Dropout(0.25); s.d2 = nn.Dropout(0.5); s.f1 = nn.Linear(9216, 128); s.f2 = nn.Linear(128, 10)
    def forward(s, x):
        x = F.relu(s.c1(x)); x = F.max_pool2d(F.relu(s.c2(x)), 2); x = torch.flatten(s.d1(x), 1)
        x = s.f2(s.d2(F.relu(s.f1(x))))
        return x if a.loss == "ce" else F.log_softmax(x, 1)


torch.manual_seed(0)
m = MnistNet().to(dev, a.torch_dtype).to(memory_format=a.memory_format)
x = torch.randn(a.batch, 1, 28, 28).to(dev, a.torch_dtype).contiguous(memory_format=a.memory_format)
y = torch.randint(0, 10, (a.batch,), device=dev)
o = torch.optim.Adam(m.parameters(), 1e-3)
loss_fn = F.cross_entropy if a.loss == "ce" else F.nll_loss
if a.save:
    os.makedirs(a.save, exist_ok=True)
    def save(name, t): t.detach().float().cpu().contiguous().numpy().tofile(os.path.join(a.save, name + ".bin"))
    for n, layer in [("c1", m.c1), ("c2", m.c2), ("f1", m.f1), ("f2", m.f2)]:
        save(n + "_weight", layer.weight); save(n + "_bias", layer.bias)
    save("x", x); y.cpu().numpy().tofile(os.path.join(a.save, "y.bin"))
    m.eval()
    with torch.no_grad(): save("torch_eval_loss", loss_fn(m(x), y).reshape(1))
    m.train()
name = f"mnistcnn_b{a.batch}_{tag(a)}" + ("_ce" if a.loss == "ce" else "")

amp = (lambda: torch.autocast(dev, dtype=torch.bfloat16)) if a.autocast else contextlib.nullcontext
trace = LossTrace()
def step():
    o.zero_grad(set_to_none=True)
    with amp(): loss = loss_fn(m(x), y)
    loss.backward(); o.step(); trace.record(loss)

log(f"{name}_step_us", time_steps(name, a, step, trace))
log(f"{name}_host_us", host_us(dev, step, a.steps))
