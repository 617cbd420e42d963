"""PyTorch's values and gradients of single layers, for tests/golden/test_golden_layers.cpp:
conv1d, conv2d, conv_transpose2d, the pools (max, avg, adaptive) and the normalisations (batch,
group, instance, layer), over a table of configurations each (strides, padding, dilation,
groups, ceil_mode, odd sizes, batch 1, unbatched input, ...). Float64 on the CPU: the reference
for every rcuda device and dtype.

For each configuration it writes into DIR/layers/ one raw little-endian file per tensor,
<config>__<tensor>.bin: the inputs (x, w, b, running statistics), a random upstream gradient g,
the output, the indices of max pools, the running statistics after the call, and the gradients
of sum(out * g) with respect to x, w and b. DIR/layers/manifest.json lists the configurations:
their name, layer, arguments and tensors (shape and dtype), which is all the test reads.

Max pools' inputs hold distinct values k / 32 (k integers below 256 in magnitude, a random
permutation in each plane), exact in float16 and bfloat16 too, so that every window has one
maximum in every dtype and the indices are well defined.
    python3 tests/golden/make_golden_layers.py DIR"""
import json
import os
import sys
import warnings

import torch
import torch.nn.functional as F

out_dir = os.path.join(sys.argv[1], "layers")
os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(20240611)
# 'same' padding with an even kernel is one of the configurations, not a mistake.
warnings.filterwarnings("ignore", message="Using padding='same' with even kernel")
d = torch.float64
configs = []


def randn(*shape):
    return torch.randn(*shape, dtype=d)


def distinct(*shape):
    """Values k / 32, a permutation of distinct integers k in each (n, c) plane."""
    plane = 1
    for s in shape[-2:] if len(shape) >= 4 else shape[-1:]:
        plane *= s
    assert plane <= 512, "max pool planes must hold at most 512 elements"
    planes = 1
    for s in shape:
        planes *= s
    planes //= plane
    rows = [torch.randperm(plane, dtype=d) - plane // 2 for _ in range(planes)]
    return (torch.stack(rows) / 32).reshape(shape)


def record(name, layer, args, inputs, fn, buffers=()):
    """Runs fn(**inputs) (inputs named in `buffers` are updated in place, not differentiated),
    backward with a random upstream gradient, and records every tensor of the configuration."""
    assert all(c["name"] != name for c in configs), name
    leaves = {k: v.clone().requires_grad_(k not in buffers) for k, v in inputs.items()}
    before = {k: v.detach().clone() for k, v in leaves.items()}
    result = fn(**leaves)
    out, indices = result if isinstance(result, tuple) else (result, None)
    g = randn(*out.shape)
    out.backward(g)
    tensors = dict(before)
    tensors["g"] = g
    tensors["out"] = out
    if indices is not None:
        tensors["indices"] = indices
    for k in buffers:
        tensors[k + "_after"] = leaves[k]
    for k, v in leaves.items():
        if k not in buffers:
            tensors[k + "_grad"] = v.grad
    manifest = {}
    for k, v in tensors.items():
        v = v.detach().contiguous()
        v.numpy().tofile(os.path.join(out_dir, f"{name}__{k}.bin"))
        manifest[k] = {"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")}
    configs.append({"name": name, "layer": layer, "args": args, "tensors": manifest})


# ---- convolutions ------------------------------------------------------------------------------
def conv(layer, name, x_shape, w_shape, bias=True, **args):
    fn = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv_transpose2d": F.conv_transpose2d}[layer]
    inputs = {"x": randn(*x_shape), "w": randn(*w_shape) * 0.5}
    if bias:
        # O channels: weight dim 0 for convolutions, dim 1 times groups for transposed ones.
        o = w_shape[1] * args.get("groups", 1) if layer == "conv_transpose2d" else w_shape[0]
        inputs["b"] = randn(o)
    full = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1}
    if layer == "conv_transpose2d":
        full["output_padding"] = 0
    full.update(args)
    record(f"{layer}_{name}", layer, full, inputs,
           lambda x, w, b=None: fn(x, w, b, **full))


conv("conv1d", "basic", (2, 3, 11), (4, 3, 3))
conv("conv1d", "stride2_pad2_nobias", (2, 3, 13), (4, 3, 5), bias=False, stride=2, padding=2)
conv("conv1d", "same_dilation2", (2, 3, 10), (5, 3, 3), padding="same", dilation=2)
conv("conv1d", "same_even_kernel", (2, 2, 9), (3, 2, 4), padding="same")
conv("conv1d", "valid_groups2", (3, 4, 12), (6, 2, 3), padding="valid", groups=2)
conv("conv1d", "depthwise_stride2_batch1", (1, 5, 15), (5, 1, 3), stride=2, padding=1, groups=5)
conv("conv1d", "unbatched", (3, 11), (4, 3, 3), padding=1)

