#!/usr/bin/env python3
"""Model repositories for bench/serve_load.sh: the MLP (784-512-512-10, bench_train's MNIST MLP,
random weights, dynamic batch) and, with --resnet, ResNet-18 at 224x224 in float16 (the file
bench/torch_onnx_resnet.py writes), each served twice: `<model>` runs one request at a time and
`<model>_batched` merges requests (dynamic batching, max_batch_size 64; on CUDA its batch sizes
are captured as CUDA graphs); `mlp_overload` is the batched MLP with a queue of 64 and a 100 ms
timeout, for the overload check.
    python3 bench/make_serve_models.py REPO [--resnet RESNET.onnx] [--device cpu|cuda]
Also writes, beside REPO: mlp_request.json (KServe v2 JSON, one row), mlp_request64.bin (64 rows
as binary tensors, Triton's extension) and, for ResNet-18, resnet18_request.bin (one image, binary:
150,528 values); each .bin's Inference-Header-Content-Length is in the .len file beside it."""
import argparse
import json
import os
import shutil
import warnings

import numpy as np
import torch
from torch import nn


def config(name, batched, device, dtype, dims_in, dims_out, in_name, out_name):
    c = {
        "name": name,
        "max_batch_size": 64,
        "input": [{"name": in_name, "data_type": dtype, "dims": dims_in}],
        "output": [{"name": out_name, "data_type": dtype, "dims": dims_out}],
        "instance_group": [{"count": 1, "kind": "KIND_GPU" if device == "cuda" else "KIND_CPU"}],
    }
    if batched:
        c["dynamic_batching"] = {
            "max_queue_delay_microseconds": 500,
            "default_queue_policy": {"max_queue_size": 1024},
        }
        if device == "cuda":
            c["cuda_graphs"] = [1, 2, 4, 8, 16, 32, 64]
    else:
        c["dynamic_batching"] = None
    return {k: v for k, v in c.items() if v is not None}


def write_model(repo, served, onnx_path, c):
    os.makedirs(os.path.join(repo, served, "1"), exist_ok=True)
    shutil.copy(onnx_path, os.path.join(repo, served, "1", "model.onnx"))
    with open(os.path.join(repo, served, "config.json"), "w") as f:
        json.dump(c, f, indent=2)


def add_model(repo, name, onnx_path, **kw):
    for batched in (False, True):
        served = name + ("_batched" if batched else "")
        write_model(repo, served, onnx_path, config(served, batched, **kw))


def write_binary_request(stem, input_name, output_name, value):
    """A KServe v2 request with binary tensors (Triton's extension) in stem.bin, the length of its
    JSON header in stem.len."""
    datatype = {np.float32: "FP32", np.float16: "FP16"}[value.dtype.type]
    header = json.dumps({
        "inputs": [{"name": input_name, "shape": list(value.shape), "datatype": datatype,
                    "parameters": {"binary_data_size": value.nbytes}}],
        "outputs": [{"name": output_name, "parameters": {"binary_data": True}}],
    }).encode()
    with open(stem + ".bin", "wb") as f:
        f.write(header + value.tobytes())
    with open(stem + ".len", "w") as f:
        f.write(str(len(header)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("repo")
    p.add_argument("--resnet")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    os.makedirs(a.repo, exist_ok=True)
    out = os.path.dirname(os.path.abspath(a.repo))
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10)).eval()
    mlp_path = os.path.join(out, "mlp784.onnx")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(mlp, (torch.randn(2, 784),), mlp_path, input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False,
                          dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    mlp_kw = dict(device=a.device, dtype="TYPE_FP32", dims_in=[784], dims_out=[10], in_name="x",
                  out_name="y")
    add_model(a.repo, "mlp", mlp_path, **mlp_kw)
    # The overload check's model: batched, with a short queue and a timeout, so that excess
    # requests are refused (503) rather than queued without bound.
    overload = config("mlp_overload", True, **mlp_kw)
    overload["dynamic_batching"]["default_queue_policy"] = {
        "max_queue_size": 64, "default_timeout_microseconds": 100000}
    write_model(a.repo, "mlp_overload", mlp_path, overload)
    row = np.random.default_rng(0).standard_normal(784).astype(np.float32)
    with open(os.path.join(out, "mlp_request.json"), "w") as f:
        json.dump({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32",
                               "data": [round(float(v), 6) for v in row]}]}, f)
    write_binary_request(os.path.join(out, "mlp_request64"), "x", "y",
                         np.random.default_rng(2).standard_normal((64, 784)).astype(np.float32))
    if a.resnet:
        add_model(a.repo, "resnet18", a.resnet, device=a.device, dtype="TYPE_FP16",
                  dims_in=[3, 224, 224], dims_out=[1000], in_name="image", out_name="logits")
        image = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float16)
        write_binary_request(os.path.join(out, "resnet18_request"), "image", "logits", image)


if __name__ == "__main__":
    main()
