#!/usr/bin/env python3
"""Times orchid on the CPU against ONNX Runtime and PyTorch: the benchmark of issue 12.

    .venv/bin/python bench/executor_benchmark.py                  # the 7 real zoo models
    .venv/bin/python bench/executor_benchmark.py --quick          # smoke run (3 timed runs, 1 round)
    .venv/bin/python bench/executor_benchmark.py --models resnet50,bert_base --threads 2
    .venv/bin/python bench/executor_benchmark.py --models all     # every models/*.onnx (tiny_* too)
    .venv/bin/python bench/executor_benchmark.py --engines default,default-avx2,onnxruntime,onnxruntime-avx2 --load 0
                                                  # orchid's default command vs ORT only (no profiling)
    .venv/bin/python bench/executor_benchmark.py --models none --third-party /tmp/tp
                                                  # the exports tools/check_third_party.py --work /tmp/tp left

For every model, in one run on this machine and with the same thread count T for every
engine (default: the cores this process may use), the median / p10 / p90 inference time of
these engines (--engines picks a subset):

  default         orchid's default command, what users run:
                    orchid run M --device cpu --repeat N --threads T --json - --reselect
                  (the k best predicted plans and greedy fusion timed end to end, the fastest
                  kept; --reselect so that this selection is timed again in every round). Its
                  chosen plan, orchestration and selection seconds (reported apart from the
                  run time) and its predicted time come from the JSON (docs/json_output.md).
  default-avx2    the same on a CPU masked to AVX2: bench/avx2_only.c, preloaded, hides AVX-512,
                  AVX-VNNI and AMX from CPUID (Linux CPUID faulting), so that oneDNN and
                  orchid's own vector code take their AVX2 paths as on an AVX2-only machine.
                  Where CPUID faulting is missing: ONEDNN_MAX_CPU_ISA=AVX2 (oneDNN only).
  optimal, fastest, operator-level, greedy-fusion
                  plans costed by measurements on this machine (fastest: the BLP's 3 best
                  plans and greedy fusion timed end to end by orchestrate, the fastest kept):
                    orchid orchestrate M --device cpu --profile --profile-db DB --plan-kind K --json P
                    orchid run M --plan P --repeat N --threads T --json -
                  one fresh profile database per model (or --profile-dir), shared by the four
                  kinds, so that they are costed by identical measurements (kernels timed
                  alone, then inside whole runs of the plans: docs/cost_model.md, "Times in
                  context"; the first orchestration does that timing); the table compares
                  each plan's predicted time with its measured one (measured / predicted - 1).
  onnxruntime     PyPI onnxruntime, CPUExecutionProvider, ORT_ENABLE_ALL, intra_op_num_threads
                  T, inter_op_num_threads 1, ORT_SEQUENTIAL, on a self-contained copy written by
                  `orchid materialize` (the weights orchid regenerates for stripped zoo files).
  onnxruntime-avx2
                  the same under bench/avx2_only.c: MLAS's AVX2 kernels, the peer of
                  default-avx2 (n/a where the CPU cannot be masked; AVX2/ORT then divides by
                  the native ONNX Runtime).
  pytorch         PyTorch eager (torch.set_num_threads(T), one inter-op thread,
                  inference_mode) on the module models/export_zoo.py builds; its weights are
                  torch's random init (timing only); zoo models with a torch definition only.

All engines get the same inputs (tools/compare_onnxruntime.py's make_inputs, seed 0: floats
U(-1, 1), input_ids in [0, 1000), attention masks all ones, other integer inputs zeros),
saved as .npy and passed to orchid with --input; one warm-up run (`orchid run` always does
exactly one; the workers do the same) and --repeat timed runs, in --rounds rounds: each
round runs every engine once, in a fresh process, the order rotating from round to round,
and each engine reports its best round (lowest median), so that a slow spell of a shared
machine does not land on one engine only. Percentiles as `orchid run` computes them
(median = sorted[n // 2], p = sorted[round(q (n - 1))]).

--load L1,L2,... (default 0,1,2): for every L > 0, L processes `taskset -c 0 sh -c 'while
:; do :; done'` spin while the default command and ONNX Runtime are timed again (rounds
interleaved as above, both under the same load); they are killed afterwards. The tables
give each engine's median under load and its slowdown (loaded / unloaded median).

Peak resident memory (MiB) of orchid's default command, of the greedy-fusion plan's run
and of the ONNX Runtime worker comes from /usr/bin/time -f %M (NaN where it is missing),
the largest over the unloaded rounds.

--third-party DIR adds every DIR/*.onnx (tools/check_third_party.py --work DIR leaves its
torchvision / Hugging Face exports there, named like torchvision.efficientnet_b0.onnx or
transformers.distilbert@fp16.onnx); quantize_static's fp32 intermediates (*.onnx.fp32.onnx)
are left out. A model or engine that fails is recorded with the first line of its message
and the benchmark goes on.

Each orchid run's outputs are compared with ONNX Runtime's (|a - b| <= 1e-4 + 1e-3 |b|) as a
sanity check. Results (rewritten atomically after every model): OUT/executor.md and
OUT/executor.csv (--out, default bench/results). Targets are reported, never asserted; the
exit status is 0 unless the benchmark itself could not run.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
REAL_MODELS = ["candy", "segformer_b0", "yolox_nano", "resnet50", "mobilenet_v2", "vit_b_16",
               "bert_base"]
WARMUP = 1   # `orchid run` always does exactly one warm-up run before --repeat timed runs
DEFAULTS = ["default", "default-avx2"]
PLAN_KINDS = ["optimal", "fastest", "operator-level", "greedy-fusion"]
WORKERS = ["onnxruntime", "pytorch"]
ORT_AVX2 = "onnxruntime-avx2"   # the ONNX Runtime worker on a CPU masked to AVX2
ENGINES = DEFAULTS + PLAN_KINDS + WORKERS + [ORT_AVX2]
LOAD_ENGINES = ["default", "onnxruntime"]          # timed again under competing load
RSS_ENGINES = ["default", "greedy-fusion", "onnxruntime"]
AVX2_ENV = {"ONEDNN_MAX_CPU_ISA": "AVX2"}   # where the CPU cannot be masked: oneDNN only
# glibc reads CPUID before bench/avx2_only.c can mask it; its own AVX-512 string functions are
# turned off by name.
GLIBC_NO_AVX512 = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,"
                                     "-AVX512CD,-AVX512ER,-AVX512PF"}
SPINNER = ["taskset", "-c", "0", "sh", "-c", "while :; do :; done"]
TRANSFORMERS = ("vit", "bert", "segformer", "electra", "gpt2")   # name parts of transformer models
LABELS = {"default": "orchid default", "default-avx2": "orchid default AVX2",
          "optimal": "optimal", "fastest": "fastest", "operator-level": "operator-level",
          "greedy-fusion": "greedy-fusion", "onnxruntime": "ONNX Runtime", "pytorch": "PyTorch",
          ORT_AVX2: "ONNX Runtime AVX2"}

# Targets (issue 12), reported, never asserted.
TARGET_ORT_GEOMEAN = 0.9     # default / ORT time, geometric mean over the models
TARGET_ORT_MAX = 1.1         # ... and no model above this
TARGET_TRANSFORMER = 1.1     # greedy / optimal on transformers at least this
TARGET_PREDICTION = 0.15     # |measured / predicted - 1| for measured-cost plans


# ---------------------------------------------------------------------------------------
# helpers shared by the driver, the workers and bench/cpu_plans_bench.py


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


@dataclass
class Run:
    rc: int              # -999 on time-out, -998 when the command could not start
    out: str
    err: str
    wall_s: float
    rss_mib: float       # peak resident memory (/usr/bin/time %M); NaN unless asked for


def run_cmd(cmd: list[str], timeout: float, env: dict | None = None, rss: bool = False) -> Run:
    """Runs cmd; with rss=True under `/usr/bin/time -f %M` for its peak resident memory
    (NaN where that tool is missing or wrote nothing)."""
    start = time.monotonic()
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as f:
        wrapped = (["/usr/bin/time", "-q", "-f", "%M", "-o", f.name] + cmd
                   if rss and os.access("/usr/bin/time", os.X_OK) else cmd)
        try:
            p = subprocess.run(wrapped, capture_output=True, text=True, timeout=timeout, env=env)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            rc, err = -999, f"timed out after {timeout:.0f} s: {shlex.join(cmd)}"
        except OSError as e:
            rc, out, err = -998, "", f"{e}: {shlex.join(cmd)}"
        lines = f.read().split()
    try:
        peak = float(lines[-1]) / 1024 if rc == 0 else float("nan")
    except (IndexError, ValueError):
        peak = float("nan")
    return Run(rc, out, err, time.monotonic() - start, peak)


class EngineError(Exception):
    """One engine failed on one model: its one-line message."""


def parse_run_json(text: str) -> dict:
    """The figures of `orchid run ... --json -` (docs/json_output.md) this benchmark uses."""
    j = json.loads(text)
    nan = float("nan")
    t, plan, sel = j["time_ms"], j.get("plan", {}), j.get("selection", {})
    predicted = plan.get("predicted_ms", plan["predicted_us"] / 1e3 if "predicted_us" in plan
                         else nan)
    return {
        "median_ms": t["median"], "p10_ms": t["p10"], "p90_ms": t["p90"], "min_ms": t["min"],
        "runs": t["runs"], "cv": t.get("cv", nan),
        "predicted_ms": predicted,
        "chosen": sel.get("chosen", plan.get("kind", "")),
        "candidates": ", ".join(f"{c['kind']} {c['median_ms']:.3g}"
                                for c in sel.get("candidates", [])),
        "orchestrate_s": j.get("orchestrate_seconds", nan),
        "select_s": sel.get("seconds", nan),       # absent when a cached choice was reused
        "isa": j.get("cpu", {}).get("onednn_isa", "?"),
        "openmp_wait": j.get("cpu", {}).get("openmp_wait", "?"),
        "executor_peak_mib": j.get("memory_bytes", {}).get("peak", nan) / 2**20,
    }


def orchid_run(orchid: str, model: Path, extra: list[str], repeat: int, threads: int,
               timeout: float, env: dict | None = None, prefix: list[str] | None = None,
               save: Path | None = None) -> dict:
    """One `orchid run M EXTRA --repeat N --threads T --json -` with its peak RSS."""
    cmd = (prefix or []) + [orchid, "run", str(model), *extra, "--repeat", str(repeat),
                            "--threads", str(threads), "--json", "-"]
    if save:
        cmd += ["--save-outputs", str(save)]
    r = run_cmd(cmd, timeout, env, rss=True)
    if r.rc != 0:
        raise EngineError(first_line(r.err or r.out))
    try:
        out = parse_run_json(r.out)
    except (ValueError, KeyError, TypeError) as e:
        raise EngineError(f"unreadable `orchid run --json -` report ({type(e).__name__}: {e})")
    out["peak_rss_mib"] = r.rss_mib
    return out


def worker_run(python: str, engine: str, target: str, manifest: Path, threads: int, repeat: int,
               result: Path, timeout: float, env: dict | None = None,
               prefix: list[str] | None = None, save: Path | None = None) -> dict:
    """One ONNX Runtime or PyTorch timing in a fresh worker process, with its peak RSS."""
    result.unlink(missing_ok=True)
    cmd = (prefix or []) + [python, str(Path(__file__).resolve()), "_worker", engine, "--model",
                            target, "--inputs", str(manifest), "--threads", str(threads),
                            "--repeat", str(repeat), "--result", str(result)]
    if save:
        cmd += ["--save-outputs", str(save)]
    r = run_cmd(cmd, timeout, env, rss=True)
    if r.rc != 0 or not result.exists():
        raise EngineError(first_line(r.err or r.out) if r.rc != 0 else "worker wrote no result")
    out = json.loads(result.read_text())
    out["peak_rss_mib"] = r.rss_mib
    return out


def write_inputs(model: Path, folder: Path) -> tuple[Path, list[str]]:
    """The benchmark's inputs for model (tools/compare_onnxruntime.py's make_inputs, seed 0)
    as folder/<name>.npy; returns the JSON manifest (name -> file) and the matching
    `orchid run --input NAME=FILE` arguments."""
    import numpy as np
    import onnx
    sys.path.insert(0, str(ROOT / "tools"))
    from compare_onnxruntime import make_inputs  # the inputs of the ORT comparison tool
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for k, v in make_inputs(onnx.load(str(model), load_external_data=False)).items():
        f = folder / f"{sanitize(k)}.npy"
        np.save(f, v, allow_pickle=False)
        manifest[k] = str(f)
    path = folder / "inputs.json"
    path.write_text(json.dumps(manifest))
    return path, [x for k, f in manifest.items() for x in ("--input", f"{k}={f}")]


def start_load(n: int) -> list[subprocess.Popen]:
    """n processes spinning on core 0."""
    return [subprocess.Popen(SPINNER, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


# ---------------------------------------------------------------------------------------
# workers (fresh processes, so that thread pools never overlap)


def worker_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="executor_benchmark.py _worker")
    ap.add_argument("engine", choices=WORKERS)
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


def cpuinfo() -> tuple[str, set[str]]:
    """(CPU model name, flags) from /proc/cpuinfo."""
    name, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name in ("", "unknown CPU", platform.processor()):
                name = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return name, flags


def avx2_setup(work: Path) -> tuple[dict, bool, str]:
    """How the AVX2 columns run here: (environment, whether every engine sees an AVX2-only
    CPU, a note). Where Linux offers CPUID faulting, bench/avx2_only.c (built here with cc)
    is preloaded into orchid and ONNX Runtime alike; elsewhere only oneDNN can be capped."""
    _, flags = cpuinfo()
    if "avx512f" not in flags:
        return {}, False, "this CPU has no AVX-512: the native columns already run AVX2"
    why = ("no CPUID faulting here (x86 flag cpuid_fault)" if "cpuid_fault" not in flags
           else "no C compiler (cc)" if not shutil.which("cc") else "")
    if not why:
        lib = work / "avx2_only.so"
        r = run_cmd(["cc", "-O2", "-shared", "-fPIC", "-fno-stack-protector", "-o", str(lib),
                     str(ROOT / "bench" / "avx2_only.c")], 120)
        if r.rc == 0:
            return ({"LD_PRELOAD": str(lib), **GLIBC_NO_AVX512}, True,
                    "orchid and ONNX Runtime on a CPU masked to AVX2 (bench/avx2_only.c)")
        why = "bench/avx2_only.c did not build: " + first_line(r.err or r.out)
    return (AVX2_ENV, False,
            f"orchid with ONEDNN_MAX_CPU_ISA=AVX2, ONNX Runtime native ({why})")


def orchid_commit(orchid: str) -> str:
    """Short HEAD of the repository that holds the orchid binary (else of this script's)."""
    repo = sh(["git", "-C", str(Path(orchid).resolve().parent), "rev-parse", "--show-toplevel"])
    repo = repo or str(ROOT)
    commit = sh(["git", "-C", repo, "rev-parse", "--short", "HEAD"]) or "?"
    dirty = sh(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no", "src",
                "CMakeLists.txt"])
    return commit + (" + uncommitted changes under src/" if dirty else "")


