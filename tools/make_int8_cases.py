#!/usr/bin/env python3
"""Writes quantized small CNNs (onnxruntime.quantization.quantize_static, QDQ format) with
ONNX Runtime's outputs as the expected values, for the int8 kernels of orchid's CPU
executor: tests/data/quant_int8/<case>/{model.onnx, inputs/x.npy, outputs/<name>.npy,
tolerance} (the layout of tools/make_quant_recurrent_cases.py, whose write_case it uses).

The network exercises what the int8 path must get right: padded convolutions (the source
zero point at the borders), a strided depthwise convolution (groups), a Relu the output's
zero point absorbs, a 1x1 convolution, a residual Add (which stays in float between
DequantizeLinear and QuantizeLinear), a MatMul with constant weights and a Gemm (which
stays in fp32, noted). Cases: uint8 activations with per-channel weights (quantize_static's
usual form), int8 activations (signed source with a zero point) with per-tensor weights.
Tolerance: 3 output quantization steps (docs/quantized_recurrent.md).

Usage: /work/venv/bin/python tools/make_int8_cases.py [--out DIR]   (torch, onnx, onnxruntime)
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from make_quant_recurrent_cases import write_case  # noqa: E402


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.dw = torch.nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.pw = torch.nn.Conv2d(16, 16, 1)
        self.c3 = torch.nn.Conv2d(16, 24, 3, padding=1, dilation=1)
        self.proj = torch.nn.Parameter(torch.randn(24, 32) * 0.2)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.dw(y))
        y = y + self.pw(y)
        y = torch.relu(self.c3(y))
        y = y.mean(dim=(2, 3))
        return self.fc(torch.matmul(y, self.proj))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "quant_int8"))
    args = parser.parse_args()
    torch.manual_seed(0)
    model = SmallCnn().eval()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 20, 20)).astype(np.float32)
    samples = [rng.standard_normal((2, 3, 20, 20)).astype(np.float32) for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples)

        def get_next(self):
            v = next(self.it, None)
            return None if v is None else {"x": v}

    with tempfile.TemporaryDirectory() as tmp:
        fp32 = os.path.join(tmp, "fp32.onnx")
        with torch.no_grad():
            torch.onnx.export(model, (torch.from_numpy(x),), fp32, opset_version=17,
                              input_names=["x"], output_names=["logits"], dynamo=False)
        for name, act, per_channel in [("small_cnn_u8_per_channel", QuantType.QUInt8, True),
                                       ("small_cnn_s8_per_tensor", QuantType.QInt8, False)]:
            q = os.path.join(tmp, name + ".onnx")
            quantize_static(fp32, q, Reader(), quant_format=QuantFormat.QDQ,
                            per_channel=per_channel, activation_type=act,
                            weight_type=QuantType.QInt8)
            m = onnx.load(q)
            step = [i for i in m.graph.initializer if i.name.startswith("logits") and
                    i.name.endswith("_scale")]
            scale = float(onnx.numpy_helper.to_array(step[0])) if step else 0.05
            write_case(args.out, name, m, {"x": x}, 3 * scale)


if __name__ == "__main__":
    main()
