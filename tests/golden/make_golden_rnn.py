"""PyTorch's values and gradients of its recurrent layers, for tests/golden/test_golden_rnn.cpp:
nn.LSTM, nn.GRU and nn.RNN (tanh, relu) over a table of configurations (layers, directions,
biases, batch_first, unbatched input, given or default initial states). Float64 on the CPU.

For each configuration it writes into DIR/rnn/ one raw little-endian file per tensor,
<config>__<tensor>.bin: the input x, the initial states h0 (and c0), the weights w0, w1, ... in
PyTorch's _flat_weights order, random upstream gradients of output, h_n (and c_n), the outputs and
the gradients of sum(output * g_out) + sum(h_n * g_h) (+ sum(c_n * g_c)) with respect to x, the
states and every weight. DIR/rnn/manifest.json lists the configurations.
    python3 tests/golden/make_golden_rnn.py DIR"""
import json
import os
import sys

import torch

out_dir = os.path.join(sys.argv[1], "rnn")
os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(20261201)
d = torch.float64
configs = []


def write(name, tensors):
    manifest = {}
    for k, v in tensors.items():
        v = v.detach().contiguous()
        v.numpy().tofile(os.path.join(out_dir, f"{name}__{k}.bin"))
        manifest[k] = list(v.shape)
    return manifest


def config(name, mode, layers=1, bidirectional=False, bias=True, batch_first=False, steps=4,
           batch=3, input_size=5, hidden=6, states=True, unbatched=False):
    cls = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN_TANH": torch.nn.RNN,
           "RNN_RELU": torch.nn.RNN}[mode]
    extra = {"nonlinearity": "relu" if mode == "RNN_RELU" else "tanh"} if mode.startswith("RNN") else {}
    m = cls(input_size, hidden, layers, bias=bias, batch_first=batch_first,
            bidirectional=bidirectional, dtype=d, **extra)
    dirs = 2 if bidirectional else 1
    x_shape = (steps, input_size) if unbatched else \
        ((batch, steps, input_size) if batch_first else (steps, batch, input_size))
    h_shape = (layers * dirs, hidden) if unbatched else (layers * dirs, batch, hidden)
    x = torch.randn(*x_shape, dtype=d, requires_grad=True)
    tensors = {"x": x}
    leaves = [x]
    hx = None
    if states:
        h0 = torch.randn(*h_shape, dtype=d, requires_grad=True)
        tensors["h0"] = h0
        leaves.append(h0)
        hx = h0
        if mode == "LSTM":
            c0 = torch.randn(*h_shape, dtype=d, requires_grad=True)
            tensors["c0"] = c0
            leaves.append(c0)
            hx = (h0, c0)
    weights = list(m._flat_weights)
    for i, w in enumerate(weights):
        tensors[f"w{i}"] = w
    out, h = m(x, hx)
    h_n, c_n = h if mode == "LSTM" else (h, None)
    g_out, g_h = torch.randn_like(out), torch.randn_like(h_n)
    loss = (out * g_out).sum() + (h_n * g_h).sum()
    tensors.update({"g_out": g_out, "g_h": g_h, "out": out, "h_n": h_n})
    if c_n is not None:
        g_c = torch.randn_like(c_n)
        loss = loss + (c_n * g_c).sum()
        tensors.update({"g_c": g_c, "c_n": c_n})
    grads = torch.autograd.grad(loss, leaves + weights)
    names = [k for k in ("x", "h0", "c0") if k in tensors] + [f"w{i}" for i in range(len(weights))]
    for k, g in zip(names, grads):
        tensors[k + "_grad"] = g
    configs.append({"name": name, "mode": mode, "layers": layers, "bidirectional": bidirectional,
                    "bias": bias, "batch_first": batch_first, "states": states,
                    "weights": len(weights), "tensors": write(name, tensors)})


for mode in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"):
    m = mode.lower()
    config(f"{m}_1layer", mode)
    config(f"{m}_2layers_bidirectional", mode, layers=2, bidirectional=True)
    config(f"{m}_no_bias_batch_first", mode, bias=False, batch_first=True)
    config(f"{m}_3layers_zero_states", mode, layers=3, states=False, input_size=3, hidden=4)
    config(f"{m}_unbatched_bidirectional", mode, bidirectional=True, unbatched=True, steps=5)
    config(f"{m}_batch1_step1", mode, layers=2, batch=1, steps=1, input_size=7, hidden=3)

with open(os.path.join(out_dir, "manifest.json"), "w") as f:
    json.dump({"configs": configs}, f, indent=1)
print(f"{len(configs)} recurrent configurations written to {out_dir}")
