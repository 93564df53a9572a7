#!/usr/bin/env python3
"""Times orchid's CPU plan executor against ONNX Runtime and PyTorch on the model zoo.

    .venv/bin/python bench/executor_benchmark.py                  # the 7 real zoo models
    .venv/bin/python bench/executor_benchmark.py --quick          # smoke run (3 timed runs)
    .venv/bin/python bench/executor_benchmark.py --models resnet50,bert_base --threads 2
    .venv/bin/python bench/executor_benchmark.py --models all     # every models/*.onnx (tiny_* too)

For every model, in one run on this machine and with the same thread count for every
engine (default: the cores this process may use), the median / p10 / p90 inference time of

  1. orchid optimal plan, measured costs:
       orchid orchestrate M --device cpu --profile --profile-db DB --plan-kind optimal --json P
       orchid run M --plan P --input ... --repeat N
  2. orchid operator-level plan and 3. orchid greedy-fusion plan, same way and with the
     same profile database DB (one fresh database per model, so each model's
     orchestration+profiling wall time includes all of its own kernel measurements and
     the three plans are costed by identical measurements);
  4. ONNX Runtime (PyPI onnxruntime, CPUExecutionProvider, ORT_ENABLE_ALL,
     intra_op_num_threads = threads, inter_op_num_threads = 1, ORT_SEQUENTIAL) on a
     self-contained copy written by `orchid materialize` (so ORT sees exactly the weights
     orchid regenerates for stripped zoo files);
  5. PyTorch eager (torch.set_num_threads(threads), one inter-op thread,
     torch.inference_mode()) on the module models/export_zoo.py builds (build_model);
     its weights are the torch random init, not orchid's regenerated ones (timing only).

All engines get the same inputs (tools/compare_onnxruntime.py's make_inputs, seed 0,
saved as .npy and passed to orchid with --input), one warm-up run (fixed by `orchid run`,
which always does exactly one; the others are given the same) and --repeat timed runs,
in --rounds rounds (default 3): each round runs every engine once, in a fresh process,
engines interleaved, and each engine reports its best round (lowest median), so that a
slow spell of a shared or virtual machine does not land on one engine only.
Percentiles are computed the way `orchid run` prints them (median = sorted[n // 2],
p = sorted[round(q (n - 1))]). orchid runs with OMP_NUM_THREADS = threads; ONNX Runtime
and PyTorch each run in a fresh worker process (this script with `_worker`), so no
engine's thread pool is alive while another is timed. Each orchid plan's outputs are
compared against ONNX Runtime's (|a - b| <= 1e-4 + 1e-3 |b|) as a sanity check.

A failing or timed-out engine is recorded with the first line of its message and the
benchmark goes on. Results (rewritten atomically after every model): bench/results/
executor.md and executor.csv. Targets are reported, not asserted; the exit status is 0
unless the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL_MODELS = ["candy", "segformer_b0", "yolox_nano", "resnet50", "mobilenet_v2", "vit_b_16",
               "bert_base"]
WARMUP = 1   # `orchid run` always does exactly one warm-up run before --repeat timed runs
ENGINES = ["optimal", "operator-level", "greedy-fusion", "onnxruntime", "pytorch"]
PLAN_KINDS = ["optimal", "operator-level", "greedy-fusion"]
TARGET_GREEDY = 1.15   # optimal at least this much faster than greedy fusion (geomean)
TARGET_ORT = 1.0       # optimal time at most this times ONNX Runtime's (geomean)


# ---------------------------------------------------------------------------------------
# helpers shared by the driver and the workers


def sanitize(name: str) -> str:
    """As `orchid run --save-outputs` names files ('/', ':' and '\\' become '_')."""
    for c in "/:\\":
        name = name.replace(c, "_")
    return name


def stats_of(times_ms: list[float]) -> dict:
    """Median and percentiles exactly as `orchid run` prints them."""
    s = sorted(times_ms)
    pct = lambda q: s[int(q * (len(s) - 1) + 0.5)]
    return {"median_ms": s[len(s) // 2], "p10_ms": pct(0.1), "p90_ms": pct(0.9), "min_ms": s[0],
            "runs": len(s)}


def first_line(text: str) -> str:
    """The line that says what went wrong: orchid's `orchid: error: ...`, a Python
    exception's last line, or else the first non-empty line."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return "failed without a message"
    for ln in lines:
        if "error:" in ln.lower():
            return ln[:300]
    tb = [ln for ln in lines if re.match(r"^[A-Za-z_.]+(Error|Exception|Fail\w*)\b", ln)]
    return (tb[-1] if tb else lines[0])[:300]


