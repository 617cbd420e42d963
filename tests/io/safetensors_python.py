#!/usr/bin/env python3
"""The reference implementation's side of rcuda's safetensors tests (huggingface/safetensors,
CPU only, no torch: numpy holds the bytes).

  safetensors_python.py write SEED FILE JSON  writes FILE with safetensors' own writer: one tensor
                                             per dtype code (random values from SEED, an empty
                                             tensor, a 0-d tensor) and metadata; JSON gets what
                                             was written (dtype, shape, row-major values).
  safetensors_python.py read FILE JSON        reads FILE with safetensors' own reader and writes
                                             its tensors (dtype, shape, values) and metadata.
With a JSON path ending in .txt the same is written as text lines for R, which has no JSON
reader of its own: "tensor<TAB>name<TAB>code<TAB>shape,...<TAB>value value ..." and
"metadata<TAB>key<TAB>value".

Values are decoded here from the raw bytes (bfloat16 and float8 by their bit layouts), so the
test compares rcuda's reading and writing with an independent decoder. Exit status 0 on success.
"""
import json
import sys

import numpy as np
import safetensors

NUMPY = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U8": np.uint8, "U16": np.uint16, "U32": np.uint32,
    "BOOL": np.bool_,
}
# The dtype names safetensors' writer takes, by code.
WRITER_NAME = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
    "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "U16": "uint16",
    "U32": "uint32", "BOOL": "bool", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
    "C64": "complex64",
}


def e4m3fn_value(bits):
    sign = -1.0 if bits & 0x80 else 1.0
    exponent, mantissa = (bits >> 3) & 0xF, bits & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return float("nan")
    if exponent == 0:
        return sign * mantissa / 8.0 * 2.0 ** -6
    return sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7)


def decode(code, data):
    """Row-major values of a tensor's bytes, as Python numbers."""
    raw = bytes(data)
    if code in NUMPY:
        values = np.frombuffer(raw, dtype=NUMPY[code])
        if code == "BOOL":
            return [bool(v) for v in values]
        if code.startswith("F"):
            return [float(v) for v in values]
        return [int(v) for v in values]
    if code == "BF16":  # the top half of a float32
        bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
        return [float(v) for v in bits.view(np.float32)]
    if code == "F8_E5M2":  # the top byte of a float16
        bits = np.frombuffer(raw, dtype=np.uint8).astype(np.uint16) << 8
        return [float(v) for v in bits.view(np.float16)]
    if code == "F8_E4M3":
        return [e4m3fn_value(b) for b in raw]
    if code == "C64":  # float32 pairs, the real part first: the values as [re, im, re, im, ...]
        return [float(v) for v in np.frombuffer(raw, dtype=np.float32)]
    raise SystemExit(f"unexpected dtype {code}")


def random_bits(rng, code, shape):
    """Random finite values of a dtype, as the raw array the writer takes."""
    n = int(np.prod(shape)) if shape else 1
    if code == "BOOL":
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    if code in ("F64", "F32", "F16"):
        return rng.uniform(-4, 4, n).astype(NUMPY[code]).reshape(shape)
    if code == "C64":
        return (rng.uniform(-4, 4, n) + 1j * rng.uniform(-4, 4, n)).astype(np.complex64).reshape(shape)
    if code == "BF16":
        f = rng.uniform(-4, 4, n).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16).reshape(shape)
    if code in ("F8_E4M3", "F8_E5M2"):
        # Any byte but the NaN (and, for e5m2, infinity) encodings.
        b = rng.integers(0, 256, n).astype(np.uint8)
        bad = (b & 0x7F) == 0x7F if code == "F8_E4M3" else (b & 0x7C) == 0x7C
        b[bad] = 0x30
        return b.reshape(shape)
    info = np.iinfo(NUMPY[code])
    values = rng.integers(info.min, info.max, n, dtype=NUMPY[code], endpoint=True)
    values[:2] = [info.min, info.max][: len(values[:2])]  # the extremes survive the trip
    return values.reshape(shape)


def write(seed, path, json_path):
    rng = np.random.default_rng(seed)
    arrays = {}
    for i, code in enumerate(WRITER_NAME):
        arrays[code.lower()] = (code, random_bits(rng, code, [2 + i % 3, 3]))
    arrays["empty"] = ("F32", np.zeros((0, 4), dtype=np.float32))
    arrays["scalar"] = ("I64", np.array(-7, dtype=np.int64))
    keep, specs, expected = [], {}, {}
    for name, (code, arr) in arrays.items():
        arr = arr.copy(order="C")  # (ascontiguousarray would make a 0-d array 1-d)
        keep.append(arr)
        if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8
            specs[name] = safetensors.TensorSpec(dtype=WRITER_NAME[code], shape=list(arr.shape),
                                                 data_ptr=arr.ctypes.data, data_len=arr.nbytes)
        else:
            specs[name] = {"dtype": WRITER_NAME[code], "shape": list(arr.shape),
                           "data": arr.tobytes()}
        expected[name] = {"dtype": code, "shape": list(arr.shape),
                          "values": decode(code, arr.tobytes())}
    metadata = {"format": "pt", "written_by": "safetensors " + safetensors.__version__}
    safetensors.serialize_file(specs, path, metadata=metadata)
    dump({"tensors": expected, "metadata": metadata}, json_path)


def read(path, json_path):
    with open(path, "rb") as f:
        content = f.read()
    tensors = {}
    for name, info in safetensors.deserialize(content):
        tensors[name] = {"dtype": info["dtype"], "shape": list(info["shape"]),
                         "values": decode(info["dtype"], info["data"])}
    with safetensors.safe_open(path, framework="numpy") as f:
        metadata = f.metadata() or {}
    dump({"tensors": tensors, "metadata": metadata}, json_path)


def dump(result, path):
    with open(path, "w") as out:
        if not path.endswith(".txt"):
            json.dump(result, out)
            return
        for name, t in result["tensors"].items():
            values = " ".join(str(int(v)) if isinstance(v, bool) else repr(v) for v in t["values"])
            shape = ",".join(str(s) for s in t["shape"])
            out.write(f"tensor\t{name}\t{t['dtype']}\t{shape}\t{values}\n")
        for key, value in result["metadata"].items():
            out.write(f"metadata\t{key}\t{value}\n")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "write":
        write(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "read":
        read(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
