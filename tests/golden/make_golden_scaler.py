"""PyTorch's GradScaler on a scripted run, for tests/golden/test_golden_scaler.cpp: a float32
parameter w [5] trained by SGD (lr 0.1) on the loss sum(w * c_k) for twelve coefficient rows c_k,
three of which hold inf or NaN, under torch.amp.GradScaler("cpu", init_scale 16, growth_factor 2,
backoff_factor 0.5, growth_interval 3). Writes DIR/scaler.json: the rows, and after each step
the scale, whether the optimizer stepped, and w.
    python3 tests/golden/make_golden_scaler.py DIR"""
import json, math, os, sys
import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(7)
w = torch.randn(5).requires_grad_()
w0 = w.detach().clone()
opt = torch.optim.SGD([w], lr=0.1)
scaler = torch.amp.GradScaler("cpu", init_scale=16.0, growth_factor=2.0, backoff_factor=0.5,
                              growth_interval=3)
rows, scales, stepped, ws = [], [], [], []
for k in range(12):
    c = torch.randn(5)
    if k in (4, 9):
        c[2] = math.inf
    if k == 5:
        c[0] = math.nan
    opt.zero_grad()
    before = w.detach().clone()
    scaler.scale((w * c).sum()).backward()
    scaler.step(opt)
    scaler.update()
    # JSON has no inf or NaN: those go as the strings "inf" and "nan".
    rows.append([float(v) if math.isfinite(v) else str(float(v)) for v in c])
    scales.append(scaler.get_scale())
    stepped.append(not torch.equal(before, w.detach()))
    ws.append([float(v) for v in w.detach()])
json.dump({"w0": [float(v) for v in w0], "rows": rows, "scales": scales, "stepped": stepped,
           "w": ws}, open(os.path.join(out, "scaler.json"), "w"), indent=1)
print("GradScaler run written to", out, "scales", scales)
