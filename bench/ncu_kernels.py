"""Sums the kernel durations of an Nsight Compute CSV (`ncu --csv --metrics
gpu__time_duration.sum ...`) by kernel name and prints them largest first, with the total:
where a step's GPU time goes. Under ncu each kernel runs alone, so the total is the step's
kernel time without overlap, close to a graph replay's time when the step is GPU-bound.
  python3 bench/ncu_kernels.py FILE.csv [--top 25]"""
import csv, sys, re
from collections import defaultdict

def short(name):
    name = re.sub(r"\(.*", "", name)           # drop the argument list
    name = re.sub(r"<.*>", "<>", name)         # and the template arguments
    return name[-70:]

path = sys.argv[1]
top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 25
lines = open(path).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    sys.exit(f"{path}: no ncu CSV table")
total, by_name, count = 0.0, defaultdict(float), defaultdict(int)
for row in csv.DictReader(lines[start:]):
    if row.get("Metric Name") != "gpu__time_duration.sum":
        continue
    unit = row["Metric Unit"]
    value = float(row["Metric Value"].replace(",", ""))
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}
    if unit not in scale:
        sys.exit(f"{path}: unknown time unit {unit!r}")
    us = value * scale[unit]
    key = short(row["Kernel Name"])
    by_name[key] += us
    count[key] += 1
    total += us
print(f"{path}: {sum(count.values())} kernels, {total:.1f} us in all")
for key, us in sorted(by_name.items(), key=lambda kv: -kv[1])[:top]:
    print(f"{us:9.1f} us {count[key]:4d}x  {key}")