def machine(orchid: str, python: str, threads: int) -> dict:
    cpu, flags = cpuinfo()
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
    versions = {}
    for module in ("onnxruntime", "torch", "numpy"):
        versions[module] = sh([python, "-c", f"import {module}; print({module}.__version__)"]) \
            or "not installed"
    # What the ORT worker's peak RSS holds before any model: the interpreter with numpy
    # and onnxruntime imported.
    base = run_cmd([python, "-c", "import numpy, onnxruntime"], 120, rss=True)
    dnnl = sh(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "libdnnl-dev"]) or "unknown"
    return {
        "cpu": cpu, "cores": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
        "isa_flags": ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in ("avx512f", "avx2")),
        "memory": mem, "os": f"{osname}, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        **versions,
        "ort_baseline_mib": base.rss_mib,
        "onednn": dnnl.replace("libdnnl-dev ", "libdnnl-dev (Debian) "),
        "orchid": sh([orchid, "--version"]) or "?",
        "commit": orchid_commit(orchid),
        "threads": threads,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


# ---------------------------------------------------------------------------------------
# the driver


@dataclass
class Model:
    name: str
    path: Path
    third_party: bool = False


def orchid_flags(orchid: str) -> tuple[bool, bool, str]:
    """(has --profile, has --plan-kind, message) for `orchid orchestrate`."""
    r = run_cmd([orchid, "orchestrate", "--help"], 60)
    if r.rc != 0:
        raise SystemExit(f"error: `{orchid} orchestrate --help` failed: {first_line(r.err or r.out)}")
    text = r.out + r.err
    prof, kind = "--profile" in text, "--plan-kind" in text
    missing = [f for f, ok in (("--profile", prof), ("--plan-kind", kind)) if not ok]
    msg = ""
    if missing:
        msg = (f"{orchid} orchestrate lacks {' and '.join(missing)} (an older build?): "
               + ("the optimal plan is costed by the analytic model, not measured; " if not prof else "")
               + ("operator-level and greedy-fusion plans cannot be written, so they are not run"
                  if not kind else ""))
    return prof, kind, msg.rstrip("; ")


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


