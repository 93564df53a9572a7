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
every engine's peak resident memory from /usr/bin/time (%M).
Prints a markdown table; nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_child(cmd: list[str], env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Runs cmd; returns the process and its peak resident memory in MiB (/usr/bin/time %M,
    NaN where that tool is missing)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        wrapped = (["/usr/bin/time", "-q", "-f", "%M", "-o", rss.name] + cmd
                   if os.path.exists("/usr/bin/time") else cmd)
        p = subprocess.run(wrapped, capture_output=True, text=True, timeout=1800, env=env)
        text = rss.read().strip().splitlines()
    try:
        return p, float(text[-1]) / 1024
    except (IndexError, ValueError):
        return p, float("nan")


def orchid_run(orchid: str, model: Path, extra: list[str], repeat: int, threads: int,
               env: dict | None = None) -> dict:
    """One `orchid run ... --json -` (docs/json_output.md); the default command runs with
    --reselect so that its selection is timed in every round, not read from the cache."""
    cmd = [orchid, "run", str(model), "--device", "cpu", "--repeat", str(repeat),
           "--threads", str(threads), "--json", "-"] + extra
    p, rss = timed_child(cmd, env)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout or "?").strip().splitlines()[-1]}
    j = json.loads(p.stdout)
    sel = j.get("selection", {})
    chosen = sel.get("chosen", "")
    trials = sel.get("candidates", [])
    return {
        "median_ms": j["time_ms"]["median"],
        "cv_pct": 100 * j["time_ms"].get("cv", float("nan")),
        "predicted_ms": j.get("plan", {}).get("predicted_ms", float("nan")),
        "orchestrate_s": j.get("orchestrate_seconds", float("nan")),
        "select_s": sel.get("seconds", 0.0),
        "chosen": chosen,
        "select_line": ", ".join(f"{t['kind']} {t['median_ms']:.3g}" for t in trials),
        "isa": j.get("cpu", {}).get("onednn_isa", "?"),
        "peak_rss_mib": rss,
        "executor_peak_mib": j.get("memory_bytes", {}).get("peak", float("nan")) / 2**20,
    }


def make_inputs(model: Path, folder: Path, python: str) -> Path:
    code = f"""
import json, numpy as np, onnxruntime as ort
s = ort.InferenceSession({str(model)!r}, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(0); m = {{}}
for i in s.get_inputs():
    shape = [d if isinstance(d, int) else 1 for d in i.shape]
    a = rng.standard_normal(shape).astype(np.float32) if "float" in i.type else np.zeros(shape, np.int64)
    p = {str(folder)!r} + "/" + str(len(m)) + ".npy"; np.save(p, a); m[i.name] = p
json.dump(m, open({str(folder / 'inputs.json')!r}, "w"))
"""
    subprocess.run([python, "-c", code], check=True)
    return folder / "inputs.json"


def ort_run(python: str, model: Path, manifest: Path, threads: int, repeat: int, folder: Path) -> dict:
    result = folder / "ort.json"
    p, rss = timed_child([python, str(ROOT / "bench/executor_benchmark.py"), "_worker",
                          "onnxruntime", "--model", str(model), "--inputs", str(manifest),
                          "--threads", str(threads), "--repeat", str(repeat), "--result",
                          str(result)])
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout or "?").strip().splitlines()[-1]}
    r = json.loads(result.read_text())
    r["peak_rss_mib"] = rss
    return r


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
    busy = [subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
            for _ in range(a.busy)]
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
                manifest = make_inputs(full, folder, a.python)
                engines = {
                    "default": lambda: orchid_run(a.orchid, model, ["--reselect"], a.repeat,
                                                  a.threads, env),
                    "optimal": lambda: orchid_run(a.orchid, model, ["--plan-kind", "optimal"],
                                                  a.repeat, a.threads, env),
                    "greedy": lambda: orchid_run(a.orchid, model, ["--plan-kind", "greedy-fusion"],
                                                 a.repeat, a.threads, env),
                    "ort": lambda: ort_run(a.python, full, manifest, a.threads, a.repeat, folder),
                }
                best: dict = {}
                order = list(engines)
                for r in range(a.rounds):
                    for e in order[r % len(order):] + order[:r % len(order)]:
                        got = engines[e]()
                        print(f"# {name} round {r} {e}: {got}", file=sys.stderr, flush=True)
                        m = got.get("median_ms", float("inf"))
                        if e not in best or m < best[e].get("median_ms", float("inf")):
                            best[e] = got
                rows.append((name, best))
    finally:
        for b in busy:
            b.kill()
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