conv("conv2d", "basic_pad1", (2, 3, 7, 9), (4, 3, 3, 3), padding=1)
conv("conv2d", "stride21_pad10_kernel32_nobias", (2, 3, 9, 8), (4, 3, 3, 2), bias=False,
     stride=[2, 1], padding=[1, 0])
conv("conv2d", "dilation23_pad2", (2, 2, 11, 12), (3, 2, 3, 3), padding=2, dilation=[2, 3])
conv("conv2d", "groups2_stride2_pad1", (2, 4, 9, 7), (6, 2, 3, 3), stride=2, padding=1, groups=2)
conv("conv2d", "depthwise_batch1", (1, 6, 8, 7), (6, 1, 3, 3), padding=1, groups=6)
conv("conv2d", "depthwise_multiplier2_kernel53", (2, 3, 9, 6), (6, 1, 5, 3), padding=[2, 1],
     groups=3)
conv("conv2d", "same_kernel35_dilation12", (2, 3, 7, 10), (4, 3, 3, 5), padding="same",
     dilation=[1, 2])
conv("conv2d", "same_even_kernel24", (2, 3, 7, 9), (4, 3, 2, 4), padding="same")
conv("conv2d", "valid_kernel43", (2, 3, 6, 7), (5, 3, 4, 3), padding="valid")
conv("conv2d", "pointwise_stride2_batch1", (1, 8, 7, 9), (5, 8, 1, 1), stride=2)
conv("conv2d", "kernel_fills_input", (3, 2, 5, 5), (4, 2, 5, 5))
conv("conv2d", "unbatched_stride2", (3, 8, 9), (4, 3, 3, 3), stride=2, padding=1)

conv("conv_transpose2d", "stride2_pad1_outpad1", (2, 4, 5, 6), (4, 3, 3, 3), stride=2,
     padding=1, output_padding=1)
conv("conv_transpose2d", "stride23_kernel34_outpad12_nobias", (2, 3, 4, 5), (3, 2, 3, 4),
     bias=False, stride=[2, 3], padding=[0, 1], output_padding=[1, 2])
conv("conv_transpose2d", "groups2_stride2", (2, 4, 5, 5), (4, 3, 3, 3), stride=2, groups=2)
conv("conv_transpose2d", "dilation2_pad2", (2, 3, 6, 7), (3, 4, 3, 3), padding=2, dilation=2)
conv("conv_transpose2d", "dilation2_stride2_outpad1_batch1", (1, 3, 5, 4), (3, 2, 3, 3),
     stride=2, dilation=2, output_padding=1)
conv("conv_transpose2d", "kernel23_odd", (3, 2, 7, 5), (2, 3, 2, 3))
conv("conv_transpose2d", "depthwise_stride2_pad1", (2, 4, 5, 6), (4, 1, 3, 3), stride=2,
     padding=1, groups=4)


# ---- pools -------------------------------------------------------------------------------------
def max_pool(dims, name, x_shape, **args):
    fn = F.max_pool1d if dims == 1 else F.max_pool2d
    full = {"kernel_size": None, "stride": None, "padding": 0, "dilation": 1, "ceil_mode": False}
    full.update(args)
    layer = f"max_pool{dims}d"
    record(f"{layer}_{name}", layer, full, {"x": distinct(*x_shape)},
           lambda x: fn(x, return_indices=True, **full))


def avg_pool(dims, name, x_shape, **args):
    fn = F.avg_pool1d if dims == 1 else F.avg_pool2d
    full = {"kernel_size": None, "stride": None, "padding": 0, "ceil_mode": False,
            "count_include_pad": True}
    if dims == 2:
        full["divisor_override"] = None
    full.update(args)
    layer = f"avg_pool{dims}d"
    record(f"{layer}_{name}", layer, full, {"x": randn(*x_shape)}, lambda x: fn(x, **full))