def rotated(items: list[str], rnd: int) -> list[str]:
    k = rnd % len(items) if items else 0
    return items[k:] + items[:k]


def timing_rounds(engines: dict[str, Callable[[bool], dict]], rounds: int, err: dict,
                  label: str, save_first: bool) -> dict[str, list[dict]]:
    """Every engine once per round, the order rotating, so that a slow spell of this
    (shared, virtual) machine hits all engines alike. With save_first, an engine's callable
    gets save=True in the first round (write outputs for the sanity check). Failures go to
    err; returns the results of the engines that never failed."""
    results: dict[str, list[dict]] = {}
    for rnd in range(rounds):
        for engine in rotated([e for e in engines if e not in err], rnd):
            try:
                results.setdefault(engine, []).append(engines[engine](save_first and rnd == 0))
            except EngineError as e:
                err[engine] = str(e)
        print(f"  {label}round {rnd + 1}/{rounds}: " + ", ".join(
            f"{e} {min(r['median_ms'] for r in rs):.3g}" for e, rs in results.items()
            if e not in err), flush=True)
    return {e: rs for e, rs in results.items() if e not in err}


def best_of(results: list[dict]) -> dict:
    return min(results, key=lambda r: r["median_ms"])


def bench_model(model: Model, a, prof: bool, kind: bool, work: Path) -> dict:
    import onnx
    row: dict = {"model": model.name}
    err: dict = {}
    mdir = work / sanitize(model.name)
    if mdir.exists():
        shutil.rmtree(mdir)
    mdir.mkdir(parents=True)
    manifest, input_args = write_inputs(model.path, mdir / "inputs")
    proto = onnx.load(str(model.path), load_external_data=False)
    out_names = [o.name for o in proto.graph.output]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    # The default command's plan choice goes to plan-choices-cpu.json beside the default
    # profile database; a private cache keeps the user's untouched (--reselect never reads it).
    default_env = dict(env, XDG_CACHE_HOME=str(mdir / "cache"))
    pin = ["taskset", "-c", f"0-{a.threads - 1}"] if a.pin else []
    wanted = [e for e in ENGINES if e in a.engines]

    # ONNX Runtime runs a self-contained copy (stripped zoo files: orchid's weights).
    stripped = {p.key: p.value for p in proto.metadata_props}.get("orchid.weights") == "stripped"
    ort_model = str(model.path)
    if stripped and ("onnxruntime" in wanted or ORT_AVX2 in wanted):
        full = mdir / "full.onnx"
        r = run_cmd([a.orchid, "materialize", str(model.path), str(full)], a.timeout)
        row["materialize_s"] = round(r.wall_s, 2)
        if r.rc != 0:
            err["onnxruntime"] = "orchid materialize: " + first_line(r.err or r.out)
        ort_model = str(full)
    if "pytorch" in wanted:
        sys.path.insert(0, str(ROOT / "models"))
        import export_zoo
        spec = None if model.third_party else export_zoo.REGISTRY.get(model.name)
        if spec is None or spec.kind != "torch":
            err["pytorch"] = "n/a: no PyTorch definition (hand-built ONNX graph or third-party export)"

    # Measured-cost plans: each kind orchestrated against one profile database per model.
    db = (Path(a.profile_dir) / f"{sanitize(model.name)}.json" if a.profile_dir
          else mdir / "profile-cpu.json")
    plans: dict[str, Path] = {}
    for pk in PLAN_KINDS:
        if pk not in wanted:
            continue
        if pk != "optimal" and not kind:
            err[pk] = "n/a: orchid orchestrate has no --plan-kind"
            continue
        plan = mdir / f"plan-{pk}.json"
        cmd = [a.orchid, "orchestrate", str(model.path), "--device", "cpu", "--json", str(plan)]
        if kind:
            cmd += ["--plan-kind", pk]
        if prof:
            cmd += ["--profile", "--profile-db", str(db)]
        r = run_cmd(pin + cmd, a.timeout, env)
        row[f"{pk}_orchestrate_s"] = round(r.wall_s, 2)
        if r.rc != 0 or not plan.exists():
            err[pk] = "orchestrate: " + first_line(r.err or r.out)
            continue
        try:
            pj = json.loads(plan.read_text())
            row[f"{pk}_kernels"] = pj.get("kernels") if isinstance(pj.get("kernels"), int) \
                else len(pj.get("kernels", []))
            row[f"{pk}_predicted_ms"] = pj.get("predicted_latency_us", float("nan")) / 1e3
            if pk == "optimal":
                row["blp_gap"] = pj.get("search", {}).get("blp_gap")
        except (OSError, ValueError):
            pass
        plans[pk] = plan

    outs = lambda e: mdir / f"outputs-{e}"
    ort_out = outs("onnxruntime")

    def orchid_engine(name: str, extra: list[str], engine_env: dict) -> Callable[[bool], dict]:
        return lambda save: orchid_run(a.orchid, model.path, extra + input_args, a.repeat,
                                       a.threads, a.timeout, engine_env, pin,
                                       outs(name) if save else None)

    def worker_engine(engine: str, target: str, name: str = "",
                      engine_env: dict | None = None) -> Callable[[bool], dict]:
        name = name or engine
        return lambda save: worker_run(
            a.python, engine, target, manifest, a.threads, a.repeat, mdir / f"{name}.json",
            a.timeout, engine_env or env, pin, ort_out if save and name == "onnxruntime" else None)

    engines: dict[str, Callable[[bool], dict]] = {}
    for e in wanted:
        if e in err:
            continue
        if e == "default":
            engines[e] = orchid_engine(e, ["--device", "cpu", "--reselect"], default_env)
        elif e == "default-avx2":
            engines[e] = orchid_engine(e, ["--device", "cpu", "--reselect"],
                                       dict(default_env, **a.avx2_env))
        elif e in plans:
            engines[e] = orchid_engine(e, ["--plan", str(plans[e])], env)
        elif e == "onnxruntime":
            engines[e] = worker_engine(e, ort_model)
        elif e == "pytorch":
            engines[e] = worker_engine(e, model.name)
        elif e == ORT_AVX2:
            if a.avx2_masked:
                engines[e] = worker_engine("onnxruntime", ort_model, e, dict(env, **a.avx2_env))
            else:
                err[e] = f"n/a: {a.avx2_note}"

    # Unloaded timing: every engine.
    results = timing_rounds(engines, a.rounds, err, "", save_first=True)
    if "default" in engines and "default" not in err:
        # What a user's later runs take: the plan choice the rounds cached, no selection.
        cached = orchid_engine("default", ["--device", "cpu"], default_env)(False)
        row["default_cached_peak_rss_mib"] = cached.get("peak_rss_mib", float("nan"))
        row["default_cached_median_ms"] = cached.get("median_ms", float("nan"))
    for e, rs in results.items():
        b = best_of(rs)
        for k in ("median_ms", "p10_ms", "p90_ms"):
            row[f"{e}_{k}"] = b[k]
        if e in RSS_ENGINES:
            rss = [r["peak_rss_mib"] for r in rs if not math.isnan(r["peak_rss_mib"])]
            row[f"{e}_peak_rss_mib"] = max(rss) if rss else float("nan")
        if e in DEFAULTS:
            row[f"{e}_chosen"] = b["chosen"]
            row[f"{e}_chosen_rounds"] = " ".join(r["chosen"] for r in rs)
            row[f"{e}_candidates"] = b["candidates"]
            for k in ("orchestrate_s", "select_s", "predicted_ms", "isa", "openmp_wait"):
                row[f"{e}_{k}"] = b[k]
            # The first run refines the costs in context (docs/cost_model.md); later runs
            # find the times stored.
            firsts = [r["orchestrate_s"] for r in rs if not math.isnan(r["orchestrate_s"])]
            row[f"{e}_orchestrate_first_s"] = max(firsts) if firsts else float("nan")
        if e in plans and row.get(f"{e}_predicted_ms", 0) > 0:   # NaN > 0 is False
            row[f"{e}_pred_err"] = b["median_ms"] / row[f"{e}_predicted_ms"] - 1
        if e not in WORKERS + [ORT_AVX2] and (ort_out / f"{sanitize(out_names[0])}.npy").exists():
            row[f"{e}_vs_ort"] = compare_outputs(outs(e), ort_out, out_names)

    # Competing load: the default command and ONNX Runtime again, per load level.
    load_engines = {e: engines[e] for e in LOAD_ENGINES if e in results}
    for level in a.load:
        if level == 0 or not load_engines:
            continue
        procs = start_load(level)
        try:
            time.sleep(0.5)   # let the spinners get going
            load_err: dict = {}
            loaded = timing_rounds(load_engines, a.rounds, load_err, f"load {level}: ",
                                   save_first=False)
        finally:
            stop_load(procs)
        for e in load_engines:
            if e not in loaded:
                row[f"{e}_load{level}_error"] = load_err.get(e, "no result")
                continue
            m = best_of(loaded[e])["median_ms"]
            row[f"{e}_load{level}_median_ms"] = m
            row[f"{e}_load{level}_slowdown"] = m / row[f"{e}_median_ms"]

    for e, msg in err.items():
        row[f"{e}_error"] = msg
    ratio = lambda x, y: row[f"{x}_median_ms"] / row[f"{y}_median_ms"] \
        if f"{x}_median_ms" in row and f"{y}_median_ms" in row else None
    for key, x, y in (("default_ort", "default", "onnxruntime"),
                      ("avx2_ort", "default-avx2", ORT_AVX2 if a.avx2_masked else "onnxruntime"),
                      ("opt_greedy", "optimal", "greedy-fusion"),
                      ("sel_greedy", "fastest", "greedy-fusion"),
                      ("opt_operator", "optimal", "operator-level"),
                      ("opt_ort", "optimal", "onnxruntime"),
                      ("opt_torch", "optimal", "pytorch")):
        if (v := ratio(x, y)) is not None:
            row[key] = v
    if "default_peak_rss_mib" in row and row.get("onnxruntime_peak_rss_mib"):
        row["rss_default_ort"] = row["default_peak_rss_mib"] / row["onnxruntime_peak_rss_mib"]
    if "default_cached_peak_rss_mib" in row and row.get("onnxruntime_peak_rss_mib"):
        row["rss_cached_ort"] = (row["default_cached_peak_rss_mib"]
                                 / row["onnxruntime_peak_rss_mib"])
    for e in ENGINES:
        if f"{e}_median_ms" in row:
            print(f"  {e:15s} {row[e + '_median_ms']:10.4g} ms  (p10 {row[e + '_p10_ms']:.4g}, "
                  f"p90 {row[e + '_p90_ms']:.4g})"
                  + (f"  chosen {row[e + '_chosen']}" if f"{e}_chosen" in row else "")
                  + (f"  vs ORT {row[e + '_vs_ort']}" if f"{e}_vs_ort" in row else ""), flush=True)
        elif f"{e}_error" in row:
            print(f"  {e:15s} ERROR: {row[e + '_error']}", flush=True)
    if not a.keep:
        for f in mdir.glob("full.onnx"):
            f.unlink()
    return row


