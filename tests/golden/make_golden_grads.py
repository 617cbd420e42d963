"""PyTorch's gradients of small composite models, for tests/golden/test_golden_grads.cpp: an MLP
with cross-entropy, a layer_norm + gelu block, embedding + linear, a chain of pads and
interpolations, and two ResNet basic blocks (their gradients, and their losses over eight SGD steps). Float64 on the
CPU (the reference for every rcuda device). Writes raw little-endian files into DIR:
<model>_<name>.bin for each input, parameter and gradient, and the loss.
    python3 tests/golden/make_golden_grads.py DIR"""
import os, sys
import torch, torch.nn.functional as F

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(1234)
d = torch.float64

def save(model, name, t):
    t = t.detach().contiguous()
    t.numpy().tofile(os.path.join(out, f"{model}_{name}.bin"))

def run(model, tensors, loss_fn):
    for k, t in tensors.items():
        save(model, k, t)
    loss = loss_fn(**tensors)
    loss.backward()
    save(model, "loss", loss.reshape(1))
    for k, t in tensors.items():
        if t.requires_grad:
            save(model, k + "_grad", t.grad)

def p(*shape, scale=1.0):
    return (torch.randn(*shape, dtype=d) * scale).requires_grad_()

# MLP 20-32-16-5, batch 8, cross-entropy with label smoothing 0.1.
run("mlp", dict(x=torch.randn(8, 20, dtype=d), y=torch.randint(0, 5, (8,)),
                w1=p(32, 20, scale=0.3), b1=p(32), w2=p(16, 32, scale=0.2), b2=p(16),
                w3=p(5, 16, scale=0.3), b3=p(5)),
    lambda x, y, w1, b1, w2, b2, w3, b3: F.cross_entropy(
        F.linear(F.relu(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)), w3, b3), y,
        label_smoothing=0.1))

# layer_norm over 16 features, then linear 16->16, gelu (erf), mean of squares.
run("ln_gelu", dict(x=p(4, 6, 16), g=p(16), b=p(16), w=p(16, 16, scale=0.25), c=p(16)),
    lambda x, g, b, w, c: F.gelu(F.linear(F.layer_norm(x, (16,), g, b), w, c)).pow(2).mean())

# embedding 50x12 with padding_idx 0, linear 12->3, cross-entropy over all tokens.
idx = torch.randint(0, 50, (5, 7)); idx[0, :2] = 0
run("emb", dict(idx=idx, t=torch.randint(0, 3, (35,)), e=p(50, 12), w=p(3, 12), c=p(3)),
    lambda idx, t, e, w, c: F.cross_entropy(
        F.linear(F.embedding(idx, e, padding_idx=0), w, c).reshape(35, 3), t))

# pad and interpolate chained: reflect, bilinear (align_corners), replicate with a crop,
# bilinear by a scale factor, circular, nearest; mean of squares.
def resample(x):
    y = F.interpolate(F.pad(x, (2, 1, 1, 2), mode="reflect"), size=(11, 7), mode="bilinear",
                      align_corners=True)
    y = F.interpolate(F.pad(y, (1, -2, 2, 1), mode="replicate"), scale_factor=0.6,
                      mode="bilinear")
    y = F.interpolate(F.pad(y, (1, 1, 0, 0), mode="circular"), size=(5, 9), mode="nearest")
    return y.pow(2).mean()
run("resample", dict(x=p(2, 3, 5, 6)), resample)

# Two ResNet basic blocks, the first with a strided 1x1-conv shortcut, the second with the
# identity; batch norm in training mode, global average pooling, linear, cross-entropy
# (bench/bench_resnet.cpp's pieces).
def resblock(x, y, w1, g1, b1, w2, g2, b2, ws, gs, bs, w3, g3, b3, w4, g4, b4, fw, fb):
    bn = lambda h, g, b: F.batch_norm(h, None, None, g, b, training=True)
    h = F.relu(bn(F.conv2d(x, w1, stride=2, padding=1), g1, b1))
    h = bn(F.conv2d(h, w2, padding=1), g2, b2)
    s = bn(F.conv2d(x, ws, stride=2), gs, bs)
    o = F.relu(h + s)
    h = F.relu(bn(F.conv2d(o, w3, padding=1), g3, b3))
    o = F.relu(bn(F.conv2d(h, w4, padding=1), g4, b4) + o)
    pooled = F.adaptive_avg_pool2d(o, 1).flatten(1)
    return F.cross_entropy(F.linear(pooled, fw, fb), y)
block = dict(x=p(4, 3, 8, 8), y=torch.randint(0, 5, (4,)),
             w1=p(6, 3, 3, 3, scale=0.3), g1=p(6), b1=p(6), w2=p(6, 6, 3, 3, scale=0.2), g2=p(6),
             b2=p(6), ws=p(6, 3, 1, 1, scale=0.5), gs=p(6), bs=p(6),
             w3=p(6, 6, 3, 3, scale=0.2), g3=p(6), b3=p(6), w4=p(6, 6, 3, 3, scale=0.2), g4=p(6),
             b4=p(6), fw=p(5, 6), fb=p(5))
run("resblock", block, resblock)

# Eight steps of SGD (lr 0.1, momentum 0.9, Nesterov, weight decay 5e-4: bench_resnet's) on the
# block from the same start: the loss before each step.
params = {k: t.detach().clone().requires_grad_() for k, t in block.items()
          if t.requires_grad and k != "x"}
opt = torch.optim.SGD(params.values(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
losses = []
for _ in range(8):
    opt.zero_grad()
    loss = resblock(block["x"].detach(), block["y"], **params)
    loss.backward()
    opt.step()
    losses.append(loss.detach())
save("resblock_sgd", "losses", torch.stack(losses))
print("golden gradients written to", out)
