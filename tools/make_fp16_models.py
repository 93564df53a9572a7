#!/usr/bin/env python3
"""Writes fp16 versions of two zoo models with onnxconverter-common's float16 converter,
the way users make them: tests/data/models/tiny_conv_fp16.onnx (fp32 inputs and outputs,
Cast nodes at the boundary: keep_io_types=True) and tiny_attention_fp16.onnx (fp16
inputs and outputs). tests/unit/passes/widen_half_floats_test.cpp runs them on the CPU
plan executor against the reference interpreter.

Usage: /work/venv/bin/python tools/make_fp16_models.py
Needs onnx and onnxconverter-common (PyPI).
"""
import os

import onnx
from onnxconverter_common import float16

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    out_dir = os.path.join(ROOT, "tests", "data", "models")
    for name, keep_io in (("tiny_conv", True), ("tiny_attention", False)):
        model = onnx.load(os.path.join(ROOT, "models", name + ".onnx"))
        half = float16.convert_float_to_float16(model, keep_io_types=keep_io)
        onnx.checker.check_model(half)
        onnx.save(half, os.path.join(out_dir, name + "_fp16.onnx"))


if __name__ == "__main__":
    main()
