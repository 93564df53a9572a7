#!/usr/bin/env python3
"""GPU peers for scripts/gpu-check.sh: times one zoo model on one engine on the present
NVIDIA GPU and prints one JSON line {"engine", "model", "median_ms", "error"}.

    python bench/gpu_peers.py --model resnet50 --engine eager|compile|ort --repeat 100 \
        [--onnx materialized.onnx]

eager / compile: the torch module models/export_zoo.py builds (build_model), in eval mode
under torch.inference_mode(), FP32 (TF32 matmuls off, as orchid's kernels), timed with CUDA
events per run after 10 warm-up runs (torch.compile: default mode, compiled in the warm-up).
ort: ONNX Runtime's CUDAExecutionProvider on the self-contained copy `orchid materialize`
wrote (--onnx), inputs bound on the GPU with IO binding, wall clock per synchronised run.
An engine that is not installed reports its error and no time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def time_torch(model: str, compiled: bool, repeat: int) -> float:
    import torch
    sys.path.insert(0, str(ROOT / "models"))
    import export_zoo
    export = export_zoo.build_model(model)
    torch.use_deterministic_algorithms(False)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    module = export.module.eval().cuda()
    args = tuple(a.cuda() if hasattr(a, "cuda") else a for a in export.args)
    fn = torch.compile(module) if compiled else module
    times = []
    with torch.inference_mode():
        for _ in range(10):
            fn(*args)
        torch.cuda.synchronize()
        for _ in range(repeat):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return median(times)


def time_ort(onnx_path: str, repeat: int) -> float:
    import numpy as np
    import onnxruntime as ort
    session = ort.InferenceSession(onnx_path, providers=["CUDAExecutionProvider"])
    if "CUDAExecutionProvider" not in session.get_providers():
        raise RuntimeError("onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)")
    binding = session.io_binding()
    rng = np.random.default_rng(0)
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int64" in i.type:
            value = rng.integers(0, 2, size=shape, dtype=np.int64)
        else:
            value = rng.standard_normal(shape).astype(np.float32)
        binding.bind_ortvalue_input(i.name, ort.OrtValue.ortvalue_from_numpy(value, "cuda", 0))
    for o in session.get_outputs():
        binding.bind_output(o.name, "cuda")
    for _ in range(10):
        session.run_with_iobinding(binding)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        session.run_with_iobinding(binding)
        binding.synchronize_outputs()
        times.append((time.perf_counter() - t0) * 1e3)
    return median(times)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--engine", required=True, choices=["eager", "compile", "ort"])
    p.add_argument("--repeat", type=int, default=100)
    p.add_argument("--onnx", default="")
    a = p.parse_args()
    result = {"engine": a.engine, "model": a.model, "median_ms": None, "error": ""}
    try:
        if a.engine == "ort":
            result["median_ms"] = time_ort(a.onnx, a.repeat)
        else:
            result["median_ms"] = time_torch(a.model, a.engine == "compile", a.repeat)
    except Exception as e:  # reported, the check goes on
        result["error"] = (str(e).splitlines() or [type(e).__name__])[0][:200]
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
