#!/usr/bin/env python3
"""Writes the small ONNX models the tests use for newer-model features (tests/data/models/).

- attention_dynamic.onnx: one self-attention block over x[batch, seq, 32], opset 18
  (ReduceMean with axes as an input, Split with num_outputs), symbolic dims batch/seq.
- mlp_fp16.onnx: a small MLP converted the way onnxconverter-common's float16 converter
  leaves it: fp16 weights and compute inside, fp32 graph input/output with Cast nodes.
- conv_bf16.onnx: Conv + Relu + GlobalAveragePool in bfloat16, bf16 I/O (opset 22, where
  Conv first takes bfloat16).

- dropout_mask.onnx: Dropout with ratio/training_mode inputs and its mask as a graph output,
  BatchNormalization (opset 13) listing its training statistics outputs, unused, as older
  PyTorch exports leave them.
- denormal_mul.onnx: Relu(x * 1e-39), whose result is a denormal float, for the test that
  plans flush denormals to zero unless asked to keep them.

Run: /work/venv/bin/python tools/make_test_models.py tests/data/models
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def init(name, array):
    return numpy_helper.from_array(array, name)


def attention_dynamic(rng):
    d = 32
    wqkv = (rng.standard_normal((d, 3 * d)) / np.sqrt(d)).astype(np.float32)
    wo = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["mean"], keepdims=1),
        helper.make_node("Sub", ["x", "mean"], ["centered"]),
        helper.make_node("MatMul", ["centered", "wqkv"], ["qkv"]),
        helper.make_node("Split", ["qkv"], ["q", "k", "v"], axis=2, num_outputs=3),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "v"], ["context"]),
        helper.make_node("MatMul", ["context", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "attention_dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", d])],
        [init("axes", np.array([-1], np.int64)), init("wqkv", wqkv), init("wo", wo),
         init("scale", np.array(1 / np.sqrt(d), np.float32))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                             producer_name="orchid-tools")


def mlp_fp16(rng):
    w1 = (rng.standard_normal((16, 32)) / 4).astype(np.float16)
    b1 = (rng.standard_normal(32) / 4).astype(np.float16)
    w2 = (rng.standard_normal((32, 8)) / 4).astype(np.float16)
    b2 = (rng.standard_normal(8) / 4).astype(np.float16)
    nodes = [
        helper.make_node("Cast", ["x"], ["x16"], to=TensorProto.FLOAT16),
        helper.make_node("MatMul", ["x16", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["a"]),
        helper.make_node("Gemm", ["a", "w2", "b2"], ["z"]),
        helper.make_node("Softmax", ["z"], ["p"], axis=-1),
        helper.make_node("Cast", ["p"], ["y"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "mlp_fp16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                             producer_name="orchid-tools")


def conv_bf16(rng):
    w = (rng.standard_normal((8, 3, 3, 3)) / 4).astype(np.float32)
    bits = w.view(np.uint32)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
    w_bf16 = helper.make_tensor("w", TensorProto.BFLOAT16, w.shape, bits.tobytes(), raw=True)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv_bf16", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, 8, 1, 1])], [w_bf16])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)],
                             producer_name="orchid-tools")


def dropout_mask(rng):
    c = 4
    nodes = [
        helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                         ["bn", "running_mean", "running_var", "saved_mean", "saved_var"]),
        helper.make_node("Dropout", ["bn", "ratio", "training_mode"], ["y", "mask"]),
    ]
    graph = helper.make_graph(
        nodes, "dropout_mask", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, c, 3]),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, c, 3])],
        [init("scale", rng.uniform(0.5, 2, c).astype(np.float32)),
         init("bias", rng.standard_normal(c).astype(np.float32)),
         init("mean", rng.standard_normal(c).astype(np.float32)),
         init("var", rng.uniform(0.5, 2, c).astype(np.float32)),
         init("ratio", np.array(0.25, np.float32)),
         init("training_mode", np.array(False))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                             producer_name="orchid-tools")


def denormal_mul(rng):
    del rng  # nothing random
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "c"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "denormal_mul", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 64])],
        [numpy_helper.from_array(np.array([1e-39], np.float32), "c")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="orchid-tools")


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/models"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(14)
    for name, make in (("attention_dynamic", attention_dynamic), ("mlp_fp16", mlp_fp16),
                       ("conv_bf16", conv_bf16), ("dropout_mask", dropout_mask),
                       ("denormal_mul", denormal_mul)):
        model = make(rng)
        model.ir_version = 9
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        print("wrote", os.path.join(out, name + ".onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