# ---------------------------------------------------------------------------------------
# results


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def num(v) -> str:
    """Times and sizes with about three significant digits (tiny models run in µs)."""
    if not isinstance(v, (int, float)) or math.isnan(v):
        return "—"
    return f"{v:.1f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) >= 1 else f"{v:.3g}"


def cell(row: dict, engine: str, key: str = "median_ms") -> str:
    """A figure, or the engine's error on this model."""
    if f"{engine}_{key}" in row:
        return num(row[f"{engine}_{key}"])
    msg = row.get(f"{engine}_error")
    if not msg:
        return "—"
    return "n/a" if msg.startswith("n/a") else "error (see below)"


def is_transformer(model: str) -> bool:
    return any(t in model.lower() for t in TRANSFORMERS)


def target_lines(rows: list[dict], loads: list[int], avx2_note: str) -> list[str]:
    """The issue's targets, each with its numbers and met / missed (never asserted)."""
    def line(goal: str, n: int, ok: bool, numbers: str) -> str:
        return f"- {goal}: " + (f"{numbers} — {'**met**' if ok else '**missed**'}" if n
                                else "no data")

    def pairs(key: str) -> list[tuple[str, float]]:
        return [(r["model"], r[key]) for r in rows
                if isinstance(r.get(key), float) and not math.isnan(r[key])]
    L = []
    for key, isa in (("default_ort", "native ISA"),
                     ("avx2_ort", avx2_note)):
        xs = pairs(key)
        g = geomean([x for _, x in xs])
        above = [f"{m} {x:.2f}" for m, x in xs if x > TARGET_ORT_MAX]
        worst = max(xs, key=lambda t: t[1], default=("", 0.0))
        L.append(line(f"orchid default / ONNX Runtime time, {isa}: geomean ≤ {TARGET_ORT_GEOMEAN} "
                      f"and no model above {TARGET_ORT_MAX}", len(xs),
                      g <= TARGET_ORT_GEOMEAN and not above,
                      f"geomean {g:.3f} over {len(xs)} models, highest {worst[0]} {worst[1]:.3f}"
                      + (f" (above {TARGET_ORT_MAX}: {', '.join(above)})" if above else "")))
    for key, what in (("opt_greedy", "the BLP's optimum"),
                      ("sel_greedy", "the plan kept after timing the BLP's 3 best and greedy "
                                     "fusion end to end (orchestrate --plan-kind fastest)")):
        xs = pairs(key)
        slower = [f"{m} {x:.3f}" for m, x in xs if x > 1.0]
        L.append(line(f"{what} never slower than greedy fusion (/ greedy ≤ 1 on every model)",
                      len(xs), not slower, f"geomean {geomean([x for _, x in xs]):.3f} over "
                      f"{len(xs)} models" + (f"; slower on {', '.join(slower)}" if slower else "")))
        ts = [(m, 1 / x) for m, x in xs if is_transformer(m)]
        L.append(line(f"{what} ≥ {TARGET_TRANSFORMER}× faster than greedy fusion on transformers "
                      f"(names with {'/'.join(TRANSFORMERS)})", len(ts),
                      all(sp >= TARGET_TRANSFORMER for _, sp in ts),
                      "speed-up " + ", ".join(f"{m} {sp:.3f}×" for m, sp in ts)))
    errs = [(r["model"], pk, r[f"{pk}_pred_err"]) for r in rows for pk in PLAN_KINDS
            if isinstance(r.get(f"{pk}_pred_err"), float)]
    off = [f"{m} {pk} {e:+.0%}" for m, pk, e in errs if abs(e) > TARGET_PREDICTION]
    worst = max(errs, key=lambda t: abs(t[2]), default=("", "", 0.0))
    L.append(line(f"measured-cost plans' predicted time within ±{TARGET_PREDICTION:.0%} of the "
                  "measured (measured / predicted − 1)", len(errs), not off,
                  f"{len(errs) - len(off)} of {len(errs)} plans within, largest {worst[0]} "
                  f"{worst[1]} {worst[2]:+.0%}"
                  + (f" (outside: {', '.join(off)})" if 0 < len(off) <= 8 else "")))
    for level in (x for x in loads if x > 0):
        both = [(r["model"], r[f"default_load{level}_slowdown"], r[f"onnxruntime_load{level}_slowdown"])
                for r in rows if f"default_load{level}_slowdown" in r
                and f"onnxruntime_load{level}_slowdown" in r]
        worse = [f"{m} {d:.2f}× vs {o:.2f}×" for m, d, o in both if d > o]
        L.append(line(f"{level} busy process{'es' if level > 1 else ''} on core 0: orchid "
                      "default's slowdown ≤ ONNX Runtime's on every model", len(both), not worse,
                      f"geomean {geomean([d for _, d, _ in both]):.2f}× vs "
                      f"{geomean([o for _, _, o in both]):.2f}× over {len(both)} models"
                      + (f"; larger on {', '.join(worse)}" if worse else "")))
    for key, which in (("default_peak_rss_mib", "first run, which selects the plan"),
                       ("default_cached_peak_rss_mib", "later runs, choice cached")):
        both = [(r["model"], r[key], r["onnxruntime_peak_rss_mib"]) for r in rows
                if not math.isnan(r.get(key, math.nan))
                and not math.isnan(r.get("onnxruntime_peak_rss_mib", math.nan))]
        more = [f"{m} {d:.1f} vs {o:.1f} MiB" for m, d, o in both if d > o]
        L.append(line(f"orchid default's peak RSS ≤ ONNX Runtime's on every model ({which})",
                      len(both), not more,
                      f"geomean ratio {geomean([d / o for _, d, o in both]):.2f} over "
                      f"{len(both)} models" + (f"; more on {', '.join(more)}" if more else "")))
    return L


