"""What bench/torch_resnet.py and bench/torch_cnn.py share, as bench/train_step.h does for their
C++ counterparts: the command line, the figures' names and the step timing of
shared/anchors/torch_train_h200.py (warm-up, chunks of steps timed with CUDA events, host clock
on the CPU, the median chunk's time per step)."""
import argparse, time
import torch


def log(k, v): print(f"{k}: {v}", flush=True)


def parse(doc, batch, steps, chunks, warmup, extra=None):
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--autocast", action="store_true",
                   help="float32 model under torch.autocast(bfloat16), the anchor's bf16 setting")
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--steps", type=int, default=steps, help="steps per timed chunk")
    p.add_argument("--chunks", type=int, default=chunks)
    p.add_argument("--warmup", type=int, default=warmup)
    p.add_argument("--no-benchmark", action="store_true", help="cudnn.benchmark off")
    if extra: extra(p)
    a = p.parse_args()
    if a.autocast and a.dtype != "float32":
        p.error("--autocast runs a float32 model; leave --dtype at float32")
    a.torch_dtype = torch.bfloat16 if a.dtype == "bfloat16" else torch.float32
    a.memory_format = torch.channels_last if a.channels_last else torch.contiguous_format
    torch.backends.cudnn.benchmark = not a.no_benchmark  # the anchor sets it
    log("torch", torch.__version__)
    if a.device != "cpu":
        log("cudnn", torch.backends.cudnn.version())
    return a


def tag(a):
    """bench/train_step.h's tag_of, plus `bf16_autocast` for the anchor's autocast setting."""
    t = "bf16_autocast" if a.autocast else ("bf16" if a.dtype == "bfloat16" else "fp32")
    return t + ("_cl" if a.channels_last else "") + ("_cpu" if a.device == "cpu" else "")


def per_step_us(dev, step, n, chunks):  # as torch_train_h200.py, the warm-up done by the caller
    if dev == "cpu":
        ts = []
        for _ in range(chunks):
            t = time.perf_counter()
            for _ in range(n): step()
            ts.append((time.perf_counter() - t) * 1e6 / n)
        ts.sort(); return ts[len(ts) // 2]
    torch.cuda.synchronize(); ts = []
    for _ in range(chunks):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n): step()
        e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) * 1e3 / n)
    ts.sort(); return ts[len(ts) // 2]


def host_us(dev, step, n):
    if dev != "cpu": torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): step()
    h = (time.perf_counter() - t) * 1e6 / n
    if dev != "cpu": torch.cuda.synchronize()
    return h


class LossTrace:
    def __init__(self): self.first = self.first_timed = self.last = None; self.timing = False
    def record(self, loss):
        self.last = loss.detach()
        if self.first is None: self.first = self.last
        if self.timing and self.first_timed is None: self.first_timed = self.last


def time_steps(name, a, step, trace):
    """Warm-up, the timed chunks, and the figures bench/train_step.h's time_steps prints; returns
    microseconds per step."""
    for _ in range(a.warmup): step()
    if a.device != "cpu":
        torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    trace.timing = True
    us = per_step_us(a.device, step, a.steps, a.chunks)
    if a.device != "cpu":
        log(f"{name}_base_allocated_MB", base / 1e6)
        log(f"{name}_peak_allocated_MB", torch.cuda.max_memory_allocated() / 1e6)
    log(f"{name}_steps_run", a.warmup + a.steps * a.chunks)
    log(f"{name}_loss_first", float(trace.first))
    log(f"{name}_loss_first_timed", float(trace.first_timed))
    log(f"{name}_loss_last", float(trace.last))
    return us
