"""Pairs bench_cuda's figures with PyTorch's (both `name: value` files) and prints a markdown
table with the ratio rcuda / PyTorch, oriented so that > 1 means rcuda is better."""
import sys

LOWER_IS_BETTER = ("_ms", "_us")
TARGETS = {
    "randn_1e4_cuda_ms": ">= 1.8", "randn_1e4_cpu_ms": ">= 1.0",
    "matmul_1e4_fp32_TFLOPs": ">= 0.97", "matmul_1e4_tf32_TFLOPs": ">= 0.97",
    "matmul_1e4_torch.float16_TFLOPs": ">= 0.97", "matmul_1e4_torch.bfloat16_TFLOPs": ">= 0.97",
    "matmul_8192_bf16_TFLOPs": ">= 0.97", "matmul_8192_fp8_TFLOPs": ">= 0.97",
    "h2d_pinned_GBps": ">= 0.95", "d2h_pinned_GBps": ">= 0.95", "softmax_4096_ms": ">= 1.0",
    # bench_conv vs bench/torch_conv.py (ANCHORS.md: conv 3x3 256->256, 56x56, b64, fp16)
    "conv3x3_256_56_b64_fp16_benchmark_TFLOPs": ">= 0.95",
    "conv3x3_256_56_b64_fp16_channels_last_benchmark_TFLOPs": ">= 0.95",
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
    if t:
        ratio = f"{(t / v if k.endswith(LOWER_IS_BETTER) else v / t):.2f}"
    print(f"| {k} | {v:.4g} | {t if t is not None else '-'} | {ratio} | {TARGETS.get(k, '')} |")
if copy:
    for k in ("add_2e8_GBps_rw", "sum_2e8_GBps"):
        if k in ours:
            print(f"| {k} / rcuda d2d copy bandwidth | {ours[k] / copy:.2f} | | | >= 0.85 |")
