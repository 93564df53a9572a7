#!/usr/bin/env python3
"""Writes small test cases for orchid's quantized and recurrent ops, with ONNX Runtime's
outputs as the expected values: tests/data/quant_recurrent/<case>/{model.onnx,
inputs/<name>.npy, outputs/<name>.npy, tolerance}. The C++ test
tests/unit/eval/quant_recurrent_cases_test.cpp runs each model on the reference
interpreter and compares (|orchid - ORT| <= atol + rtol |ORT| elementwise; `tolerance`
holds "atol rtol").

Quantized cases state their tolerance in quantization steps: integer outputs within
`steps` units; float outputs of QDQ models within `steps` output scales. ONNX Runtime
fuses QDQ pairs into integer kernels and rounds once per requantization where the ONNX
definition (and orchid's reference) computes the float op between a DequantizeLinear and
a QuantizeLinear, so a value near a rounding boundary may land one step away.

Usage: /work/venv/bin/python tools/make_quant_recurrent_cases.py [--out DIR]
Needs numpy, onnx and onnxruntime (not torch: the recurrent models are built with
onnx.helper, with the shapes and attributes torch.onnx exports).
"""
import argparse
import os
import shutil
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 17  # orchid's importer reads <= 17 until the newer-opset work lands


def write_case(out_dir, name, model, feeds, atol, rtol=0.0):
    onnx.checker.check_model(model)
    case = os.path.join(out_dir, name)
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(os.path.join(case, "inputs"))
    os.makedirs(os.path.join(case, "outputs"))
    onnx.save(model, os.path.join(case, "model.onnx"))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    results = sess.run(None, feeds)
    for k, v in feeds.items():
        np.save(os.path.join(case, "inputs", k + ".npy"), v)
    for o, v in zip(sess.get_outputs(), results):
        np.save(os.path.join(case, "outputs", o.name + ".npy"), v)
    with open(os.path.join(case, "tolerance"), "w") as f:
        f.write(f"{atol} {rtol}\n")
    print(f"{name}: {[o.name for o in sess.get_outputs()]}")


def make_model(nodes, inputs, outputs, inits=(), opset=OPSET):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


# ---- recurrent ---------------------------------------------------------------------------

def recurrent_case(out_dir, rng, name, op, hidden, seq=5, batch=3, inp=4, direction="forward",
                   seq_lens=False, initial=False, peephole=False, outputs=("Y", "Y_h", "Y_c"),
                   **attrs):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    dirs = 2 if direction == "bidirectional" else 1
    f32 = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)
    inits = [numpy_helper.from_array(f32(dirs, gates * hidden, inp), "W"),
             numpy_helper.from_array(f32(dirs, gates * hidden, hidden), "R"),
             numpy_helper.from_array(f32(dirs, 2 * gates * hidden), "B")]
    ins = ["X", "W", "R", "B"]
    graph_inputs = [vi("X", TensorProto.FLOAT, [seq, batch, inp])]
    feeds = {"X": f32(seq, batch, inp)}
    if seq_lens:
        inits.append(numpy_helper.from_array(
            np.array([seq, max(1, seq - 2), 1][:batch], dtype=np.int32), "seq_lens"))
        ins.append("seq_lens")
    else:
        ins.append("")
    if initial:
        ins.append("h0")
        graph_inputs.append(vi("h0", TensorProto.FLOAT, [dirs, batch, hidden]))
        feeds["h0"] = f32(dirs, batch, hidden)
        if op == "LSTM":
            ins.append("c0")
            graph_inputs.append(vi("c0", TensorProto.FLOAT, [dirs, batch, hidden]))
            feeds["c0"] = f32(dirs, batch, hidden)
    elif op == "LSTM" and peephole:
        ins += ["", ""]
    if peephole:
        inits.append(numpy_helper.from_array(f32(dirs, 3 * hidden), "P"))
        ins.append("P")
    while ins and ins[-1] == "":
        ins.pop()
    all_outs = ["Y", "Y_h", "Y_c"][: (3 if op == "LSTM" else 2)]
    node_outs = [o if o in outputs else "" for o in all_outs]
    while node_outs and node_outs[-1] == "":
        node_outs.pop()
    shapes = {"Y": [seq, dirs, batch, hidden], "Y_h": [dirs, batch, hidden],
              "Y_c": [dirs, batch, hidden]}
    node = helper.make_node(op, ins, node_outs, hidden_size=hidden, direction=direction, **attrs)
    model = make_model([node], graph_inputs,
                       [vi(o, TensorProto.FLOAT, shapes[o]) for o in node_outs if o], inits)
    write_case(out_dir, name, model, feeds, atol=1e-5, rtol=1e-4)


