#!/usr/bin/env python3
"""Orchestrates every zoo model for every device model and writes one table.

Runs `build/orchid orchestrate MODEL --device DEVICE --json ...` (standard library only)
and records primitives, regions, candidates, chosen kernels, optimization time, BLP gap
and the predicted latency of the optimal plan next to each baseline, as measured in this
one run. Output: bench/results/orchestration.md and orchestration.csv.

Usage: python3 bench/orchestrate_benchmark.py [--orchid build/orchid] [--devices a100,...]
"""
import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def machine_description():
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orchid", default=os.path.join(ROOT, "build", "orchid"))
    parser.add_argument("--devices", default="v100,a100,h100,h200,cpu")
    parser.add_argument("--models", default="")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = parser.parse_args()

    models_dir = os.path.join(ROOT, "models")
    models = sorted(m[:-5] for m in os.listdir(models_dir) if m.endswith(".onnx"))
    if args.models:
        models = [m for m in models if m in args.models.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for device in args.devices.split(","):
                plan_path = os.path.join(tmp, f"{model}_{device}.json")
                start = time.monotonic()
                proc = subprocess.run(
                    [args.orchid, "orchestrate", os.path.join(models_dir, model + ".onnx"),
                     "--device", device, "--json", plan_path, "--static-part"],
                    capture_output=True, text=True)
                wall = time.monotonic() - start
                if proc.returncode != 0:
                    print(f"{model} on {device}: FAILED: {proc.stderr.strip()}", file=sys.stderr)
                    rows.append({"model": model, "device": device, "error": proc.stderr.strip()})
                    continue
                with open(plan_path) as f:
                    plan = json.load(f)
                s = plan["search"]
                b = plan["baselines_us"]
                opt = plan["predicted_latency_us"]
                rows.append({
                    "model": model, "device": device, "primitives": s["primitives"],
                    "regions": s["regions"], "candidates": s["candidates"],
                    "kernels": len(plan["kernels"]), "time_s": round(wall, 2),
                    "gap": s["blp_gap"], "optimal_us": round(opt, 2),
                    "greedy_us": round(b["greedy-fusion"], 2),
                    "operator_us": round(b["operator-level"], 2),
                    "primitive_us": round(b["per-primitive"], 2),
                    "vs_greedy": round(b["greedy-fusion"] / opt, 3),
                    "vs_operator": round(b["operator-level"] / opt, 3),
                    "vs_primitive": round(b["per-primitive"] / opt, 3),
                })
                r = rows[-1]
                print(f"{model:22} {device:5} {r['kernels']:4} kernels {r['optimal_us']:10.1f} us "
                      f"x{r['vs_greedy']:.3f} vs greedy  {wall:5.2f} s", flush=True)

    os.makedirs(args.out, exist_ok=True)
    fields = ["model", "device", "primitives", "regions", "candidates", "kernels", "time_s",
              "gap", "optimal_us", "greedy_us", "operator_us", "primitive_us", "vs_greedy",
              "vs_operator", "vs_primitive", "error"]
    with open(os.path.join(args.out, "orchestration.csv.tmp"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(os.path.join(args.out, "orchestration.csv.tmp"),
               os.path.join(args.out, "orchestration.csv"))

    ok = [r for r in rows if "error" not in r]
    def geomean(values):
        import math
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
    lines = [
        "# Kernel orchestration benchmark",
        "",
        f"Measured {datetime.date.today().isoformat()} on {machine_description()} by "
        "`python3 bench/orchestrate_benchmark.py`. Latencies are the analytic cost model's "
        "predictions for each device (configs/devices); time is the wall time of the whole "
        "`orchid orchestrate` run (import, fission, enumeration, costing, BLP, plan). "
        "Speedup = baseline latency / optimal latency, same cost model, same run. "
        "`--static-part` is passed: a no-op for static models; ssdlite320's rows are its "
        "static part (backbone, heads and box decoding before the data-dependent "
        "post-processing).",
        "",
        f"Geometric-mean speedup of the optimal plan: {geomean([r['vs_greedy'] for r in ok]):.3f}x "
        f"over greedy fusion, {geomean([r['vs_operator'] for r in ok]):.3f}x over operator-level, "
        f"{geomean([r['vs_primitive'] for r in ok]):.3f}x over per-primitive; "
        f"slowest run {max((r['time_s'] for r in ok), default=0):.2f} s; "
        f"largest BLP gap {max((r['gap'] for r in ok), default=0):.2g}.",
        "",
        "| model | device | primitives | regions | candidates | kernels | time (s) | gap | "
        "optimal (us) | greedy (us) | operator (us) | per-primitive (us) | vs greedy | "
        "vs operator | vs primitive |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['device']} | failed: {r['error']} |")
            continue
        lines.append(
            f"| {r['model']} | {r['device']} | {r['primitives']} | {r['regions']} | "
            f"{r['candidates']} | {r['kernels']} | {r['time_s']} | {r['gap']:.2g} | "
            f"{r['optimal_us']} | {r['greedy_us']} | {r['operator_us']} | {r['primitive_us']} | "
            f"{r['vs_greedy']}x | {r['vs_operator']}x | {r['vs_primitive']}x |")
    with open(os.path.join(args.out, "orchestration.md.tmp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(os.path.join(args.out, "orchestration.md.tmp"),
               os.path.join(args.out, "orchestration.md"))
    return 1 if len(ok) != len(rows) else 0


if __name__ == "__main__":
    sys.exit(main())
