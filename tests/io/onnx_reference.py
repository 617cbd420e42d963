#!/usr/bin/env python3
"""The reference side of rcuda's ONNX export tests: the onnx package checks a model rcuda wrote
and ONNX Runtime runs it (CPU).

  onnx_reference.py check MODEL
      onnx.checker.check_model(full_check=True): the checker of the newest ONNX, with strict
      shape inference; rcuda's C++ checker (ONNX 1.12) knows opsets up to 17 only.
  onnx_reference.py run MODEL OUTDIR INPUT.npy...
      checks MODEL as above, runs it in ONNX Runtime on the inputs (in the graph's input order)
      and writes OUTDIR/output_<i>.bin (the values, raw little-endian, in the output's own
      dtype) and OUTDIR/outputs.json ([{"name", "dtype", "shape"}, ...]).
Exit status 0 on success; any failure prints its reason to stderr and exits 1.
"""
import json
import os
import sys

import numpy as np
import onnx


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    return model


def run(path, outdir, inputs):
    import onnxruntime as ort

    model = check(path)
    options = ort.SessionOptions()
    # The reference computes each op as written: no fusion that would round differently.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    if len(names) != len(inputs):
        raise SystemExit(f"the model has {len(names)} inputs, {len(inputs)} given")
    feeds = {name: np.load(file) for name, file in zip(names, inputs)}
    outputs = session.run(None, feeds)
    described = []
    for i, (meta, value) in enumerate(zip(session.get_outputs(), outputs)):
        # np.array, not ascontiguousarray, which turns a 0-d result into 1-d.
        value = np.array(value, order="C")
        with open(os.path.join(outdir, f"output_{i}.bin"), "wb") as f:
            f.write(value.astype(value.dtype.newbyteorder("<")).tobytes())
        described.append({"name": meta.name, "dtype": str(value.dtype),
                          "shape": list(value.shape)})
    with open(os.path.join(outdir, "outputs.json"), "w") as f:
        json.dump(described, f)


def main(argv):
    if len(argv) == 3 and argv[1] == "check":
        check(argv[2])
    elif len(argv) >= 4 and argv[1] == "run":
        run(argv[2], argv[3], argv[4:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