def adaptive(kind, name, x_shape, output_size):
    layer = f"adaptive_{kind}_pool2d"
    size = output_size[0] if len(output_size) == 1 else output_size  # one number for both dims
    if kind == "max":
        record(f"{layer}_{name}", layer, {"output_size": output_size},
               {"x": distinct(*x_shape)},
               lambda x: F.adaptive_max_pool2d(x, size, return_indices=True))
    else:
        record(f"{layer}_{name}", layer, {"output_size": output_size}, {"x": randn(*x_shape)},
               lambda x: F.adaptive_avg_pool2d(x, size))


max_pool(1, "kernel3_stride2", (2, 3, 11), kernel_size=3, stride=2)
max_pool(1, "kernel3_pad1_dilation2_ceil", (2, 3, 12), kernel_size=3, stride=2, padding=1,
         dilation=2, ceil_mode=True)
max_pool(1, "kernel4_stride3_ceil", (2, 2, 10), kernel_size=4, stride=3, ceil_mode=True)
max_pool(1, "kernel2_default_stride_batch1", (1, 4, 9), kernel_size=2)
max_pool(1, "kernel5_stride2_pad2", (2, 3, 13), kernel_size=5, stride=2, padding=2)
max_pool(1, "unbatched_stride1", (3, 10), kernel_size=3, stride=1, padding=1)

max_pool(2, "kernel3_stride2", (2, 3, 9, 11), kernel_size=3, stride=2)
max_pool(2, "kernel32_stride21_pad10", (2, 3, 8, 7), kernel_size=[3, 2], stride=[2, 1],
         padding=[1, 0])
max_pool(2, "kernel3_stride2_pad1_ceil", (2, 3, 8, 10), kernel_size=3, stride=2, padding=1,
         ceil_mode=True)
max_pool(2, "kernel3_dilation2_pad1", (2, 2, 11, 9), kernel_size=3, stride=1, padding=1,
         dilation=2)
max_pool(2, "kernel2_default_stride_batch1", (1, 4, 7, 7), kernel_size=2)
max_pool(2, "kernel23_stride32_dilation21_ceil", (2, 3, 10, 11), kernel_size=[2, 3],
         stride=[3, 2], dilation=[2, 1], ceil_mode=True)

avg_pool(1, "kernel3_stride2", (2, 3, 11), kernel_size=3, stride=2)
avg_pool(1, "kernel3_stride2_pad1_exclude_pad", (2, 3, 10), kernel_size=3, stride=2, padding=1,
         count_include_pad=False)
avg_pool(1, "kernel4_stride3_pad2_ceil", (2, 2, 11), kernel_size=4, stride=3, padding=2,
         ceil_mode=True)
avg_pool(1, "kernel4_stride3_pad2_ceil_exclude_pad", (2, 2, 11), kernel_size=4, stride=3,
         padding=2, ceil_mode=True, count_include_pad=False)
avg_pool(1, "kernel2_default_stride_batch1", (1, 4, 9), kernel_size=2)

avg_pool(2, "kernel3_stride2", (2, 3, 9, 11), kernel_size=3, stride=2)
avg_pool(2, "kernel32_stride21_pad11_exclude_pad", (2, 3, 8, 7), kernel_size=[3, 2],
         stride=[2, 1], padding=[1, 1], count_include_pad=False)
avg_pool(2, "kernel3_stride2_pad1_ceil", (2, 3, 8, 10), kernel_size=3, stride=2, padding=1,
         ceil_mode=True)
avg_pool(2, "kernel3_stride2_pad1_ceil_exclude_pad", (2, 3, 8, 10), kernel_size=3, stride=2,
         padding=1, ceil_mode=True, count_include_pad=False)
avg_pool(2, "kernel3_pad1_divisor5", (2, 2, 7, 9), kernel_size=3, stride=1, padding=1,
         divisor_override=5)
avg_pool(2, "kernel2_default_stride_batch1", (1, 4, 7, 9), kernel_size=2)

for kind in ("avg", "max"):
    adaptive(kind, "9x11_to_4x5", (2, 3, 9, 11), [4, 5])
    adaptive(kind, "7x7_to_3", (2, 3, 7, 7), [3])
    adaptive(kind, "10x13_to_3x4", (2, 2, 10, 13), [3, 4])
    adaptive(kind, "5x6_to_1x1_batch1", (1, 4, 5, 6), [1, 1])
    adaptive(kind, "6x4_to_4x3", (2, 3, 6, 4), [4, 3])
    adaptive(kind, "5x6_to_same", (2, 2, 5, 6), [5, 6])