def run_cmd(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[int, str, str, float]:
    """(returncode, stdout, stderr, wall seconds); returncode -999 on time-out."""
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -999, out, f"timed out after {timeout:.0f} s: {shlex.join(cmd)}", time.monotonic() - start
    except OSError as e:
        return -998, "", f"{e}: {shlex.join(cmd)}", time.monotonic() - start


# ---------------------------------------------------------------------------------------
# workers (fresh processes, so that thread pools never overlap)


def worker_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="executor_benchmark.py _worker")
    ap.add_argument("engine", choices=["onnxruntime", "pytorch"])
    ap.add_argument("--model", required=True, help="zoo name (pytorch) or .onnx path (onnxruntime)")
    ap.add_argument("--inputs", required=True, help="JSON manifest: input name -> .npy file")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--warmup", type=int, default=WARMUP)
    ap.add_argument("--repeat", type=int, required=True)
    ap.add_argument("--result", required=True, help="JSON file to write")
    ap.add_argument("--save-outputs", help="directory for the outputs (onnxruntime)")
    a = ap.parse_args(argv)
    import numpy as np
    manifest = json.loads(Path(a.inputs).read_text())
    feeds = {k: np.load(v, allow_pickle=False) for k, v in manifest.items()}
    result: dict = {"engine": a.engine, "threads": a.threads}
    if a.engine == "onnxruntime":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        t0 = time.perf_counter()
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        result["session_s"] = time.perf_counter() - t0
        names = [o.name for o in sess.get_outputs()]
        run = lambda: sess.run(None, feeds)
        result["version"] = ort.__version__
    else:
        sys.path.insert(0, str(ROOT / "models"))
        import export_zoo  # noqa: E402  (the zoo's own definitions, not a copy)
        import torch
        te = export_zoo.build_model(a.model)
        # export_zoo's torch_setup() caps threads at 2 and turns deterministic algorithms on.
        torch.use_deterministic_algorithms(False)
        torch.set_num_threads(a.threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass  # already fixed once parallel work ran; inference here is one op at a time
        module = te.module.eval()
        missing = [n for n in te.input_names if n not in feeds]
        if missing:
            raise SystemExit(f"error: torch module wants inputs {missing} the ONNX file lacks")
        args = tuple(torch.from_numpy(feeds[n]) for n in te.input_names)
        names = list(te.output_names)

        def run():
            with torch.inference_mode():
                return module(*args)
        result["version"] = torch.__version__
        result["torch_threads"] = torch.get_num_threads()
    for _ in range(a.warmup):
        out = run()
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        out = run()
        times.append((time.perf_counter() - t0) * 1e3)
    result.update(stats_of(times))
    result["times_ms"] = times
    if a.save_outputs and a.engine == "onnxruntime":
        d = Path(a.save_outputs)
        d.mkdir(parents=True, exist_ok=True)
        for n, arr in zip(names, out):
            np.save(d / f"{sanitize(n)}.npy", arr, allow_pickle=False)
        result["outputs"] = names
    Path(a.result).write_text(json.dumps(result))
    return 0


# ---------------------------------------------------------------------------------------
# machine description


def sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def machine(orchid: str, python: str, threads: int) -> dict:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    osname = platform.system()
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    versions = sh([python, "-c", "import onnxruntime, torch, numpy; print(onnxruntime.__version__, "
                   "torch.__version__, numpy.__version__)"]).split()
    dnnl = sh(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "libdnnl-dev"]) or "unknown"
    commit = sh(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = sh(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "src",
                "CMakeLists.txt"])
    return {
        "cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
        "memory": mem, "os": f"{osname}, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "onnxruntime": versions[0] if len(versions) > 0 else "not installed",
        "torch": versions[1] if len(versions) > 1 else "not installed",
        "numpy": versions[2] if len(versions) > 2 else "?",
        "onednn": dnnl.replace("libdnnl-dev ", "libdnnl-dev (Debian) "),
        "orchid": sh([orchid, "--version"]) or "?",
        "commit": commit + (" + uncommitted changes under src/" if dirty else ""),
        "threads": threads,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


# ---------------------------------------------------------------------------------------
# the driver


def orchid_flags(orchid: str) -> tuple[bool, bool, str]:
    """(has --profile, has --plan-kind, message) for `orchid orchestrate`."""
    rc, out, err, _ = run_cmd([orchid, "orchestrate", "--help"], 60)
    if rc != 0:
        raise SystemExit(f"error: `{orchid} orchestrate --help` failed: {first_line(err or out)}")
    text = out + err
    prof, kind = "--profile" in text, "--plan-kind" in text
    missing = [f for f, ok in (("--profile", prof), ("--plan-kind", kind)) if not ok]
    msg = ""
    if missing:
        msg = (f"{orchid} orchestrate lacks {' and '.join(missing)} (an older build?): "
               + ("the optimal plan is costed by the analytic model, not measured; " if not prof else "")
               + ("operator-level and greedy-fusion plans cannot be written, so they are not run"
                  if not kind else ""))
    return prof, kind, msg.rstrip("; ")


def parse_run_report(path: Path) -> dict | None:
    """Time and memory from `orchid run --json FILE` (docs/json_output.md)."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    t = report["time_ms"]
    out = {"median_ms": t["median"], "runs": t["runs"], "p10_ms": t["p10"], "p90_ms": t["p90"],
           "min_ms": t["min"]}
    if "memory_bytes" in report:
        out["peak_mib"] = report["memory_bytes"]["peak"] / (1 << 20)
    return out


def compare_outputs(got_dir: Path, want_dir: Path, names: list[str]) -> str:
    import numpy as np
    worst, bad = 0.0, []
    for n in names:
        f = got_dir / f"{sanitize(n)}.npy"
        if not f.exists():
            return f"no output {n}"
        g, w = np.load(f), np.load(want_dir / f"{sanitize(n)}.npy")
        if g.shape != w.shape:
            return f"{n}: shape {list(g.shape)} != {list(w.shape)}"
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        d = np.abs(g64 - w64)
        worst = max(worst, float(d.max(initial=0)))
        if not np.all(d <= 1e-4 + 1e-3 * np.abs(w64)):
            bad.append(n)
    return f"MISMATCH ({', '.join(bad)}; max err {worst:.2g})" if bad else f"ok ({worst:.1g})"


def bench_model(name: str, a, prof: bool, kind: bool, python: str, work: Path) -> dict:
    import numpy as np
    import onnx
    sys.path.insert(0, str(ROOT / "tools"))
    from compare_onnxruntime import make_inputs  # same inputs as the ORT comparison tool

    row: dict = {"model": name}
    err: dict = {}
    path = ROOT / "models" / f"{name}.onnx"
    mdir = work / name
    if mdir.exists():
        shutil.rmtree(mdir)
    (mdir / "inputs").mkdir(parents=True)
    proto = onnx.load(str(path), load_external_data=False)
    feeds = make_inputs(proto)
    manifest = {}
    for k, v in feeds.items():
        f = mdir / "inputs" / f"{sanitize(k)}.npy"
        np.save(f, v, allow_pickle=False)
        manifest[k] = str(f)
    (mdir / "inputs.json").write_text(json.dumps(manifest))
    input_args = [x for k, f in manifest.items() for x in ("--input", f"{k}={f}")]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    pin = ["taskset", "-c", f"0-{a.threads - 1}"] if a.pin else []
    out_names = [o.name for o in proto.graph.output]

    # ONNX Runtime first: its outputs are the reference for the orchid sanity check.
    stripped = {p.key: p.value for p in proto.metadata_props}.get("orchid.weights") == "stripped"
    ort_model = str(path)
    if stripped:
        full = mdir / "full.onnx"
        rc, out, e, wall = run_cmd([a.orchid, "materialize", str(path), str(full)], a.timeout)
        row["materialize_s"] = round(wall, 2)
        ort_model = str(full) if rc == 0 else None
        if rc != 0:
            err["onnxruntime"] = "orchid materialize: " + first_line(e or out)
    ort_out = mdir / "ort_outputs"
    workers = {"onnxruntime": ort_model}
    if "pytorch" in a.engines:
        sys.path.insert(0, str(ROOT / "models"))
        import export_zoo
        spec = export_zoo.REGISTRY.get(name)
        if spec is None or spec.kind != "torch":
            err["pytorch"] = "n/a: no PyTorch definition (hand-built ONNX graph)"
        else:
            workers["pytorch"] = name

    # orchid: orchestrate each plan kind against one fresh profile database first.
    db = mdir / "profile-cpu.json"
    plans = {}
    for pk in PLAN_KINDS:
        if pk not in a.engines:
            continue
        if pk != "optimal" and not kind:
            err[pk] = "n/a: orchid orchestrate has no --plan-kind"
            continue
        plan = mdir / f"plan-{pk}.json"
        cmd = [a.orchid, "orchestrate", str(path), "--device", "cpu", "--json", str(plan)]
        if kind:
            cmd += ["--plan-kind", pk]
        if prof:
            cmd += ["--profile", "--profile-db", str(db)]
        rc, out, e, wall = run_cmd(pin + cmd, a.timeout, env)
        row[f"{pk}_orchestrate_s"] = round(wall, 2)
        if rc != 0 or not plan.exists():
            err[pk] = "orchestrate: " + first_line(e or out)
            continue
        try:
            pj = json.loads(plan.read_text())
            row[f"{pk}_kernels"] = pj.get("kernels") if isinstance(pj.get("kernels"), int) \
                else len(pj.get("kernels", []))
            row[f"{pk}_predicted_ms"] = round(pj.get("predicted_latency_us", float("nan")) / 1e3, 3)
            if pk == "optimal":
                row["blp_gap"] = pj.get("search", {}).get("blp_gap")
        except (OSError, ValueError):
            pass
        plans[pk] = plan

    # Timing: every engine once per round, rounds interleaved, so a slow spell of this
    # (shared, virtual) machine hits all engines alike; each engine keeps its best round.
    best: dict = {}
    for rnd in range(a.rounds):
        for engine, target in workers.items():
            if engine not in a.engines or engine in err:
                continue
            res = mdir / f"{engine}.json"
            cmd = pin + [python, str(Path(__file__).resolve()), "_worker", engine, "--model",
                         target, "--inputs", str(mdir / "inputs.json"), "--threads",
                         str(a.threads), "--repeat", str(a.repeat), "--result", str(res)]
            if engine == "onnxruntime" and rnd == 0:
                cmd += ["--save-outputs", str(ort_out)]
            rc, out, e, wall = run_cmd(cmd, a.timeout, env)
            if rc != 0 or not res.exists():
                err[engine] = first_line(e or out) if rc != 0 else "worker wrote no result"
                continue
            r = json.loads(res.read_text())
            row[f"{engine}_wall_s"] = round(wall, 2)
            if engine not in best or r["median_ms"] < best[engine]["median_ms"]:
                best[engine] = r
        for pk, plan in plans.items():
            if pk in err:
                continue
            outs = mdir / f"outputs-{pk}"
            report = mdir / f"run-{pk}.json"
            report.unlink(missing_ok=True)
            cmd = [a.orchid, "run", str(path), "--plan", str(plan), "--repeat", str(a.repeat),
                   "--json", str(report)]
            cmd += (["--save-outputs", str(outs)] if rnd == 0 else []) + input_args
            rc, out, e, wall = run_cmd(pin + cmd, a.timeout, env)
            t = parse_run_report(report) if rc == 0 else None
            if t is None:
                err[pk] = "run: " + (first_line(e or out) if rc != 0 else "no readable --json report")
                continue
            if "peak_mib" in t:
                row[f"{pk}_peak_mib"] = round(t.pop("peak_mib"), 1)
            if rnd == 0 and (ort_out / f"{sanitize(out_names[0])}.npy").exists():
                row[f"{pk}_vs_ort"] = compare_outputs(outs, ort_out, out_names)
            if pk not in best or t["median_ms"] < best[pk]["median_ms"]:
                best[pk] = t
        print(f"  round {rnd + 1}/{a.rounds}: " + ", ".join(
            f"{k} {v['median_ms']:.2f}" for k, v in best.items()), flush=True)
    for engine, r in best.items():
        if engine in err:
            continue
        for k in ("median_ms", "p10_ms", "p90_ms"):
            row[f"{engine}_{k}"] = r[k]
        extra = ""
        if engine in plans:
            extra = f"  orchestrate {row[f'{engine}_orchestrate_s']:.1f} s" + (
                f"  vs ORT {row[f'{engine}_vs_ort']}" if f"{engine}_vs_ort" in row else "")
        print(f"  {engine:15s} {r['median_ms']:10.2f} ms  (p10 {r['p10_ms']:.2f}, p90 "
              f"{r['p90_ms']:.2f}){extra}", flush=True)
    for engine, msg in err.items():
        row[f"{engine}_error"] = msg
        print(f"  {engine:15s} ERROR: {msg}", flush=True)
    opt = row.get("optimal_median_ms")
    for key, engine in (("opt_greedy", "greedy-fusion"), ("opt_operator", "operator-level"),
                        ("opt_ort", "onnxruntime"), ("opt_torch", "pytorch")):
        other = row.get(f"{engine}_median_ms")
        if opt and other:
            row[key] = round(opt / other, 4)
    if not a.keep:
        for f in mdir.glob("full.onnx"):
            f.unlink()
    return row


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def fmt_ms(row: dict, engine: str) -> str:
    if f"{engine}_median_ms" in row:
        return f"{row[engine + '_median_ms']:.2f}"
    msg = row.get(f"{engine}_error")
    return f"error: {msg.replace('|', '/')}" if msg and not msg.startswith("n/a") else \
        (msg.replace("|", "/") if msg else "—")


def write_results(rows: list[dict], a, mach: dict, flags_msg: str, done: bool, wall_s: float):
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    fields = ["model"]
    for e in ENGINES:
        fields += [f"{e}_median_ms", f"{e}_p10_ms", f"{e}_p90_ms", f"{e}_error"]
    fields += ["opt_greedy", "opt_operator", "opt_ort", "opt_torch", "materialize_s"]
    for pk in PLAN_KINDS:
        fields += [f"{pk}_orchestrate_s", f"{pk}_kernels", f"{pk}_predicted_ms", f"{pk}_peak_mib",
                   f"{pk}_vs_ort"]
    fields += ["onnxruntime_wall_s", "pytorch_wall_s", "blp_gap"]
    stem = "executor"
    tmp = out / f"{stem}.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(tmp, out / f"{stem}.csv")

    def gm(key):
        xs = [r[key] for r in rows if key in r]
        return geomean(xs), len(xs)
    g_greedy, n_greedy = gm("opt_greedy")
    g_op, n_op = gm("opt_operator")
    g_ort, n_ort = gm("opt_ort")
    g_torch, n_torch = gm("opt_torch")
    speed_greedy = 1 / g_greedy if n_greedy else float("nan")
    verdict = lambda ok, n: "no data" if n == 0 else ("**met**" if ok else "**missed**")
    L = ["# CPU executor benchmark", ""]
    if a.label:
        L += [f"> **{a.label}**", ""]
    if not done:
        L += ["> partial: the run is still going or was interrupted; models below are those done.", ""]
    L += [
        f"Measured {mach['date']} by `{a.command}`.",
        "",
        f"- machine: {mach['cpu']}, {mach['cores']} cores ({mach['usable_cores']} usable by this "
        f"process), {mach['memory']} memory, {mach['os']}",
        f"- software: orchid {mach['orchid'].replace('orchid ', '')} (commit {mach['commit']}), "
        f"oneDNN {mach['onednn']}, onnxruntime {mach['onnxruntime']}, torch {mach['torch']}, "
        f"numpy {mach['numpy']}, Python {mach['python']}",
        f"- threads: {a.threads} for every engine (orchid OMP_NUM_THREADS={a.threads}; ONNX Runtime "
        f"intra_op_num_threads={a.threads}, inter_op 1, sequential; torch.set_num_threads({a.threads}))"
        + ("; every engine pinned with taskset" if a.pin else ""),
        f"- runs: {WARMUP} warm-up + {a.repeat} timed runs per engine and round, {a.rounds} "
        "round(s) with the engines interleaved, each engine's best round (lowest median) "
        "reported; same inputs for all; "
        f"load average (1/5/15 min) {mach['load_start']} at the start, "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; whole benchmark "
        f"{wall_s / 60:.1f} min",
        "- orchid plans: `orchid orchestrate M --device cpu --profile --profile-db DB --plan-kind K "
        "--json P` (one fresh profile database per model, shared by the three plan kinds), then "
        "`orchid run M --plan P --repeat N`. ONNX Runtime runs the `orchid materialize`d copy "
        "(same weights as orchid); PyTorch runs the export_zoo.py module (its own random weights).",
    ]
    if flags_msg:
        L += [f"- **note:** {flags_msg}"]
    L += [
        "",
        "## Targets (reported, not asserted)",
        "",
        f"- optimal ≥ {TARGET_GREEDY:.2f}× faster than greedy-fusion (geomean): "
        f"{speed_greedy:.3f}× over {n_greedy} models — {verdict(speed_greedy >= TARGET_GREEDY, n_greedy)}",
        f"- optimal ≤ {TARGET_ORT:.1f}× ONNX Runtime time (geomean): {g_ort:.3f}× over {n_ort} models "
        f"— {verdict(g_ort <= TARGET_ORT, n_ort)}",
        "",
        f"Geometric means of the time ratios (below 1: optimal is faster): optimal/greedy "
        f"{g_greedy:.3f} ({n_greedy} models), optimal/operator-level {g_op:.3f} ({n_op}), "
        f"optimal/ORT {g_ort:.3f} ({n_ort}), optimal/PyTorch {g_torch:.3f} ({n_torch}).",
        "",
        "## Median inference time (ms)",
        "",
        "| model | optimal | operator-level | greedy-fusion | ONNX Runtime | PyTorch | "
        "opt/greedy | opt/operator | opt/ORT | opt/PyTorch |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratio = lambda r, k: f"{r[k]:.3f}" if k in r else "—"
    for r in rows:
        L.append(f"| {r['model']} | " + " | ".join(fmt_ms(r, e) for e in ENGINES) + " | "
                 + " | ".join(ratio(r, k) for k in ("opt_greedy", "opt_operator", "opt_ort",
                                                     "opt_torch")) + " |")
    L += ["", "## Spread: p10 / p90 (ms)", "",
          "| model | optimal | operator-level | greedy-fusion | ONNX Runtime | PyTorch |",
          "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{r[e + '_p10_ms']:.2f} / {r[e + '_p90_ms']:.2f}" if f"{e}_p10_ms" in r else "—"
                 for e in ENGINES]
        L.append(f"| {r['model']} | " + " | ".join(cells) + " |")
    L += ["", "## orchid: orchestration + profiling, plans, sanity check", "",
          "Wall time of each `orchid orchestrate --profile` run (s). The optimal plan is "
          "orchestrated first against the model's empty profile database, so its time includes "
          "measuring every kernel it costs; operator-level and greedy-fusion reuse those "
          "measurements (profiling only what is new). Kernels and predicted (measured-cost) "
          "latency per plan; outputs compared against ONNX Runtime (max abs error).",
          "",
          "| model | orchestrate+profile optimal (s) | operator-level (s) | greedy (s) | kernels opt/op/greedy | "
          "predicted opt/op/greedy (ms) | optimal vs ORT | operator vs ORT | greedy vs ORT |",
          "|---|---|---|---|---|---|---|---|---|"]
    g = lambda r, k, f="{}": f.format(r[k]) if r.get(k) is not None else "—"
    for r in rows:
        L.append(f"| {r['model']} | {g(r, 'optimal_orchestrate_s')} | {g(r, 'operator-level_orchestrate_s')} | "
                 f"{g(r, 'greedy-fusion_orchestrate_s')} | "
                 + "/".join(g(r, f"{pk}_kernels") for pk in PLAN_KINDS) + " | "
                 + "/".join(g(r, f"{pk}_predicted_ms", "{:.2f}") for pk in PLAN_KINDS) + " | "
                 + " | ".join(g(r, f"{pk}_vs_ort") for pk in PLAN_KINDS) + " |")
    errs = [(r["model"], e, r[f"{e}_error"]) for r in rows for e in ENGINES
            if f"{e}_error" in r and not r[f"{e}_error"].startswith("n/a")]
    if errs:
        L += ["", "## Errors", ""] + [f"- {m}, {e}: {msg}" for m, e, msg in errs]
    tmp = out / f"{stem}.md.tmp"
    tmp.write_text("\n".join(L) + "\n")
    os.replace(tmp, out / f"{stem}.md")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        return worker_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--orchid", default=str(ROOT / "build" / "orchid"), help="orchid binary")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for every engine (default: usable cores)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per engine (default 20)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="timing rounds, engines interleaved; each engine keeps its best round "
                         "(default 3)")
    ap.add_argument("--quick", action="store_true", help="smoke run: --repeat 3, --rounds 1")
    ap.add_argument("--models", default=",".join(REAL_MODELS),
                    help="comma-separated zoo names, or 'all' for every models/*.onnx "
                         "(default: the 7 real models)")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help=f"comma-separated subset of {','.join(ENGINES)}")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per command (default 1200)")
    ap.add_argument("--pin", action="store_true",
                    help="run every engine under `taskset -c 0-(threads-1)` (useful when --threads is "
                         "below the core count: orchid's reference kernels size their pool by the "
                         "hardware, not by OMP_NUM_THREADS)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the workers")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--work", help="keep intermediate files (plans, profile databases, inputs, "
                                   "outputs) here instead of a temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the materialized models in --work too")
    ap.add_argument("--label", default="", help="a line shown at the top of executor.md "
                                                 "(e.g. 'smoke run under load')")
    a = ap.parse_args()
    if a.quick:
        a.repeat = 3
        a.rounds = 1
    if a.threads < 1 or a.repeat < 1:
        ap.error("--threads and --repeat must be at least 1")
    a.engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    bad = [e for e in a.engines if e not in ENGINES]
    if bad:
        ap.error(f"unknown engine(s) {bad}; choose from {ENGINES}")
    if a.models == "all":
        models = sorted(p.stem for p in (ROOT / "models").glob("*.onnx"))
    else:
        models = [m.strip() for m in a.models.split(",") if m.strip()]
    missing = [m for m in models if not (ROOT / "models" / f"{m}.onnx").exists()]
    if missing:
        ap.error(f"no such zoo model(s): {', '.join(missing)}")
    if not os.access(a.orchid, os.X_OK):
        ap.error(f"{a.orchid} is not an executable orchid binary (build it, or pass --orchid)")
    a.command = "python3 bench/executor_benchmark.py " + shlex.join(sys.argv[1:])
    prof, kind, flags_msg = orchid_flags(a.orchid)
    if flags_msg:
        print(f"WARNING: {flags_msg}", file=sys.stderr)
    if a.threads > len(os.sched_getaffinity(0)):
        print(f"WARNING: --threads {a.threads} exceeds the {len(os.sched_getaffinity(0))} usable "
              f"cores", file=sys.stderr)
    mach = machine(a.orchid, a.python, a.threads)
    print(f"{mach['cpu']}, {mach['cores']} cores, threads {a.threads}, {WARMUP} warm-up + "
          f"{a.repeat} runs, load {mach['load_start']}", flush=True)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="orchid_exec_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    start = time.monotonic()
    try:
        for name in models:
            print(f"[{name}]", flush=True)
            t0 = time.monotonic()
            try:
                row = bench_model(name, a, prof, kind, a.python, work)
            except Exception as e:  # noqa: BLE001 - one model must not stop the benchmark
                row = {"model": name, **{f"{en}_error": f"benchmark: {type(e).__name__}: "
                                         f"{str(e).splitlines()[0] if str(e) else ''}" for en in a.engines}}
                print(f"  ERROR {row[a.engines[0] + '_error']}", flush=True)
            print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
            rows.append(row)
            write_results(rows, a, mach, flags_msg, done=False, wall_s=time.monotonic() - start)
        write_results(rows, a, mach, flags_msg, done=True, wall_s=time.monotonic() - start)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {Path(a.out) / 'executor.md'} and executor.csv "
          f"({(time.monotonic() - start) / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
