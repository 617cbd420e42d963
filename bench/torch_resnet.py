"""PyTorch's side of bench_resnet: the anchor's ResNet-18 (CIFAR variant, 32x32; class Block and
resnet18() of shared/anchors/torch_train_h200.py), batch 512, SGD (lr 0.1, momentum 0.9,
Nesterov, weight decay 5e-4), cross-entropy, one fixed random batch, timed as the anchor (10
steps a chunk, 5 chunks, 5 warm-up steps). --dtype bfloat16 puts the model and the input in
bfloat16 (model.to(torch.bfloat16), rcuda's setting); --autocast is the anchor's own bf16 figure
(a float32 model under autocast). Prints bench_resnet's `name: value` lines.
    python3 bench/torch_resnet.py [--device cuda|cpu] [--dtype float32|bfloat16] [--channels-last]
        [--autocast] [--batch 512] [--steps 10] [--chunks 5] [--warmup 5] [--no-benchmark]"""
import contextlib
import torch, torch.nn as nn, torch.nn.functional as F
from torch_step_timing import log, parse, tag, time_steps, LossTrace

a = parse(__doc__, batch=512, steps=10, chunks=5, warmup=5)
dev = a.device


class Block(nn.Module):  # the anchor's, verbatim
    def __init__(s, i, o, st):
        super().__init__(); s.a = nn.Conv2d(i, o, 3, st, 1, bias=False); s.ba = nn.BatchNorm2d(o)
        s.b = nn.Conv2d(o, o, 3, 1, 1, bias=False); s.bb = nn.BatchNorm2d(o)
        s.sc = nn.Sequential() if st == 1 and i == o else nn.Sequential(nn.Conv2d(i, o, 1, st, bias=False), nn.BatchNorm2d(o))
    def forward(s, x): return F.relu(s.bb(s.b(F.relu(s.ba(s.a(x))))) + s.sc(x))
def resnet18():
    L = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    c = 64
    for o, st in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]:
        L.append(Block(c, o, st)); c = o
    L += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*L).to(dev)


torch.manual_seed(0)
m = resnet18().to(dtype=a.torch_dtype, memory_format=a.memory_format)
x = torch.randn(a.batch, 3, 32, 32).to(dev, a.torch_dtype).contiguous(memory_format=a.memory_format)
y = torch.randint(0, 10, (a.batch,), device=dev)
o = torch.optim.SGD(m.parameters(), 0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
name = f"resnet18_b{a.batch}_{tag(a)}"
with torch.no_grad():
    log(f"{name}_features_channels_last", int(m[:-3](x).is_contiguous(memory_format=torch.channels_last)))

amp = (lambda: torch.autocast(dev, dtype=torch.bfloat16)) if a.autocast else contextlib.nullcontext
trace = LossTrace()
def step():
    o.zero_grad(set_to_none=True)
    with amp(): loss = F.cross_entropy(m(x), y)
    loss.backward(); o.step(); trace.record(loss)

us = time_steps(name, a, step, trace)
log(f"{name}_step_ms", us / 1e3)
log(f"{name}_img_per_s", a.batch * 1e6 / us)
