"""PyTorch's side of bench_conv: conv 3x3, 256 -> 256 channels, 56x56, batch 64, padding 1, as in
shared/anchors/torch_h200.py. The forward in float16 (contiguous, the anchor's, and channels-last),
bfloat16 channels-last, float32 with TF32 off and on; the two backward passes in float16
channels-last; with cudnn.benchmark off (heuristics, rcuda's default) and on (`_benchmark`, as the
anchor). Prints `name: value` lines with bench_conv's names.
    python3 bench/torch_conv.py [--quick]"""
import argparse
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--quick", action="store_true")
a = p.parse_args()
def log(k, v): print(f"{k}: {v}", flush=True)
log("torch", torch.__version__)
log("cudnn", torch.backends.cudnn.version())
log("device", torch.cuda.get_device_name(0))

def cuda_time(fn, iters=20, warm=3):  # as torch_h200.py
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]

N, C, K, HW = (8 if a.quick else 64), 256, 256, 56
name = f"conv3x3_{C}_{HW}_b{N}"
flop = 2 * N * K * C * 9 * HW * HW
torch.manual_seed(0)
x0 = torch.randn(N, C, HW, HW); w0 = torch.randn(K, C, 3, 3)

def tensors(dtype, channels_last):
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    return (x0.to("cuda", dtype).contiguous(memory_format=fmt),
            w0.to("cuda", dtype).contiguous(memory_format=fmt))

def forward(suffix, dtype, channels_last):
    x, w = tensors(dtype, channels_last)
    with torch.no_grad():
        ms = cuda_time(lambda: F.conv2d(x, w, padding=1))
    log(f"{name}_{suffix}_TFLOPs", round(flop / ms / 1e9, 1))

def backward(suffix, dtype, channels_last):
    x, w = tensors(dtype, channels_last)
    g = torch.randn(N, K, HW, HW, device="cuda", dtype=dtype).contiguous(
        memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    ms = cuda_time(lambda: torch.ops.aten.convolution_backward(
        g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False]))
    log(f"{name}_{suffix}_dgrad_TFLOPs", round(flop / ms / 1e9, 1))
    ms = cuda_time(lambda: torch.ops.aten.convolution_backward(
        g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False]))
    log(f"{name}_{suffix}_wgrad_TFLOPs", round(flop / ms / 1e9, 1))

for bench in (False, True):
    torch.backends.cudnn.benchmark = bench
    m = "_benchmark" if bench else ""
    forward("fp16" + m, torch.float16, False)
    forward("fp16_channels_last" + m, torch.float16, True)
    forward("bf16_channels_last" + m, torch.bfloat16, True)
    torch.backends.cudnn.allow_tf32 = False
    forward("fp32" + m, torch.float32, False)
    forward("fp32_channels_last" + m, torch.float32, True)
    torch.backends.cudnn.allow_tf32 = True
    forward("tf32" + m, torch.float32, False)
    forward("tf32_channels_last" + m, torch.float32, True)
    backward("fp16_channels_last" + m, torch.float16, True)
