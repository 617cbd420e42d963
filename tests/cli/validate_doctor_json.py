#!/usr/bin/env python3
"""Validates `rcuda doctor --json` output (stdin or a file) against docs/doctor-schema.json
(JSON Schema draft 2020-12), and checks what the schema cannot express: the summary counts
match the checks, `ok` matches the absence of FAIL, and an unavailable CUDA says why."""
import json
import sys

from json_schema import validate

report = json.load(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
validate(report, "doctor-schema.json", "doctor-json")

counts = {s: sum(c["status"] == s.upper() for c in report["checks"]) for s in ("pass", "warn", "fail", "skip")}
assert counts == report["summary"], (counts, report["summary"])
assert report["ok"] == (counts["fail"] == 0)
if not report["cuda"]["available"]:
    assert report["cuda"]["unavailable_reason"], "CUDA unavailable without a reason"
print(f"doctor-json: valid ({counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail, {counts['skip']} skip)")
