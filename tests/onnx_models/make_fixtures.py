#!/usr/bin/env python3
"""Models exported by PyTorch, for rcuda's ONNX import tests (tests/io/test_onnx_import_models.cpp,
r/tests/testthat/test-onnx-load.R): each model is written here (no download), exported with
torch.onnx.export's TorchScript exporter (dynamo=False) and its dynamo exporter (dynamo=True),
and saved beside an input and PyTorch's own outputs for it as ONNX TensorProtos:

  <model>_<exporter>.onnx, <model>_input_<k>.pb, <model>_output_<k>.pb

The files are generated once and kept in this folder (small: the ResNet-18 has a reduced width);
run it again after changing a model: python3 tests/onnx_models/make_fixtures.py [out_dir]
The benchmarks (bench/onnx/) build the full-width ResNet-18 from the same code.
"""
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout: a 7x7 stem, max pool, four stages of two basic blocks,
    global average pool, a linear classifier. width=64 is the real model."""

    def __init__(self, width=64, classes=1000):
        super().__init__()
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], w
        for i, cout in enumerate([w, 2 * w, 4 * w, 8 * w]):
            stride = 1 if i == 0 else 2
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8 * w, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def randomize_batch_norm(model):
    # Fresh statistics, so that eval-mode batch norm is not the identity.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
    return model


class LstmLanguageModel(nn.Module):
    def __init__(self, vocab=50, embed=16, hidden=32, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return self.head(y)


class TransformerEncoder(nn.Module):
    def __init__(self, d_model=32, heads=4, ff=64, layers=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        return self.norm(self.encoder(x))


def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))


def models():
    torch.manual_seed(0)
    yield "mlp", mlp().eval(), (torch.randn(5, 16),), ["x"], {"x": {0: "batch"}}
    torch.manual_seed(1)
    yield ("mlp_f64", mlp().double().eval(), (torch.randn(5, 16, dtype=torch.float64),), ["x"],
           {"x": {0: "batch"}})
    torch.manual_seed(2)
    yield ("resnet18", randomize_batch_norm(ResNet18(width=8, classes=10)).eval(),
           (torch.randn(2, 3, 32, 32),), ["image"], {"image": {0: "batch"}})
    torch.manual_seed(3)
    yield ("lstm_lm", LstmLanguageModel().eval(), (torch.randint(0, 50, (2, 7)),), ["tokens"],
           {"tokens": {0: "batch", 1: "time"}})
    torch.manual_seed(4)
    yield ("transformer", TransformerEncoder().eval(), (torch.randn(2, 10, 32),), ["x"],
           {"x": {0: "batch", 1: "time"}})


def save_tensor(array, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array)).SerializeToString())


def export(model, args, path, input_names, dynamic_axes, dynamo):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            shapes = tuple({d: torch.export.Dim.AUTO for d in dynamic_axes.get(name, {})}
                           for name in input_names)
            torch.onnx.export(model, args, path, input_names=input_names, output_names=["output"],
                              dynamic_shapes=shapes, dynamo=True, external_data=False)
        else:
            axes = dict(dynamic_axes)
            axes["output"] = {0: "batch"}
            torch.onnx.export(model, args, path, input_names=input_names, output_names=["output"],
                              dynamic_axes=axes, opset_version=17, dynamo=False)
    onnx.checker.check_model(onnx.load(path))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    for name, model, args, input_names, dynamic_axes in models():
        with torch.no_grad():
            expected = model(*args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        for k, a in enumerate(args):
            save_tensor(a.numpy(), os.path.join(out, "%s_input_%d.pb" % (name, k)))
        for k, e in enumerate(expected):
            save_tensor(e.numpy(), os.path.join(out, "%s_output_%d.pb" % (name, k)))
        for exporter, dynamo in (("torchscript", False), ("dynamo", True)):
            path = os.path.join(out, "%s_%s.onnx" % (name, exporter))
            export(model, args, path, input_names, dynamic_axes, dynamo)
            print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