def recurrent_cases(out_dir, rng):
    recurrent_case(out_dir, rng, "lstm_forward", "LSTM", 6)
    recurrent_case(out_dir, rng, "lstm_bidirectional_lens_initial_peephole", "LSTM", 5,
                   direction="bidirectional", seq_lens=True, initial=True, peephole=True)
    recurrent_case(out_dir, rng, "lstm_reverse_clip_only_yh", "LSTM", 4, direction="reverse",
                   clip=0.7, outputs=("Y_h",))
    recurrent_case(out_dir, rng, "lstm_input_forget_activations", "LSTM", 4, input_forget=1,
                   activations=["HardSigmoid", "LeakyRelu", "Softsign"],
                   activation_alpha=[0.3, 0.05], activation_beta=[0.4])
    recurrent_case(out_dir, rng, "gru_forward", "GRU", 6)
    recurrent_case(out_dir, rng, "gru_bidirectional_linear_before_reset", "GRU", 5,
                   direction="bidirectional", linear_before_reset=1, seq_lens=True, initial=True)
    recurrent_case(out_dir, rng, "gru_reverse_lens", "GRU", 3, direction="reverse", seq_lens=True)
    recurrent_case(out_dir, rng, "rnn_forward", "RNN", 6)
    recurrent_case(out_dir, rng, "rnn_bidirectional_relu_lens", "RNN", 4,
                   direction="bidirectional", activations=["Relu", "Relu"], seq_lens=True,
                   initial=True)


# ---- quantization ops --------------------------------------------------------------------

def quant_op_cases(out_dir, rng):
    x = (rng.standard_normal((2, 3, 4)) * 2).astype(np.float32)
    # QuantizeLinear per tensor (uint8) and per axis (int8), then back.
    scale_t = numpy_helper.from_array(np.array(0.05, np.float32), "s")
    zp_t = numpy_helper.from_array(np.array(120, np.uint8), "z")
    scale_a = numpy_helper.from_array(np.array([0.02, 0.03, 0.07], np.float32), "sa")
    zp_a = numpy_helper.from_array(np.array([0, -3, 5], np.int8), "za")
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["dq"]),
             helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["qa"], axis=1),
             helper.make_node("DequantizeLinear", ["qa", "sa", "za"], ["dqa"], axis=1),
             helper.make_node("QuantizeLinear", ["x", "s"], ["q_default"]),
             helper.make_node("DynamicQuantizeLinear", ["x"], ["dy", "dy_s", "dy_z"])]
    model = make_model(nodes, [vi("x", TensorProto.FLOAT, [2, 3, 4])],
                       [vi("q", TensorProto.UINT8, [2, 3, 4]), vi("dq", TensorProto.FLOAT, [2, 3, 4]),
                        vi("qa", TensorProto.INT8, [2, 3, 4]), vi("dqa", TensorProto.FLOAT, [2, 3, 4]),
                        vi("q_default", TensorProto.UINT8, [2, 3, 4]),
                        vi("dy", TensorProto.UINT8, [2, 3, 4]), vi("dy_s", TensorProto.FLOAT, []),
                        vi("dy_z", TensorProto.UINT8, [])],
                       [scale_t, zp_t, scale_a, zp_a])
    write_case(out_dir, "quantize_dequantize", model, {"x": x}, atol=1e-6)

    # Integer linear ops on the same random int8/uint8 operands.
    a = rng.integers(0, 256, (2, 5, 7), dtype=np.uint8)
    b = rng.integers(-128, 128, (7, 6), dtype=np.int8)
    xc = rng.integers(0, 256, (1, 4, 9, 9), dtype=np.uint8)
    w = rng.integers(-128, 128, (6, 2, 3, 3), dtype=np.int8)
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(np.array(131, np.uint8), "a_zp"),
             numpy_helper.from_array(np.array(3, np.int8), "b_zp"),
             numpy_helper.from_array(np.array(0.02, np.float32), "a_s"),
             numpy_helper.from_array(np.array(0.01, np.float32), "b_s"),
             numpy_helper.from_array(np.array(0.9, np.float32), "y_s"),
             numpy_helper.from_array(np.array(128, np.uint8), "y_zp"),
             numpy_helper.from_array(np.array([0.01, 0.02, 0.015, 0.03, 0.005, 0.011], np.float32), "w_s"),
             numpy_helper.from_array(np.zeros(6, np.int8), "w_zp"),
             numpy_helper.from_array(rng.integers(-500, 500, 6).astype(np.int32), "bias"),
             numpy_helper.from_array(np.array(2.5, np.float32), "yc_s")]
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["mmi"]),
             helper.make_node("QLinearMatMul", ["a", "a_s", "a_zp", "b", "b_s", "b_zp", "y_s", "y_zp"], ["qmm"]),
             helper.make_node("ConvInteger", ["xc", "w", "a_zp"], ["ci"], pads=[1, 1, 1, 1], group=2),
             helper.make_node("QLinearConv", ["xc", "a_s", "a_zp", "w", "w_s", "w_zp", "yc_s", "y_zp", "bias"],
                              ["qc"], strides=[2, 2], pads=[1, 0, 1, 1], group=2)]
    model = make_model(nodes, [vi("a", TensorProto.UINT8, [2, 5, 7]), vi("xc", TensorProto.UINT8, [1, 4, 9, 9])],
                       [vi("mmi", TensorProto.INT32, [2, 5, 6]), vi("qmm", TensorProto.UINT8, [2, 5, 6]),
                        vi("ci", TensorProto.INT32, [1, 6, 9, 9]), vi("qc", TensorProto.UINT8, [1, 6, 5, 4])],
                       inits)
    # Integer accumulators are exact; requantized outputs may differ by one step where a
    # product lands on a rounding boundary in float.
    write_case(out_dir, "integer_linear", model, {"a": a, "xc": xc}, atol=1.0)