def csv_fields(rows: list[dict], loads: list[int]) -> list[str]:
    fields = ["model"]
    for e in ENGINES:
        fields += [f"{e}_median_ms", f"{e}_p10_ms", f"{e}_p90_ms", f"{e}_error"]
    for e in DEFAULTS:
        fields += [f"{e}_chosen", f"{e}_chosen_rounds", f"{e}_orchestrate_s",
                   f"{e}_orchestrate_first_s", f"{e}_select_s",
                   f"{e}_predicted_ms", f"{e}_isa", f"{e}_candidates", f"{e}_vs_ort"]
    fields += ["default_ort", "avx2_ort", "opt_greedy", "sel_greedy", "opt_operator", "opt_ort",
               "opt_torch"]
    for pk in PLAN_KINDS:
        fields += [f"{pk}_orchestrate_s", f"{pk}_kernels", f"{pk}_predicted_ms", f"{pk}_pred_err",
                   f"{pk}_vs_ort"]
    for level in (x for x in loads if x > 0):
        for e in LOAD_ENGINES:
            fields += [f"{e}_load{level}_median_ms", f"{e}_load{level}_slowdown",
                       f"{e}_load{level}_error"]
    fields += [f"{e}_peak_rss_mib" for e in RSS_ENGINES] + ["rss_default_ort", "materialize_s",
                                                            "blp_gap"]
    for r in rows:   # anything else a row holds, so that nothing measured is lost
        fields += [k for k in r if k not in fields]
    return fields


