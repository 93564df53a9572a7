#!/usr/bin/env python3
"""orchid's default CPU command vs its fixed plan kinds vs ONNX Runtime, interleaved.

    /work/venv/bin/python bench/cpu_plans_bench.py mobilenet_v2 yolox_nano --rounds 2
    /work/venv/bin/python bench/cpu_plans_bench.py mobilenet_v2 --busy 1   # one busy process on core 0

Per model and round, each engine runs once in a fresh process, the order rotating:
`orchid run M --device cpu --repeat N` (the default: k best plans and greedy fusion
timed, the fastest kept), the same with --plan-kind optimal and --plan-kind greedy-fusion,
and ONNX Runtime (bench/executor_benchmark.py's worker, ORT_ENABLE_ALL, same threads) on
the `orchid materialize`d file. Each engine's best round (lowest median) is reported, with
orchid's predicted time and its orchestration/selection time. --busy K starts K processes
spinning on core 0 (taskset) for the whole measurement, the same for every engine; --avx2
runs orchid with ONEDNN_MAX_CPU_ISA=AVX2. orchid's figures come from `orchid run --json -`;
every engine's peak resident memory from /usr/bin/time (%M). Every engine gets the same
inputs. The helpers (inputs, `orchid run --json -`, the ORT worker, the busy processes) are
bench/executor_benchmark.py's, the full benchmark of issue 12 (measured-cost plans, AVX2,
load levels, third-party models, targets); this script is its quick plan-kind comparison.
Prints a markdown table; nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from executor_benchmark import (EngineError, orchid_run, start_load, stop_load, worker_run,
                                write_inputs)

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 1800


def attempt(run) -> dict:
    try:
        return run()
    except EngineError as e:
        return {"error": str(e)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--orchid", default=str(ROOT / "build/orchid"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--busy", type=int, default=0, help="processes spinning on core 0")
    ap.add_argument("--avx2", action="store_true",
                    help="orchid with ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN's AVX2 kernels)")
    a = ap.parse_args()
    busy = start_load(a.busy)
    rows = []
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2") if a.avx2 else None
    try:
        for name in a.models:
            model = ROOT / "models" / f"{name}.onnx"
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                full = folder / "full.onnx"
                subprocess.run([a.orchid, "materialize", str(model), str(full)], check=True,
                               capture_output=True)
                manifest, inputs = write_inputs(full, folder / "inputs")
                orchid = lambda extra: lambda: orchid_run(
                    a.orchid, model, ["--device", "cpu"] + extra + inputs, a.repeat, a.threads,
                    TIMEOUT, env)
                engines = {
                    "default": orchid(["--reselect"]),
                    "optimal": orchid(["--plan-kind", "optimal"]),
                    "greedy": orchid(["--plan-kind", "greedy-fusion"]),
                    "ort": lambda: worker_run(a.python, "onnxruntime", str(full), manifest,
                                              a.threads, a.repeat, folder / "ort.json", TIMEOUT),
                }
                best: dict = {}
                order = list(engines)
                for r in range(a.rounds):
                    for e in order[r % len(order):] + order[:r % len(order)]:
                        got = attempt(engines[e])
                        print(f"# {name} round {r} {e}: {got}", file=sys.stderr, flush=True)
                        m = got.get("median_ms", float("inf"))
                        if e not in best or m < best[e].get("median_ms", float("inf")):
                            best[e] = got
                rows.append((name, best))
    finally:
        stop_load(busy)
    print(f"| model | default (ms) | chosen | orchestrate + select (s) | optimal (ms) | greedy (ms) "
          f"| ORT (ms) | default/ORT | optimal/greedy | optimal predicted/measured (ms) "
          f"| peak RSS default / ORT (MiB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, b in rows:
        d, o, g, t = (b.get(k, {}) for k in ("default", "optimal", "greedy", "ort"))
        f = lambda x: f"{x:.2f}" if isinstance(x, float) else "err"
        ratio = lambda x, y: f"{x / y:.2f}" if isinstance(x, float) and isinstance(y, float) and y else "–"
        print(f"| {name} | {f(d.get('median_ms'))} | {d.get('chosen', '')} | "
              f"{f(d.get('orchestrate_s'))} + {f(d.get('select_s'))} | {f(o.get('median_ms'))} | "
              f"{f(g.get('median_ms'))} | {f(t.get('median_ms'))} | "
              f"{ratio(d.get('median_ms'), t.get('median_ms'))} | "
              f"{ratio(o.get('median_ms'), g.get('median_ms'))} | "
              f"{f(o.get('predicted_ms'))} / {f(o.get('median_ms'))} | "
              f"{f(d.get('peak_rss_mib'))} / {f(t.get('peak_rss_mib'))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
