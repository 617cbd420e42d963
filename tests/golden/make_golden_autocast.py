"""PyTorch's output dtypes under autocast, for tests/golden/test_golden_autocast.cpp: a table of
ops run on float32 inputs (and float16/bfloat16 ones for the ops that keep or widen them) under
torch.autocast for the CPU and, where there is a GPU, for CUDA, in float16 and bfloat16. Writes
DIR/autocast.json: {device: {dtype: {op: output dtype, or "error: ..."}}}.
    python3 tests/golden/make_golden_autocast.py DIR"""
import json, os, sys
import torch, torch.nn.functional as F

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def table(dev, low):
    torch.manual_seed(0)
    t = lambda *s: torch.randn(*s, device=dev)
    x, w, b = t(4, 8), t(6, 8), t(6)
    img, cw = t(2, 3, 8, 8), t(4, 3, 3, 3)
    cls = torch.randint(0, 8, (4,), device=dev)
    p = torch.rand(4, 8, device=dev)
    xh, ph = x.to(low), p.to(low)  # a low-precision activation, for the float32 ops
    lstm, gru, rnn = (m(8, 5).to(dev) for m in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN))
    return {
        "linear": lambda: F.linear(x, w, b),
        "matmul": lambda: torch.matmul(x, w.t()),
        "mm": lambda: torch.mm(x, w.t()),
        "bmm": lambda: torch.bmm(x[None], w.t()[None]),
        "addmm": lambda: torch.addmm(b, x, w.t()),
        "conv1d": lambda: F.conv1d(x[None], t(2, 4, 3)),
        "conv2d": lambda: F.conv2d(img, cw),
        "conv_transpose2d": lambda: F.conv_transpose2d(img, t(3, 2, 3, 3)),
        "lstm": lambda: lstm(x[:, None])[0],
        "gru": lambda: gru(x[:, None])[0],
        "rnn": lambda: rnn(x[:, None])[0],
        "softmax": lambda: F.softmax(xh, 1),
        "log_softmax": lambda: F.log_softmax(xh, 1),
        "exp": lambda: torch.exp(xh),
        "expm1": lambda: torch.expm1(xh),
        "log": lambda: torch.log(xh.abs()),
        "log1p": lambda: torch.log1p(xh.abs()),
        "rsqrt": lambda: torch.rsqrt(xh.abs()),
        "pow": lambda: torch.pow(xh, 2),
        "softplus": lambda: F.softplus(xh),
        "sum": lambda: xh.sum(),
        "prod": lambda: xh.prod(),
        "cumsum": lambda: xh.cumsum(1),
        "norm": lambda: torch.linalg.vector_norm(xh),
        "mean": lambda: xh.mean(),
        "layer_norm": lambda: F.layer_norm(xh, (8,)),
        "group_norm": lambda: F.group_norm(xh.reshape(4, 8, 1), 2),
        "batch_norm": lambda: F.batch_norm(xh, None, None, training=True),
        "mse_loss": lambda: F.mse_loss(xh, ph),
        "l1_loss": lambda: F.l1_loss(xh, ph),
        "smooth_l1_loss": lambda: F.smooth_l1_loss(xh, ph),
        "huber_loss": lambda: F.huber_loss(xh, ph),
        "nll_loss": lambda: F.nll_loss(xh, cls),
        "cross_entropy": lambda: F.cross_entropy(xh, cls),
        "kl_div": lambda: F.kl_div(xh, ph, reduction="batchmean"),
        "binary_cross_entropy_with_logits": lambda: F.binary_cross_entropy_with_logits(xh, ph),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(torch.sigmoid(xh), ph),
        "relu": lambda: F.relu(xh),
        "tanh": lambda: torch.tanh(xh),
        "gelu": lambda: F.gelu(xh),
        "max_pool2d": lambda: F.max_pool2d(img.to(low), 2),
        "add_mixed": lambda: xh + x,
        "linear_float64": lambda: F.linear(x.double(), w.double()),
    }


result = {}
for dev in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
    result[dev] = {}
    for low in (torch.float16, torch.bfloat16):
        row = {}
        for op, f in table(dev, low).items():
            try:
                with torch.autocast(dev, dtype=low):
                    row[op] = str(f().dtype).replace("torch.", "")
            except Exception as e:  # noqa: BLE001 (what PyTorch refuses is part of the table)
                row[op] = "error: " + str(e).splitlines()[0][:80]
        result[dev][str(low).replace("torch.", "")] = row
with open(os.path.join(out, "autocast.json"), "w") as f:
    json.dump(result, f, indent=1)
print("autocast dtypes written to", out, "for", ", ".join(result))
