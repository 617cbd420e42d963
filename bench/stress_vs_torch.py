"""`rcuda stress --level 1 --json` beside PyTorch on the same GPU, dtypes and shapes, in one call:
rcuda's figures (TFLOP/s of each product dtype, GB/s of device and pinned host copies) from the
stress's JSON report, then PyTorch's for the same work (torch.matmul in float32 with TF32 off and
on and in bfloat16, torch._scaled_mm of float8_e4m3fn operands into bfloat16 where the GPU and
PyTorch have it; Tensor.copy_ of the same bytes), and the table of rcuda / PyTorch (> 1: rcuda
faster). The operands are laid out as the stress lays them out: a [n, n] row-major and
b = b_t.t() with b_t [n, n] row-major.

    python3 bench/stress_vs_torch.py [--rcuda build-gpu/apps/cli/rcuda] [--level 1] [--device 0]
                                     [--report stress.json]   (reuse a report instead of running)

Prints `name: value` lines (rcuda_*, torch_*) and the markdown table; exits 1 when the stress
did not pass (its verdict and exit status are printed). PyTorch runs after rcuda, in this
process, so that the stress sizes itself on a GPU nobody else holds."""
import argparse
import json
import statistics
import subprocess
import sys
import time


def log(k, v): print(f"{k}: {v}", flush=True)


p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--rcuda", default="build-gpu/apps/cli/rcuda")
p.add_argument("--level", type=int, default=1)
p.add_argument("--device", type=int, default=0)
p.add_argument("--report", help="a report of `rcuda stress --json` to use instead of running it")
p.add_argument("--chunks", type=int, default=5, help="timed chunks per figure (median taken)")
a = p.parse_args()

# ---- rcuda -----------------------------------------------------------------------------------
if a.report:
    report, status = json.load(open(a.report)), None
else:
    t0 = time.time()
    run = subprocess.run([a.rcuda, "stress", "--level", str(a.level), "--json", "--device",
                          str(a.device)], stdout=subprocess.PIPE, stderr=sys.stderr, text=True)
    status = run.returncode
    report = json.loads(run.stdout)
    log("rcuda_stress_wall_s", round(time.time() - t0, 1))
log("rcuda_stress_verdict", f"{report['verdict']} (exit {report['exit_code'] if status is None else status})")
if not report["gpus"]:
    sys.exit(f"no GPU: {report['no_gpu_reason']}")
g = report["gpus"][0]
log("gpu", f"{g['name']} sm_{g['compute_capability'].replace('.', '')} {g['uuid']}")
log("rcuda_stress_seconds", report["seconds"])
log("rcuda_wrong_elements", g["wrong_elements"])
rcuda = {f["name"]: f["value"] for f in g["figures"]}
for name, value in rcuda.items():
    log("rcuda_" + name, round(value, 2))
for m in g["gemm"]:
    if m["products"]:
        log(f"rcuda_gemm_{m['dtype']}_shape", f"{m['n']}^3 x {m['products']} products over {m['operand_sets']} sets")
        log(f"rcuda_gemm_{m['dtype']}_reference_worst_error_ratio", round(m["reference"]["worst_error_ratio"], 4))
nv = g["nvml"]
if nv["available"]:
    for k in ("temperature_celsius", "power_watts", "sm_clock_hertz"):
        if nv[k]:
            log("rcuda_nvml_" + k, "min %.4g mean %.4g max %.4g" % (nv[k]["min"], nv[k]["mean"], nv[k]["max"]))
    log("rcuda_nvml_clock_events", nv["clock_events"] or "none")

# ---- PyTorch ---------------------------------------------------------------------------------
import torch  # noqa: E402  (after the stress: this process must not hold the GPU during it)

log("torch", torch.__version__)
dev = torch.device("cuda", a.device)
torch.cuda.set_device(dev)
cc = torch.cuda.get_device_capability(dev)


def median_seconds(work, per_chunk):
    """Median over --chunks of the device time of `per_chunk` calls of work(i), CUDA events."""
    for i in range(3):
        work(i)
    torch.cuda.synchronize()
    times = []
    for _ in range(a.chunks):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(per_chunk):
            work(i)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def scaled_mm(x, y, one):
    r = torch._scaled_mm(x, y, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return r[0] if isinstance(r, tuple) else r  # PyTorch 2.1-2.3 also returned the amax


torch_figures = {}
for m in g["gemm"]:
    if not m["products"]:
        continue
    n, dtype = m["n"], m["dtype"]
    sets = max(1, min(4, m["operand_sets"]))  # a few sets, as the stress cycles through its own
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    ops = []
    if dtype in ("float32", "tf32", "bfloat16"):
        t = torch.float32 if dtype != "bfloat16" else torch.bfloat16
        for _ in range(sets):
            x = torch.randn(n, n, device=dev).to(t)
            y = torch.randn(n, n, device=dev).to(t).t()
            ops.append(lambda x=x, y=y: torch.matmul(x, y))
    elif dtype == "float8_e4m3fn":
        if not hasattr(torch, "_scaled_mm") or cc < (8, 9):
            log("torch_gemm_float8_e4m3fn", "torch._scaled_mm not available here")
            continue
        one = torch.ones((), device=dev)
        for _ in range(sets):
            x = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
            y = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()
            ops.append(lambda x=x, y=y: scaled_mm(x, y, one))
    flop = 2.0 * n ** 3
    per_chunk = max(len(ops), int(0.3 / (flop / (m["tflops"] * 1e12))))  # about 0.3 s a chunk
    s = median_seconds(lambda i: ops[i % len(ops)](), per_chunk)
    torch_figures[f"gemm_{dtype}_tflops"] = flop * per_chunk / s / 1e12
    del ops
    torch.cuda.empty_cache()
torch.backends.cuda.matmul.allow_tf32 = False

for name, key, factor in (("device_copy_gbps", "device_copy", 2), ("host_to_device_gbps", "host_to_device", 1),
                          ("device_to_host_gbps", "device_to_host", 1)):
    c = g[key]
    if not c["copies"]:
        continue
    elements = c["bytes"] // 4
    if key == "device_copy":
        src, dst = torch.rand(elements, device=dev), torch.empty(elements, device=dev)
        work = lambda i: dst.copy_(src)  # noqa: E731
    else:
        host = torch.rand(elements).pin_memory()
        on_dev = torch.empty(elements, device=dev)
        work = (lambda i: on_dev.copy_(host, non_blocking=True)) if key == "host_to_device" else \
            (lambda i: host.copy_(on_dev, non_blocking=True))
    per_chunk = max(1, int(0.1 * c["gbps"] * 1e9 / (factor * c["bytes"])))  # about 0.1 s a chunk
    s = median_seconds(work, per_chunk)
    torch_figures[name] = factor * c["bytes"] * per_chunk / s / 1e9
    torch.cuda.empty_cache()

for name, value in torch_figures.items():
    log("torch_" + name, round(value, 2))

# ---- the table -------------------------------------------------------------------------------
print()
print(f"| figure ({g['name']}) | rcuda | PyTorch | rcuda / PyTorch |")
print("|---|---|---|---|")
for name, value in rcuda.items():
    unit = "TFLOP/s" if name.endswith("tflops") else "GB/s"
    other = torch_figures.get(name)
    print(f"| {name} | {value:.1f} {unit} | " + (f"{other:.1f} {unit} | {value / other:.2f} |" if other else "- | - |"))
print()
print(f"rcuda stress: {report['verdict']}, {g['wrong_elements']} wrong elements, {report['seconds']:.1f} s")
sys.exit(0 if report["verdict"] == "pass" else 1)
