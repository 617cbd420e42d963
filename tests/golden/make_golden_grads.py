"""PyTorch's gradients of small composite models, for tests/golden/test_golden_grads.cpp: an MLP
with cross-entropy, a layer_norm + gelu block, embedding + linear, and a chain of pads and
interpolations. Float64 on the
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
print("golden gradients written to", out)
