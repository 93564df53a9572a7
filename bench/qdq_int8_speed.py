#!/usr/bin/env python3
"""A QDQ model (onnxruntime.quantization.quantize_static, QDQ format, per-channel int8
weights, uint8 activations) three ways, in interleaved short rounds: orchid's CPU plan
executor in fp32 after dequantization (`--fp32-qdq`), orchid with oneDNN int8 kernels, and
ONNX Runtime's QDQ run (its own int8 fusion). Prints each one's median over the rounds and
the ratios. A comparison, not a test: on a shared machine the figures are indicative.

Usage: /work/venv/bin/python bench/qdq_int8_speed.py [--model torchvision:mobilenet_v2|FILE.onnx]
           [--orchid build/orchid] [--rounds 5] [--repeat 10] [--threads 2] [--quick]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quantize(fp32, out, shape):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    import onnx
    name = onnx.load(fp32, load_external_data=False).graph.input[0].name
    rng = np.random.default_rng(1)
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(samples)

        def get_next(self):
            v = next(self.it, None)
            return None if v is None else {name: v}

    quantize_static(fp32, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return name


def orchid_ms(orchid, model, inp, extra, repeat, threads):
    out = subprocess.run([orchid, "run", model, "--device", "cpu", "--plan-kind", "optimal",
                          "--input", inp, "--repeat", str(repeat), "--threads", str(threads),
                          "--json", "-"] + extra, capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["time_ms"]["median"])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="torchvision:mobilenet_v2",
                   help="an fp32 ONNX file, or torchvision:NAME (exported at opset 17, random weights)")
    p.add_argument("--orchid", default=os.path.join(ROOT, "build", "orchid"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="one round of 2 runs (a smoke run)")
    a = p.parse_args()
    if a.quick:
        a.rounds, a.repeat = 1, 2
    import onnxruntime as ort
    shape = (1, 3, 224, 224)
    with tempfile.TemporaryDirectory() as tmp:
        q = os.path.join(tmp, "qdq.onnx")
        fp32 = a.model
        if fp32.startswith("torchvision:"):
            import torch
            import torchvision
            torch.manual_seed(0)
            net = getattr(torchvision.models, fp32.split(":", 1)[1])(weights=None).eval()
            fp32 = os.path.join(tmp, "fp32.onnx")
            with torch.no_grad():
                torch.onnx.export(net, (torch.randn(*shape),), fp32, opset_version=17,
                                  input_names=["input"], dynamo=False)
        name = quantize(fp32, q, shape)
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        inp = os.path.join(tmp, "x.npy")
        np.save(inp, x)
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        sess = ort.InferenceSession(q, so, providers=["CPUExecutionProvider"])
        sess.run(None, {name: x})
        times = {"orchid fp32 after DQ": [], "orchid int8": [], "onnxruntime QDQ": []}
        for _ in range(a.rounds):
            times["orchid fp32 after DQ"].append(
                orchid_ms(a.orchid, q, f"{name}={inp}", ["--fp32-qdq"], a.repeat, a.threads))
            times["orchid int8"].append(orchid_ms(a.orchid, q, f"{name}={inp}", [], a.repeat,
                                                  a.threads))
            runs = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                sess.run(None, {name: x})
                runs.append((time.perf_counter() - t0) * 1e3)
            times["onnxruntime QDQ"].append(statistics.median(runs))
        med = {k: statistics.median(v) for k, v in times.items()}
        for k, v in med.items():
            print(f"{k:22s} {v:8.2f} ms  (rounds: {', '.join(f'{t:.2f}' for t in times[k])})")
        base = med["orchid int8"]
        print(f"fp32-after-DQ / int8 = {med['orchid fp32 after DQ'] / base:.2f}; "
              f"ORT QDQ / orchid int8 = {med['onnxruntime QDQ'] / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
