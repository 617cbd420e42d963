#!/usr/bin/env python3
"""ONNX Runtime as the reference for rcuda's ONNX export tests (test-jit.R).

  onnxruntime_run.py MODEL OUTDIR FILE:DTYPE:SHAPE...
Checks MODEL with onnx.checker (full_check), runs it on the CPU provider with graph
optimisations off on the inputs (raw little-endian float64 values in row-major order, cast to
DTYPE, SHAPE as "2,3,4") and writes OUTDIR/output_<i>.bin (float64) and output_<i>.shape.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main(argv):
    model_path, outdir, specs = argv[1], argv[2], argv[3:]
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feeds = {}
    for meta, spec in zip(session.get_inputs(), specs):
        path, dtype, shape = spec.split(":")
        dims = [int(d) for d in shape.split(",")] if shape else []
        feeds[meta.name] = np.fromfile(path, "<f8").astype(dtype).reshape(dims)
    for i, value in enumerate(session.run(None, feeds)):
        value = np.array(value, dtype="<f8", order="C")
        value.tofile(os.path.join(outdir, f"output_{i}.bin"))
        with open(os.path.join(outdir, f"output_{i}.shape"), "w") as f:
            f.write(",".join(str(d) for d in value.shape))


if __name__ == "__main__":
    main(sys.argv)
