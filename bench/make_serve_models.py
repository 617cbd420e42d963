#!/usr/bin/env python3
"""Model repositories for bench/serve_load.sh: the MLP (784-512-512-10, bench_train's MNIST MLP,
random weights, dynamic batch) and, with --resnet, ResNet-18 at 224x224 in float16 (the file
bench/torch_onnx_resnet.py writes), each served twice: `<model>` runs one request at a time and
`<model>_batched` merges requests (dynamic batching, max_batch_size 64; on CUDA its batch sizes
are captured as CUDA graphs).
    python3 bench/make_serve_models.py REPO [--resnet RESNET.onnx] [--device cpu|cuda]
Also writes REPO/../<model>_request.json (KServe v2 JSON, one row) and, for ResNet-18,
<model>_request.bin with its Inference-Header-Content-Length in <model>_request.len (binary tensors:
a 224x224 image is 150,528 values)."""
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


def add_model(repo, name, onnx_path, **kw):
    for batched in (False, True):
        served = name + ("_batched" if batched else "")
        os.makedirs(os.path.join(repo, served, "1"), exist_ok=True)
        shutil.copy(onnx_path, os.path.join(repo, served, "1", "model.onnx"))
        with open(os.path.join(repo, served, "config.json"), "w") as f:
            json.dump(config(served, batched, **kw), f, indent=2)


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
    add_model(a.repo, "mlp", mlp_path, device=a.device, dtype="TYPE_FP32", dims_in=[784],
              dims_out=[10], in_name="x", out_name="y")
    row = np.random.default_rng(0).standard_normal(784).astype(np.float32)
    with open(os.path.join(out, "mlp_request.json"), "w") as f:
        json.dump({"inputs": [{"name": "x", "shape": [1, 784], "datatype": "FP32",
                               "data": [round(float(v), 6) for v in row]}]}, f)
    if a.resnet:
        add_model(a.repo, "resnet18", a.resnet, device=a.device, dtype="TYPE_FP16",
                  dims_in=[3, 224, 224], dims_out=[1000], in_name="image", out_name="logits")
        image = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float16)
        header = json.dumps({
            "inputs": [{"name": "image", "shape": [1, 3, 224, 224], "datatype": "FP16",
                        "parameters": {"binary_data_size": image.nbytes}}],
            "outputs": [{"name": "logits", "parameters": {"binary_data": True}}],
        }).encode()
        with open(os.path.join(out, "resnet18_request.bin"), "wb") as f:
            f.write(header + image.tobytes())
        with open(os.path.join(out, "resnet18_request.len"), "w") as f:
            f.write(str(len(header)))


if __name__ == "__main__":
    main()
