"""Pairs rcuda's figures with PyTorch's (both `name: value` files: bench_cuda / torch_baseline.py,
bench_conv / torch_conv.py, bench_resnet / torch_resnet.py, bench_cnn / torch_cnn.py, bench_lstm / torch_lstm.py) and prints a
markdown table with the ratio rcuda / PyTorch, oriented so that > 1 means rcuda is better.
    python3 bench/compare.py RCUDA_FILE TORCH_FILE"""
import sys

LOWER_IS_BETTER = ("_ms", "_us", "_MB")
# Figures shown side by side without a ratio: the loss sanity check, counts, flags.
NO_RATIO = ("_loss_first", "_loss_first_timed", "_loss_last", "_steps_run", "_features_channels_last")
TARGETS = {
    "randn_1e4_cuda_ms": ">= 1.8", "randn_1e4_cpu_ms": ">= 1.0",
    "matmul_1e4_fp32_TFLOPs": ">= 0.97", "matmul_1e4_tf32_TFLOPs": ">= 0.97",
    "matmul_1e4_torch.float16_TFLOPs": ">= 0.97", "matmul_1e4_torch.bfloat16_TFLOPs": ">= 0.97",
    "matmul_8192_bf16_TFLOPs": ">= 0.97", "matmul_8192_fp8_TFLOPs": ">= 0.97",
    "h2d_pinned_GBps": ">= 0.95", "d2h_pinned_GBps": ">= 0.95", "softmax_4096_ms": ">= 1.0",
    # bench_conv vs bench/torch_conv.py (ANCHORS.md: conv 3x3 256->256, 56x56, b64, fp16)
    "conv3x3_256_56_b64_fp16_benchmark_TFLOPs": ">= 0.95",
    "conv3x3_256_56_b64_fp16_channels_last_benchmark_TFLOPs": ">= 0.95",
    # bench_resnet / bench_cnn vs bench/torch_resnet.py / torch_cnn.py (ANCHORS.md training steps;
    # rcuda's bf16 is the layers' bf16 path, beside PyTorch's bf16 model and its autocast)
    "resnet18_b512_fp32_img_per_s": ">= 0.95",
    "resnet18_b512_bf16_cl_img_per_s": ">= 0.95",
    "resnet18_b512_bf16_autocast_cl_img_per_s": ">= 0.95",  # both under bf16 autocast
    "mnistcnn_b128_fp32_step_us": "rcuda <= 1000 us",
    # bench_lstm vs bench/torch_lstm.py (ANCHORS.md: LSTM 2 x 512, batch 64, 100 steps)
    "lstm2x512_b64_t100_train_step_us": ">= 0.95 (time <= 1.05x)",
    "lstm2x512_b64_t100_infer_us": ">= 0.95 (time <= 1.05x)",
}


def read(path):
    out = {}
    for line in open(path):
        if ": " in line:
            k, v = line.strip().split(": ", 1)
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


ours, theirs = read(sys.argv[1]), read(sys.argv[2])
copy = ours.get("d2d_copy_GBps_rw")
print("| figure | rcuda | PyTorch | rcuda vs PyTorch (>1 better) | target |")
print("|---|---|---|---|---|")
for k, v in ours.items():
    t = theirs.get(k)
    ratio = "-"
    if t and v and not k.endswith(NO_RATIO):
        ratio = f"{(t / v if k.endswith(LOWER_IS_BETTER) else v / t):.2f}"
    print(f"| {k} | {v:.4g} | {t if t is not None else '-'} | {ratio} | {TARGETS.get(k, '')} |")
    # rcuda's bf16 layers beside PyTorch's bf16 autocast of a float32 model (the anchor's setting),
    # when the PyTorch file has that figure too.
    auto = k.replace("_bf16_", "_bf16_autocast_", 1) if "_bf16_" in k else None
    if auto and auto in theirs and v and not k.endswith(NO_RATIO):
        ta = theirs[auto]
        ratio = f"{(ta / v if k.endswith(LOWER_IS_BETTER) else v / ta):.2f}"
        print(f"| {k} vs PyTorch autocast | {v:.4g} | {ta} | {ratio} | {TARGETS.get(k, '')} |")
if copy:
    for k in ("add_2e8_GBps_rw", "sum_2e8_GBps"):
        if k in ours:
            print(f"| {k} / rcuda d2d copy bandwidth | {ours[k] / copy:.2f} | | | >= 0.85 |")