# ---- a QDQ model from onnxruntime.quantization ------------------------------------------

def qdq_case(out_dir, rng):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    src = os.path.join(ROOT, "models", "tiny_conv.onnx")
    samples = [{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)} for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples)

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "qdq.onnx")
        quantize_static(src, path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        model = onnx.load(path)
    # The output is dequantized float; allow a few of its quantization steps.
    out_scale = 0.0
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == model.graph.output[0].name:
            s = next(i for i in model.graph.initializer if i.name == n.input[1])
            out_scale = float(numpy_helper.to_array(s))
    atol = 3 * out_scale if out_scale else 0.05
    write_case(out_dir, "qdq_tiny_conv", model, samples[0], atol=atol)


def two_layer_rnn_case(out_dir, rng, seq=10, batch=3, inp=4, hidden=6):
    """Two stacked bidirectional RNN layers, as torch.nn.RNN(num_layers=2,
    bidirectional=True) exports them: layer 2 reads layer 1's Y transposed and reshaped to
    [seq, batch, 2 * hidden]. Orchestrating it once hung (one region of ~35,000
    candidates); tests/unit/orchestrate/recurrent_orchestration_test.cpp plans it."""
    f32 = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)
    inits = [numpy_helper.from_array(f32(2, hidden, inp), "W1"),
             numpy_helper.from_array(f32(2, hidden, hidden), "R1"),
             numpy_helper.from_array(f32(2, 2 * hidden), "B1"),
             numpy_helper.from_array(f32(2, hidden, 2 * hidden), "W2"),
             numpy_helper.from_array(f32(2, hidden, hidden), "R2"),
             numpy_helper.from_array(f32(2, 2 * hidden), "B2"),
             numpy_helper.from_array(np.array([seq, batch, 2 * hidden], dtype=np.int64), "shape")]
    nodes = [helper.make_node("RNN", ["X", "W1", "R1", "B1"], ["Y1", "H1"], hidden_size=hidden,
                              direction="bidirectional"),
             helper.make_node("Transpose", ["Y1"], ["Y1t"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["Y1t", "shape"], ["X2"]),
             helper.make_node("RNN", ["X2", "W2", "R2", "B2"], ["Y", "Y_h"], hidden_size=hidden,
                              direction="bidirectional")]
    model = make_model(nodes, [vi("X", TensorProto.FLOAT, [seq, batch, inp])],
                       [vi("Y", TensorProto.FLOAT, [seq, 2, batch, hidden]),
                        vi("Y_h", TensorProto.FLOAT, [2, batch, hidden])], inits)
    write_case(out_dir, "rnn_two_layer_bidirectional", model, {"X": f32(seq, batch, inp)},
               atol=1e-5, rtol=1e-4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "quant_recurrent"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(0)
    recurrent_cases(args.out, rng)
    quant_op_cases(args.out, rng)
    qdq_case(args.out, rng)
    two_layer_rnn_case(args.out, rng)


if __name__ == "__main__":
    main()
