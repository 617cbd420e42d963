#!/usr/bin/env python3
"""ResNet-18 at 224x224 for rcuda's ONNX import benchmark (bench/onnx_resnet.sh): builds the model
(tests/onnx_models/make_fixtures.py's ResNet18, full width, random weights and batch-norm
statistics), exports it with torch.onnx.export (TorchScript exporter, opset 17, dynamic batch)
in float32 and float16, and times it here: PyTorch eager and PyTorch's CUDA-graph replay on the
GPU (cudnn.benchmark on, under inference_mode), ONNX Runtime's CPU provider with --threads threads.
    python3 bench/torch_onnx_resnet.py OUTDIR [--threads 16] [--iters 100]
Writes OUTDIR/resnet18_{fp32,fp16}.onnx, check_input.pb / check_output_{fp32,fp16}.pb (a batch of
2 and PyTorch's outputs for it) and prints `name: value` lines with bench_onnx's names."""
import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "onnx_models"))
from make_fixtures import ResNet18, randomize_batch_norm, save_tensor  # noqa: E402


def time_it(fn, iters, sync):
    for _ in range(max(3, iters // 10)):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - start) / iters


def main():
    p = argparse.ArgumentParser()
    p.add_argument("outdir")
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--iters", type=int, default=100)
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    torch.manual_seed(0)
    model = randomize_batch_norm(ResNet18()).eval()
    check = torch.randn(2, 3, 224, 224)
    save_tensor(check.numpy(), os.path.join(a.outdir, "check_input.pb"))
    cuda = torch.cuda.is_available()
    torch.backends.cudnn.benchmark = True
    for tag, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
        device = "cuda" if cuda else "cpu"
        m = model.to(device=device, dtype=dtype)
        path = os.path.join(a.outdir, "resnet18_%s.onnx" % tag)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(m, (check.to(device, dtype),), path, input_names=["image"],
                              output_names=["logits"], opset_version=17, dynamo=False,
                              dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
            ref = m(check.to(device, dtype)).float().cpu().numpy()
        save_tensor(ref.astype(np.float32 if tag == "fp32" else np.float16),
                    os.path.join(a.outdir, "check_output_%s.pb" % tag))
        if not cuda:
            continue
        for batch in (1, 64):
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype)
            iters = a.iters if batch == 1 else max(20, a.iters // 5)
            with torch.inference_mode():
                t = time_it(lambda: m(x), iters, torch.cuda.synchronize)
            print("resnet18_b%d_%s_eager_img_per_s: %.1f" % (batch, tag, batch / t), flush=True)
            # CUDA-graph replay as rcuda's: copy the input in, replay, copy the output out.
            static_x = x.clone()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.inference_mode(), torch.cuda.stream(stream):
                for _ in range(3):
                    m(static_x)
            torch.cuda.current_stream().wait_stream(stream)
            g = torch.cuda.CUDAGraph()
            with torch.inference_mode(), torch.cuda.graph(g):
                static_y = m(static_x)

            def replay():
                static_x.copy_(x)
                g.replay()
                return static_y.clone()

            with torch.inference_mode():
                t = time_it(replay, iters, torch.cuda.synchronize)
            print("resnet18_b%d_%s_graph_img_per_s: %.1f" % (batch, tag, batch / t), flush=True)
    model.to(device="cpu", dtype=torch.float32)

    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = a.threads
    options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = ort.InferenceSession(os.path.join(a.outdir, "resnet18_fp32.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    print("resnet18_load_ms: %.2f" % ((time.perf_counter() - start) * 1e3), flush=True)
    for batch in (1, 64):
        x = np.random.randn(batch, 3, 224, 224).astype(np.float32)
        iters = 20 if batch == 1 else 3
        t = time_it(lambda: session.run(None, {"image": x}), iters, lambda: None)
        print("resnet18_b%d_fp32_cpu_img_per_s: %.1f" % (batch, batch / t), flush=True)


if __name__ == "__main__":
    main()
