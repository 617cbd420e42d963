#!/usr/bin/env python3
"""Validates `rcuda stress --json` output (stdin or a file) against docs/stress-schema.json
(JSON Schema draft 2020-12), and checks what the schema cannot express: the verdict follows from
the GPUs' wrong elements, errors and figures; each GPU's wrong_elements is the sum of its parts;
figures are the rates of the phases that ran.
    validate_stress_json.py [FILE] [--exit-code N]   (N: the exit status the run gave)"""
import json
import sys

from json_schema import validate

args = [a for a in sys.argv[1:]]
exit_code = None
if "--exit-code" in args:
    i = args.index("--exit-code")
    exit_code = int(args[i + 1])
    del args[i:i + 2]
report = json.load(open(args[0]) if args else sys.stdin)
validate(report, "stress-schema.json", "stress-json")

failed = below = False
for g in report["gpus"]:
    parts = [g["device_copy"], g["host_to_device"], g["device_to_host"]]
    wrong = sum(p["wrong_elements"] for p in parts)
    wrong += sum(m["wrong_elements"] + m["reference"]["wrong_elements"] for m in g["gemm"])
    assert wrong == g["wrong_elements"], (g["index"], wrong, g["wrong_elements"])
    failed = failed or wrong > 0 or bool(g["errors"])
    names = [f["name"] for f in g["figures"]]
    ran = [f"gemm_{m['dtype']}_tflops" for m in g["gemm"] if m["products"] > 0 and m["seconds"] > 0]
    ran += [f"{k}_gbps" for k in ("device_copy", "host_to_device", "device_to_host")
            if g[k]["copies"] > 0 and g[k]["seconds"] > 0]
    assert names == ran, (names, ran)
    for f in g["figures"]:
        if f["baseline"] is not None:
            assert abs(f["ratio"] - f["value"] / f["baseline"]) <= 1e-9 * f["ratio"], f
            assert f["below_threshold"] == (f["ratio"] < report["threshold"]), f
        else:
            assert f["ratio"] is None and not f["below_threshold"], f
        below = below or f["below_threshold"]
expected = ("no_gpu" if not report["gpus"] else "failed" if failed else
            "interrupted" if report["interrupted"] else "below_baseline" if below else "pass")
assert report["verdict"] == expected, (report["verdict"], expected)
if exit_code is not None:
    assert exit_code == report["exit_code"], (exit_code, report["exit_code"])
print(f"stress-json: valid ({report['verdict']}, exit {report['exit_code']}, {len(report['gpus'])} GPUs)")