def write_results(rows: list[dict], a, mach: dict, notes: list[str], done: bool, wall_s: float):
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "executor"
    tmp = out / f"{stem}.csv.tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=csv_fields(rows, a.load), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()})
    os.replace(tmp, out / f"{stem}.csv")

    skipped = [r for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    isas = lambda e: ", ".join(sorted({r[f"{e}_isa"] for r in rows if f"{e}_isa" in r})) or "not run"
    loads = [x for x in a.load if x > 0]
    has = lambda *engines: any(e in a.engines for e in engines)
    T = a.threads
    L = ["# CPU benchmark: orchid vs ONNX Runtime and PyTorch", ""]
    if a.label:
        L += [f"> **{a.label}**", ""]
    if not done:
        L += ["> partial: the run is still going or was interrupted; models below are those done.", ""]
    L += [
        f"Measured {mach['date']} by `{a.command}`.",
        "",
        f"- machine: {mach['cpu']}, {mach['cores']} cores ({mach['usable_cores']} usable by this "
        f"process), {mach['memory']} memory, ISA flags {mach['isa_flags']}; {mach['os']}",
        f"- oneDNN ISA orchid reports (`cpu.onednn_isa`): native {isas('default')}; AVX2 columns "
        f"{isas('default-avx2')}: {a.avx2_note}. "
        + ("The library turns on Linux's CPUID faulting and answers CPUID without AVX-512, "
           "AVX-VNNI and AMX, so oneDNN, ONNX Runtime's MLAS and orchid's own vector code all "
           "pick their AVX2 kernels (GLIBC_TUNABLES does the same for glibc)."
           if a.avx2_masked else "ONNX Runtime cannot be capped there: next to the AVX2 "
           "column it runs its native ISA."),
        f"- software: orchid {mach['orchid'].replace('orchid ', '')} (commit {mach['commit']}), "
        f"oneDNN {mach['onednn']}, onnxruntime {mach['onnxruntime']}, torch {mach['torch']}, "
        f"numpy {mach['numpy']}, Python {mach['python']}",
        f"- threads: {T} for every engine (orchid --threads {T}, OMP_NUM_THREADS={T}; ONNX Runtime "
        f"intra_op_num_threads={T}, inter_op 1, sequential; torch.set_num_threads({T}))"
        + ("; every engine pinned with taskset" if a.pin else ""),
        f"- runs: {WARMUP} warm-up + {a.repeat} timed runs per engine and round, {a.rounds} "
        "round(s), engines interleaved in an order rotating per round, each engine's best round "
        "(lowest median) reported; the same inputs for all",
        f"- load average (1/5/15 min) {mach['load_start']} at the start, "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; whole benchmark "
        f"{wall_s / 60:.1f} min",
        "- orchid default: `orchid run M --device cpu --repeat N --threads T --json - --reselect` "
        "(plan selection timed again every round; orchestration and selection seconds are "
        "reported apart from the run time; predicted = the chosen plan's analytic prediction). "
        "Measured-cost plans: `orchid orchestrate M --device cpu --profile --profile-db DB "
        "--plan-kind K --json P` (one profile database per model, shared by the four kinds; "
        "fastest: the BLP's 3 best plans and greedy fusion timed end to end, with the threads "
        "this process may use, the fastest kept), then `orchid run M --plan P`. ONNX Runtime runs the `orchid materialize`d copy (the same "
        "weights as orchid); PyTorch the export_zoo.py module (its own random weights).",
    ]
    if loads:
        L.append(f"- competing load: {', '.join(map(str, loads))} process(es) "
                 "`taskset -c 0 sh -c 'while :; do :; done'` spinning while orchid default and "
                 "ONNX Runtime are timed again (same rounds scheme); slowdown = loaded / unloaded "
                 "median")
    L += [f"- **note:** {n}" for n in notes]
    L += ["", "## Targets (reported, not asserted)", ""] + target_lines(rows, a.load, a.avx2_note)

    if has("default", "default-avx2"):
        L += ["", "## orchid's default command vs ONNX Runtime (median ms)", "",
              "Orchestration and selection run before the timed runs and are not in the time; "
              "the first run's orchestration includes timing plans whole to refine the costs "
              "in context (later runs find those times stored). "
              "Chosen plan: that of the best round (all rounds' choices in the CSV).", "",
              "| model | orchid default | chosen | orchestrate first / best round (s) | "
              "selection (s) | predicted | "
              "ONNX Runtime | default/ORT | orchid default AVX2 | chosen AVX2 | ONNX Runtime AVX2 "
              "| AVX2/ORT |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            L.append(f"| {r['model']} | {cell(r, 'default')} | {r.get('default_chosen', '—')} | "
                     f"{num(r.get('default_orchestrate_first_s'))} / "
                     f"{num(r.get('default_orchestrate_s'))} | {num(r.get('default_select_s'))} | "
                     f"{num(r.get('default_predicted_ms'))} | {cell(r, 'onnxruntime')} | "
                     f"{num(r.get('default_ort'))} | {cell(r, 'default-avx2')} | "
                     f"{r.get('default-avx2_chosen', '—')} | {cell(r, ORT_AVX2)} | "
                     f"{num(r.get('avx2_ort'))} |")
    if has(*PLAN_KINDS, "pytorch"):
        L += ["", "## Measured-cost plans, ONNX Runtime, PyTorch (median ms)", "",
              "| model | optimal | fastest | operator-level | greedy-fusion | ONNX Runtime | PyTorch | "
              "opt/greedy | fastest/greedy | opt/operator | opt/ORT | opt/PyTorch |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            L.append(f"| {r['model']} | " + " | ".join(cell(r, e) for e in PLAN_KINDS + WORKERS)
                     + " | " + " | ".join(num(r.get(k)) for k in ("opt_greedy", "sel_greedy",
                                                                   "opt_operator", "opt_ort",
                                                                   "opt_torch")) + " |")
    if has(*PLAN_KINDS):
        L += ["", "## Measured-cost plans: predicted vs measured, orchestration", "",
              "Predicted: the plan's measured-cost prediction (`predicted_latency_us`); error = "
              "measured / predicted − 1. Orchestrate + profile: wall time of each `orchid "
              "orchestrate --profile`; the optimal plan is orchestrated first against the model's "
              "empty profile database, so its time includes measuring every kernel it costs.", "",
              "| model | optimal pred / meas (ms) | error | fastest pred / meas | error | "
              "operator-level pred / meas | error | greedy pred / meas | error | "
              "orchestrate + profile opt / fastest / op / greedy (s) | "
              "kernels opt / fastest / op / greedy |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            cells = []
            for pk in PLAN_KINDS:
                cells.append(f"{num(r.get(f'{pk}_predicted_ms'))} / {cell(r, pk)}")
                e = r.get(f"{pk}_pred_err")
                cells.append(f"{e:+.0%}" if isinstance(e, float) else "—")
            L.append(f"| {r['model']} | " + " | ".join(cells) + " | "
                     + " / ".join(num(r.get(f"{pk}_orchestrate_s")) for pk in PLAN_KINDS) + " | "
                     + " / ".join(str(r.get(f"{pk}_kernels", "—")) for pk in PLAN_KINDS) + " |")
    if loads and has(*LOAD_ENGINES):
        L += ["", "## Under competing load (median ms, slowdown = loaded / unloaded)", "",
              "| model | busy processes | orchid default | default slowdown | ONNX Runtime | "
              "ORT slowdown |", "|---|---|---|---|---|---|"]
        for r in rows:
            for level in loads:
                c = lambda e: (num(r[f"{e}_load{level}_median_ms"]) if f"{e}_load{level}_median_ms" in r
                               else r.get(f"{e}_load{level}_error", "—").replace("|", "/"))
                s = lambda e: (f"{r[f'{e}_load{level}_slowdown']:.2f}×"
                               if f"{e}_load{level}_slowdown" in r else "—")
                L.append(f"| {r['model']} | {level} | {c('default')} | {s('default')} | "
                         f"{c('onnxruntime')} | {s('onnxruntime')} |")
    if has(*RSS_ENGINES):
        L += ["", "## Peak resident memory (MiB)", "",
              "`/usr/bin/time -f %M` of the whole process, largest over the unloaded rounds. "
              "orchid default includes orchestration and the timing of every candidate plan; the "
              "ONNX Runtime worker includes the Python interpreter with numpy and onnxruntime "
              f"imported ({num(mach['ort_baseline_mib'])} MiB before any model).", "",
              "| model | orchid default (selects) | orchid default (cached choice) "
              "| orchid greedy-fusion | ONNX Runtime | selects/ORT | cached/ORT |",
              "|---|---|---|---|---|---|---|"]
        for r in rows:
            L.append(f"| {r['model']} | {num(r.get('default_peak_rss_mib'))} | "
                     f"{num(r.get('default_cached_peak_rss_mib'))} | "
                     + " | ".join(num(r.get(f"{e}_peak_rss_mib")) for e in RSS_ENGINES[1:])
                     + f" | {num(r.get('rss_default_ort'))} | {num(r.get('rss_cached_ort'))} |")
        L += ["", "The first run of the default command on a model times plans whole in "
              "context and then its candidate plans (all built at once); their executors share "
              "one packing of the weights, and an original is dropped once packed and read "
              "plain by none of them. Later runs read the choice from the cache and build one "
              "executor, which drops the originals of weights it reads only packed."]
    shown = [e for e in ENGINES if e in a.engines]
    L += ["", "## Spread: p10 / p90 (ms), sanity check against ONNX Runtime", "",
          "Outputs of each orchid engine compared with ONNX Runtime's (|a − b| ≤ 1e-4 + 1e-3 |b|; "
          "max abs error).", "",
          "| model | " + " | ".join(LABELS[e] for e in shown) + " | sanity vs ORT |",
          "|" + "---|" * (len(shown) + 2)]
    for r in rows:
        spread = [f"{num(r[f'{e}_p10_ms'])} / {num(r[f'{e}_p90_ms'])}" if f"{e}_p10_ms" in r else "—"
                  for e in shown]
        sanity = "; ".join(f"{e} {r[f'{e}_vs_ort']}" for e in DEFAULTS + PLAN_KINDS
                           if f"{e}_vs_ort" in r) or "—"
        L.append(f"| {r['model']} | " + " | ".join(spread) + f" | {sanity} |")
    errs = [(r["model"], e, r[f"{e}_error"]) for r in rows for e in ENGINES
            if f"{e}_error" in r and not r[f"{e}_error"].startswith("n/a")]
    if errs:
        L += ["", "## Errors", ""] + [f"- {m}, {e}: {msg}" for m, e, msg in errs]
    not_run: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        for e in ENGINES:
            if r.get(f"{e}_error", "").startswith("n/a"):
                not_run.setdefault((e, r[f"{e}_error"][4:].strip()), []).append(r["model"])
    if not_run:
        L += ["", "## Not applicable", ""] + [f"- {LABELS[e]}, {why}: {', '.join(ms)}"
                                              for (e, why), ms in not_run.items()]
    if skipped:
        L += ["", "## Skipped models", ""] + [f"- {r['model']}: {r['error']}" for r in skipped]
    tmp = out / f"{stem}.md.tmp"
    tmp.write_text("\n".join(L) + "\n")
    os.replace(tmp, out / f"{stem}.md")


def third_party_models(folder: Path, zoo: set[str]) -> tuple[list[Model], list[str]]:
    """Every folder/*.onnx but quantize_static's fp32 intermediates; (models, notes)."""
    models, left_out = [], []
    for p in sorted(folder.glob("*.onnx")):
        if not p.is_file():
            continue
        if p.name.endswith(".onnx.fp32.onnx"):
            left_out.append(p.name)
            continue
        name = p.name[:-len(".onnx")]
        models.append(Model(f"third-party {name}" if name in zoo else name, p, third_party=True))
    notes = [f"third-party models from {folder}: {len(models)}"]
    if left_out:
        notes[0] += (f"; left out {len(left_out)} fp32 intermediate(s) of quantize_static "
                     f"({', '.join(left_out)}), the same graphs as the opset-17 exports")
    return models, notes


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
                    help="comma-separated zoo names, 'all' for every models/*.onnx, or 'none' "
                         "(with --third-party) (default: the 7 real models)")
    ap.add_argument("--third-party", metavar="DIR",
                    help="also benchmark every DIR/*.onnx (tools/check_third_party.py --work DIR)")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help=f"comma-separated subset of {','.join(ENGINES)}")
    ap.add_argument("--load", default="0,1,2",
                    help="busy processes on core 0 while orchid default and ONNX Runtime are "
                         "timed again, one timing per value > 0; the unloaded timing always runs "
                         "('0' skips the load columns; default 0,1,2)")
    ap.add_argument("--profile-dir", metavar="DIR",
                    help="keep the measured-cost plans' profile databases in DIR/<model>.json and "
                         "reuse them in later runs (profiling takes minutes on the big models; "
                         "default: a fresh database per model)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per command (default 1200)")
    ap.add_argument("--pin", action="store_true",
                    help="run every engine under `taskset -c 0-(threads-1)` (useful when --threads is "
                         "below the core count: orchid's reference kernels size their pool by the "
                         "hardware, not by OMP_NUM_THREADS)")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the workers")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"),
                    help="folder for executor.md and executor.csv (default bench/results)")
    ap.add_argument("--work", help="keep intermediate files (plans, profile databases, inputs, "
                                   "outputs) here instead of a temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the materialized models in --work too")
    ap.add_argument("--label", default="", help="a line shown at the top of executor.md "
                                                 "(e.g. 'smoke run under load')")
    a = ap.parse_args()
    if a.quick:
        a.repeat = 3
        a.rounds = 1
    if a.threads < 1 or a.repeat < 1 or a.rounds < 1:
        ap.error("--threads, --repeat and --rounds must be at least 1")
    a.engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    bad = [e for e in a.engines if e not in ENGINES]
    if bad:
        ap.error(f"unknown engine(s) {bad}; choose from {ENGINES}")
    try:
        a.load = sorted({int(x) for x in a.load.split(",") if x.strip()} | {0})
    except ValueError:
        ap.error(f"--load wants comma-separated process counts, not '{a.load}'")
    if any(x < 0 for x in a.load):
        ap.error("--load counts must not be negative")
    if (a.pin or a.load[-1] > 0) and not shutil.which("taskset"):
        ap.error("taskset (util-linux) is missing: --pin and --load above 0 need it")
    zoo = {p.stem for p in (ROOT / "models").glob("*.onnx")}
    if a.models == "all":
        names = sorted(zoo)
    elif a.models == "none":
        names = []
    else:
        names = [m.strip() for m in a.models.split(",") if m.strip()]
    missing = [m for m in names if m not in zoo]
    if missing:
        ap.error(f"no such zoo model(s): {', '.join(missing)}")
    models = [Model(n, ROOT / "models" / f"{n}.onnx") for n in names]
    if not os.access(a.orchid, os.X_OK):
        ap.error(f"{a.orchid} is not an executable orchid binary (build it, or pass --orchid)")
    prof, kind, flags_msg = orchid_flags(a.orchid)
    notes = [flags_msg] if flags_msg else []
    if a.third_party:
        if not Path(a.third_party).is_dir():
            ap.error(f"--third-party {a.third_party}: no such folder")
        extra, tp_notes = third_party_models(Path(a.third_party), zoo)
        models += extra
        notes += tp_notes
    if not models:
        ap.error("no models to benchmark")
    a.command = "python3 bench/executor_benchmark.py " + shlex.join(sys.argv[1:])
    if flags_msg:
        print(f"WARNING: {flags_msg}", file=sys.stderr)
    if a.threads > len(os.sched_getaffinity(0)):
        print(f"WARNING: --threads {a.threads} exceeds the {len(os.sched_getaffinity(0))} usable "
              f"cores", file=sys.stderr)
    if a.profile_dir:
        Path(a.profile_dir).mkdir(parents=True, exist_ok=True)
        notes.append(f"profile databases reused from {a.profile_dir} (--profile-dir): the "
                     "orchestrate + profile times include only what was not measured before")
    mach = machine(a.orchid, a.python, a.threads)
    print(f"{mach['cpu']}, {mach['usable_cores']} usable cores, threads {a.threads}, {WARMUP} "
          f"warm-up + {a.repeat} runs x {a.rounds} rounds, load {mach['load_start']}", flush=True)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="orchid_exec_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    a.avx2_env, a.avx2_masked, a.avx2_note = avx2_setup(work)
    print(f"AVX2 columns: {a.avx2_note}", flush=True)
    rows: list[dict] = []
    start = time.monotonic()
    try:
        for model in models:
            print(f"[{model.name}]", flush=True)
            t0 = time.monotonic()
            try:
                row = bench_model(model, a, prof, kind, work)
            except Exception as e:  # noqa: BLE001 - one model must not stop the benchmark
                msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                row = {"model": model.name, "error": f"skipped: {msg}"}
                print(f"  SKIPPED {msg}", flush=True)
            print(f"  ({time.monotonic() - t0:.0f} s)", flush=True)
            rows.append(row)
            write_results(rows, a, mach, notes, done=False, wall_s=time.monotonic() - start)
        write_results(rows, a, mach, notes, done=True, wall_s=time.monotonic() - start)
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {Path(a.out) / 'executor.md'} and executor.csv "
          f"({(time.monotonic() - start) / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