# ---- normalisations ----------------------------------------------------------------------------
def norm_inputs(x_shape, c, affine, running):
    inputs = {"x": randn(*x_shape) * 1.5 + 0.5}
    if affine:
        inputs["w"] = randn(c) * 0.5 + 1
        inputs["b"] = randn(c)
    if running:
        inputs["running_mean"] = randn(c) * 0.5
        inputs["running_var"] = torch.rand(c, dtype=d) + 0.5
    return inputs


def batch_norm(name, x_shape, training, affine=True, running=True, momentum=0.1, eps=1e-5):
    args = {"training": training, "momentum": momentum, "eps": eps}
    record(f"batch_norm_{name}", "batch_norm", args,
           norm_inputs(x_shape, x_shape[1], affine, running),
           lambda x, w=None, b=None, running_mean=None, running_var=None: F.batch_norm(
               x, running_mean, running_var, w, b, training, momentum, eps),
           buffers=("running_mean", "running_var") if running else ())


def group_norm(name, x_shape, num_groups, affine=True, eps=1e-5):
    record(f"group_norm_{name}", "group_norm", {"num_groups": num_groups, "eps": eps},
           norm_inputs(x_shape, x_shape[1], affine, False),
           lambda x, w=None, b=None: F.group_norm(x, num_groups, w, b, eps))


def instance_norm(name, x_shape, use_input_stats, affine=True, running=False, momentum=0.1,
                  eps=1e-5):
    args = {"use_input_stats": use_input_stats, "momentum": momentum, "eps": eps}
    record(f"instance_norm_{name}", "instance_norm", args,
           norm_inputs(x_shape, x_shape[1], affine, running),
           lambda x, w=None, b=None, running_mean=None, running_var=None: F.instance_norm(
               x, running_mean, running_var, w, b, use_input_stats, momentum, eps),
           buffers=("running_mean", "running_var") if running else ())


def layer_norm(name, x_shape, normalized_shape, affine=True, eps=1e-5):
    inputs = {"x": randn(*x_shape) * 1.5 + 0.5}
    if affine:
        inputs["w"] = randn(*normalized_shape) * 0.5 + 1
        inputs["b"] = randn(*normalized_shape)
    record(f"layer_norm_{name}", "layer_norm",
           {"normalized_shape": list(normalized_shape), "eps": eps}, inputs,
           lambda x, w=None, b=None: F.layer_norm(x, normalized_shape, w, b, eps))


batch_norm("train_4d", (3, 4, 5, 6), training=True)
batch_norm("train_4d_no_affine_momentum03_eps1e-3", (2, 3, 7, 5), training=True, affine=False,
           momentum=0.3, eps=1e-3)
batch_norm("eval_4d", (2, 4, 5, 7), training=False)
batch_norm("train_2d", (7, 5), training=True)
batch_norm("train_3d_batch1", (1, 3, 9), training=True)
batch_norm("train_4d_no_running_stats", (2, 3, 5, 5), training=True, running=False)
batch_norm("eval_3d_no_affine", (3, 4, 6), training=False, affine=False)

group_norm("4d_groups3", (2, 6, 5, 7), 3)
group_norm("4d_groups1_no_affine", (2, 4, 5, 6), 1, affine=False)
group_norm("4d_groups_per_channel_batch1", (1, 5, 6, 7), 5)
group_norm("3d_groups2_eps1e-3", (3, 4, 9), 2, eps=1e-3)
group_norm("2d_groups2", (5, 6), 2)

instance_norm("4d", (2, 3, 5, 6), True)
instance_norm("4d_running_stats_momentum02", (2, 3, 6, 5), True, running=True, momentum=0.2)
instance_norm("eval_4d", (2, 3, 5, 7), False, running=True)
instance_norm("3d_batch1_no_affine", (1, 4, 11), True, affine=False)

layer_norm("3d_last_dim", (4, 6, 16), (16,))
layer_norm("3d_last_two_dims", (3, 5, 7), (5, 7))
layer_norm("4d_chw_no_affine", (2, 3, 5, 6), (3, 5, 6), affine=False)
layer_norm("4d_last_dim_eps1e-3", (2, 3, 5, 6), (6,), eps=1e-3)
layer_norm("2d", (7, 9), (9,))

with open(os.path.join(out_dir, "manifest.json"), "w") as f:
    json.dump({"configs": configs}, f, indent=1)
counts = {}
for c in configs:
    counts[c["layer"]] = counts.get(c["layer"], 0) + 1
print(f"{len(configs)} layer configurations written to {out_dir}:",
      ", ".join(f"{k} {v}" for k, v in counts.items()))
