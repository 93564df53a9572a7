#!/usr/bin/env python3
"""Compares orchid's reference interpreter against ONNX Runtime on the model zoo.

    python3 tools/compare_onnxruntime.py                    # every models/*.onnx
    python3 tools/compare_onnxruntime.py --only tiny_mlp    # repeatable
    python3 tools/compare_onnxruntime.py --orchid build-zoo/orchid
    python3 tools/compare_onnxruntime.py --ort-only         # no orchid: ORT all-opts vs no-opts
    python3 tools/compare_onnxruntime.py --only tiny_mlp --write-reference

For each model M:
  1. stripped models (metadata orchid.weights = stripped) are made self-contained with
     `orchid materialize M.onnx WORK/M/full.onnx`, so ONNX Runtime sees exactly the weights
     orchid regenerates (if models/M.weights exists, orchid reads it and so does this
     tool, without needing materialize); unstripped models are used as they are;
  2. inputs are drawn with numpy seed 0 from the model's declared dtypes/shapes: floats
     ~U(-1, 1); int64 input_ids in [0, 1000), attention_mask all ones, other integer
     inputs (token_type_ids, ...) zeros; bool inputs true. They are saved as .npy;
  3. ONNX Runtime (CPU, all graph optimisations on) runs the self-contained model;
  4. `orchid run M.onnx --input NAME=FILE.npy ... --save-outputs DIR` runs orchid, which
     writes DIR/<output-name>.npy ('/', ':' and '\\' in names become '_');
  5. every output is compared elementwise: pass iff |a - b| <= atol + rtol * |b| everywhere
     (b = ONNX Runtime), default atol 1e-4, rtol 1e-3; shapes and dtypes must match and
     integer/bool outputs must be equal.

--ort-only (or no orchid binary found) compares ORT with all optimisations against ORT
with none instead: that exercises the tool and shows how much two correct float32
implementations differ on each model. Stripped models need orchid materialize (or a side
file) in either mode; without it they are reported as skipped.

--write-reference [DIR] stores the inputs and ONNX Runtime outputs as
DIR/<model>/{inputs,outputs}/<name>.npy (default DIR: tests/data/reference) for models
whose inputs + outputs total less than --reference-limit bytes (1 MB), so that the C++
tests can check orchid without Python. Only models with inline weights are written unless
--reference-stripped is given: a stripped model's reference depends on orchid's weight
generator and must be rewritten whenever that changes.

Exit status: 0 when every compared model passes, 1 otherwise (skips do not fail).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parent.parent
STRIPPED_KEY, STRIPPED_VALUE = "orchid.weights", "stripped"
DEFAULT_ATOL, DEFAULT_RTOL = 1e-4, 1e-3

# Looser per-model tolerances, each with its reason. Keep this list short.
TOLERANCES: dict[str, tuple[float, float, str]] = {
}


def sanitize(name: str) -> str:
    for c in "/:\\":
        name = name.replace(c, "_")
    return name


def graph_inputs(model: onnx.ModelProto):
    inits = {t.name for t in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                raise ValueError(f"input {vi.name} has a symbolic dimension '{d.dim_param}'")
            dims.append(d.dim_value)
        out.append((vi.name, onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type), dims))
    return out


def make_inputs(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for name, dtype, shape in graph_inputs(model):
        lname = name.lower()
        if np.issubdtype(dtype, np.floating):
            a = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        elif dtype == np.bool_:
            a = np.ones(shape, dtype)
        elif "input_ids" in lname:
            a = rng.integers(0, 1000, size=shape).astype(dtype)
        elif "mask" in lname:
            a = np.ones(shape, dtype)
        else:  # token_type_ids and other index-like inputs
            a = np.zeros(shape, dtype)
        feeds[name] = np.ascontiguousarray(a)
    return feeds


def ort_session(path: str, optimize: bool):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = 2
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def compare(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> dict:
    r = {"shape": list(want.shape), "dtype": str(want.dtype)}
    if got.shape != want.shape:
        return {**r, "ok": False, "error": f"shape {list(got.shape)} != {list(want.shape)}"}
    if got.dtype != want.dtype:
        return {**r, "ok": False, "error": f"dtype {got.dtype} != {want.dtype}"}
    if not np.issubdtype(want.dtype, np.floating):
        bad = int(np.sum(got != want))
        return {**r, "ok": bad == 0, "max_abs": float(np.max(np.abs(got.astype(np.float64) -
                                                                  want.astype(np.float64)), initial=0)),
                "max_rel": 0.0 if bad == 0 else float("inf"), "mismatches": bad}
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    nonfinite = ~np.isfinite(g64) | ~np.isfinite(w64)
    same_nonfinite = nonfinite & ((g64 == w64) | (np.isnan(g64) & np.isnan(w64)))
    diff = np.abs(g64 - w64)
    diff[same_nonfinite] = 0.0
    diff[nonfinite & ~same_nonfinite] = np.inf
    rel = diff / np.maximum(np.abs(w64), 1e-12)
    bad = diff > atol + rtol * np.abs(np.where(np.isfinite(w64), w64, 0.0))
    return {**r, "ok": not bool(bad.any()), "max_abs": float(diff.max(initial=0)),
            "max_rel": float(rel.max(initial=0)), "mismatches": int(bad.sum()),
            "ref_max_abs": float(np.abs(np.where(np.isfinite(w64), w64, 0)).max(initial=0))}


def run_cmd(cmd: list[str], timeout: int) -> tuple[bool, str]:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout}s: {' '.join(cmd)}"
    except OSError as e:
        return False, f"{e}: {' '.join(cmd)}"
    out = (p.stdout + p.stderr).strip()
    return p.returncode == 0, out


def orchid_has(orchid: str | None, sub: str) -> bool:
    if not orchid or not os.path.exists(orchid):
        return False
    ok, out = run_cmd([orchid, sub, "--help"], 60)
    return ok


def self_contained(model_path: Path, model: onnx.ModelProto, work: Path, orchid: str | None,
                   timeout: int) -> tuple[str | None, str]:
    """Returns (path ONNX Runtime can run, how it was made) or (None, why not)."""
    meta = {p.key: p.value for p in model.metadata_props}
    if meta.get(STRIPPED_KEY) != STRIPPED_VALUE:
        return str(model_path), "inline weights"
    full = work / "full.onnx"
    side = model_path.with_suffix(".weights")
    if side.exists():
        # orchid reads an existing side file instead of regenerating; so does ORT.
        m = onnx.load(str(model_path), load_external_data=True)
        onnx.save_model(m, str(full))
        return str(full), f"side file {side.name}"
    if not orchid_has(orchid, "materialize"):
        return None, "stripped weights: needs `orchid materialize` (not available)"
    ok, out = run_cmd([orchid, "materialize", str(model_path), str(full)], timeout)
    if not ok:
        return None, f"orchid materialize failed: {out[-2000:]}"
    return str(full), "orchid materialize"


def write_reference(dest: Path, name: str, feeds: dict, outputs: dict):
    base = dest / name
    if base.exists():
        shutil.rmtree(base)
    for sub, arrays in (("inputs", feeds), ("outputs", outputs)):
        (base / sub).mkdir(parents=True, exist_ok=True)
        for k, a in arrays.items():
            np.save(base / sub / f"{sanitize(k)}.npy", np.ascontiguousarray(a), allow_pickle=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--only", action="append", metavar="NAME", help="model name (repeatable)")
    ap.add_argument("--models-dir", default=str(ROOT / "models"))
    ap.add_argument("--orchid", default=str(ROOT / "build" / "orchid"), help="orchid binary")
    ap.add_argument("--ort-only", action="store_true",
                    help="compare ORT (all optimisations) against ORT (none) instead of orchid")
    ap.add_argument("--work", help="working directory (default: a fresh temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the working directory")
    ap.add_argument("--write-reference", nargs="?", const=str(ROOT / "tests" / "data" / "reference"),
                    metavar="DIR", help="store inputs and ORT outputs (default tests/data/reference)")
    ap.add_argument("--reference-limit", type=int, default=1_000_000,
                    help="only write references whose inputs+outputs are below this many bytes")
    ap.add_argument("--reference-stripped", action="store_true",
                    help="also write references for stripped models (their values depend on "
                         "orchid's weight generator and must be rewritten when it changes)")
    ap.add_argument("--atol", type=float, help=f"override atol (default {DEFAULT_ATOL})")
    ap.add_argument("--rtol", type=float, help=f"override rtol (default {DEFAULT_RTOL})")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per orchid command")
    ap.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = ap.parse_args()

    models_dir = Path(args.models_dir)
    if args.only:
        paths = [models_dir / f"{n}.onnx" for n in args.only]
        missing = [str(p) for p in paths if not p.exists()]
        if missing:
            sys.exit(f"no such model: {', '.join(missing)}")
    else:
        paths = sorted(models_dir.glob("*.onnx"))

    ort_only = args.ort_only
    if not ort_only and not orchid_has(args.orchid, "run"):
        print(f"note: {args.orchid} has no `run` command (or does not exist); "
              f"falling back to --ort-only", file=sys.stderr)
        ort_only = True

    work_root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="orchid_cmp_"))
    work_root.mkdir(parents=True, exist_ok=True)
    results, ref_bytes_total = [], 0
    print(f"{'model':24s} {'output':22s} {'max abs':>10s} {'max rel':>10s}  result   ({'ORT vs ORT-noopt' if ort_only else 'orchid vs ORT'})")
    for path in paths:
        name = path.stem
        atol, rtol, why = TOLERANCES.get(name, (DEFAULT_ATOL, DEFAULT_RTOL, ""))
        atol = args.atol if args.atol is not None else atol
        rtol = args.rtol if args.rtol is not None else rtol
        res = {"model": name, "atol": atol, "rtol": rtol, "tolerance_reason": why,
               "mode": "ort-only" if ort_only else "orchid"}
        results.append(res)
        work = work_root / name
        if work.exists():
            shutil.rmtree(work)
        (work / "inputs").mkdir(parents=True)
        model = onnx.load(str(path), load_external_data=False)
        full, how = self_contained(path, model, work, args.orchid,
                                   args.timeout)
        res["weights"] = how
        if full is None:
            res["status"] = "skipped"
            print(f"{name:24s} {'-':22s} {'':>10s} {'':>10s}  SKIP     {how}")
            continue
        feeds = make_inputs(model)
        input_files = {}
        for k, a in feeds.items():
            f = work / "inputs" / f"{sanitize(k)}.npy"
            np.save(f, a, allow_pickle=False)
            input_files[k] = f
        t0 = time.time()
        sess = ort_session(full, optimize=True)
        out_names = [o.name for o in sess.get_outputs()]
        ort_out = dict(zip(out_names, sess.run(None, feeds)))
        res["ort_seconds"] = round(time.time() - t0, 3)

        got, error = {}, None
        t0 = time.time()
        if ort_only:
            ref_sess = ort_session(full, optimize=False)
            got = dict(zip(out_names, ref_sess.run(None, feeds)))
        else:
            out_dir = work / "orchid_outputs"
            cmd = [args.orchid, "run", str(path)]
            for k, f in input_files.items():
                cmd += ["--input", f"{k}={f}"]
            cmd += ["--save-outputs", str(out_dir)]
            ok, log = run_cmd(cmd, args.timeout)
            if not ok:
                error = f"orchid run failed: {log[-2000:]}"
            else:
                for k in out_names:
                    f = out_dir / f"{sanitize(k)}.npy"
                    if not f.exists():
                        error = f"orchid wrote no {f.name}"
                        break
                    got[k] = np.load(f, allow_pickle=False)
        res["candidate_seconds"] = round(time.time() - t0, 3)

        if error:
            res["status"] = "error"
            res["error"] = error
            print(f"{name:24s} {'-':22s} {'':>10s} {'':>10s}  ERROR    {error.splitlines()[-1] if error else ''}")
        else:
            res["outputs"] = {}
            for k in out_names:
                c = compare(got[k], ort_out[k], atol, rtol)
                res["outputs"][k] = c
                mark = "pass" if c["ok"] else "FAIL"
                detail = c.get("error", "")
                print(f"{name:24s} {k[:22]:22s} {c.get('max_abs', float('nan')):10.3g} "
                      f"{c.get('max_rel', float('nan')):10.3g}  {mark}     {detail}")
            res["status"] = "pass" if all(c["ok"] for c in res["outputs"].values()) else "fail"

        if args.write_reference:
            size = sum(a.nbytes for a in feeds.values()) + sum(a.nbytes for a in ort_out.values())
            if how != "inline weights" and not args.reference_stripped:
                print(f"{'':24s} reference not written: stripped weights (see --reference-stripped)")
            elif size >= args.reference_limit:
                print(f"{'':24s} reference not written: inputs+outputs {size} bytes >= {args.reference_limit}")
            else:
                write_reference(Path(args.write_reference), name, feeds, ort_out)
                ref_bytes_total += size
                res["reference_written"] = str(Path(args.write_reference) / name)
    if args.write_reference:
        print(f"references: {ref_bytes_total / 1024:.1f} KiB written under {args.write_reference}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if not args.keep and not args.work:
        shutil.rmtree(work_root, ignore_errors=True)
    elif args.keep or args.work:
        print(f"work directory: {work_root}")
    failed = [r["model"] for r in results if r["status"] in ("fail", "error")]
    skipped = [r["model"] for r in results if r["status"] == "skipped"]
    print(f"{len(results) - len(failed) - len(skipped)} passed, {len(failed)} failed"
          + (f" ({', '.join(failed)})" if failed else "") + f", {len(skipped)} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
