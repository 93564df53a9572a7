#!/usr/bin/env python3
"""Maps zoo models onto CPU clusters of 1, 2 and 4 MPI ranks and runs the plans
(`mpirun -n K orchid run MODEL --mapping PLAN --check --json -`): predicted vs measured
latency and the error, for the GA plan and for data parallelism (all layers batch-sharded
on one group of every rank). Reads only JSON: the plan (`orchid map --json`, see
docs/mapping_format.md) and the run's report (`orchid run --mapping --json`, see
docs/json_output.md). Writes bench/results/distributed.md and .csv (or --out DIR).

Usage: python3 bench/distributed_benchmark.py [--models tiny_conv,mobilenet_v2]
         [--ranks 1,2,4] [--batches 2,1] [--stream 4] [--repeats 3] [--quick] [--out DIR]
         [--merge CSV]
--merge: the rows of an earlier run's distributed.csv (other models, say) join this
run's in the tables; every row says when and at which commit it was measured. With
--models '' nothing runs and the tables are written from those rows.
--batches: samples per inference, each a set of rows. With 2 samples data parallelism
gives every rank of 2 one; with 1 it has nothing to share, and only splitting layers
(channels, heads, rows) can use a second rank: the case where a plan can beat it.
--quick: tiny_conv on 1 and 2 ranks, one repeat, results to a temporary folder (a smoke
test of the script, not a measurement). Standard library only; needs build/orchid built
with MPI. Timings need a quiet machine: the load average is recorded with every run.
"""
import argparse, csv, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORCHID = ROOT / "build" / "orchid"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def sh(cmd, timeout=3600):
    r = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def commit():
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def machine():
    """CPU model and vector ISA, as /proc/cpuinfo says."""
    model, flags = "unknown CPU", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{model}, {os.cpu_count()} cores, {isa}"


def run_once(model, plan, ranks, batch, stream, rounds):
    return json.loads(sh(["mpirun", "-n", str(ranks), "--oversubscribe", str(ORCHID), "run",
                          f"models/{model}.onnx", "--mapping", str(plan), "--batch", str(batch),
                          "--stream", str(stream), "--repeat", str(rounds), "--check", "--json",
                          "-"]))


def run_plan(model, plan, ranks, batch, stream, repeats, predicted_ms):
    """Latency: the plan run `repeats` times (separate mpiruns), each the median of rounds
    of one inference after the runner's warm-up (the plan's predicted latency is one
    inference's; in a stream the groups of a pipelined plan also compute at once and
    inferences queue), about a second of rounds per run; the run with the lowest median
    and its figures: a virtual machine's slow spells (other tenants) land on whole runs,
    as in bench/executor_benchmark.py, which also reports each engine's best round.
    Throughput: the median round of `stream` inferences pipelined through the groups."""
    rounds = max(5, min(500, round(1000 / max(predicted_ms, 1e-3))))
    reports = [run_once(model, plan, ranks, batch, 1, rounds) for _ in range(repeats)]
    reports.sort(key=lambda r: r["latency_ms"]["median"])
    r = reports[0]
    streamed = run_once(model, plan, ranks, batch, stream, max(3, rounds // stream))
    comm = max(p["communication_ms_per_inference"] for p in r["per_rank"])
    return {"measured_ms": r["latency_ms"]["median"],
            "measured_spread_ms": f"{reports[0]['latency_ms']['median']:.3f}-"
                                  f"{reports[-1]['latency_ms']['median']:.3f}",
            "rounds": rounds,
            "max_abs_diff": r["check"]["max_abs_diff"],
            "bit_identical": "yes" if r["check"]["bit_identical"] else "no",
            "load": r.get("load_average", [0])[0], "cpu_share": r["cpu_share"],
            "max_rank_comm_ms": comm,
            "stream_inferences_per_s": streamed["inferences_per_s"]}


def read_rows(path):
    """Rows of an earlier run's distributed.csv, with their numbers as numbers."""
    ints = {"batch", "ranks", "groups", "rounds"}
    floats = {"predicted_ms", "measured_ms", "max_abs_diff", "load", "max_rank_comm_ms",
              "stream_inferences_per_s"}
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            r.pop("error_pct", None)
            for k in ints:
                r[k] = int(r[k])
            for k in floats:
                r[k] = float(r[k])
            r["cpu_share"] = float(r["cpu_share"]) if r["cpu_share"] not in ("", "None") else None
            rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models",
                    default="tiny_conv,tiny_attention,mobilenet_v2,resnet50,bert_base,vit_b_16")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--batches", default="2,1")
    ap.add_argument("--stream", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--merge", default=None)
    args = ap.parse_args()
    if args.quick:
        args.models, args.ranks, args.repeats, args.stream = "tiny_conv", "1,2", 1, 2
        args.batches = "2"
    work = Path(tempfile.mkdtemp(prefix="orchid_distributed_bench_"))
    res = Path(args.out) if args.out else (work if args.quick else ROOT / "bench" / "results")
    res.mkdir(parents=True, exist_ok=True)
    load_at_start = os.getloadavg()[0]
    rows = []
    stamp = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    merged = read_rows(args.merge) if args.merge else []
    # --models '' with --merge: no runs, the tables written again from the merged rows.
    cases = [(b, m, k) for b in map(int, args.batches.split(",")) for m in args.models.split(",")
             if m for k in map(int, args.ranks.split(","))]
    for batch, model, ranks in cases:
        plan = work / f"{model}_cpu{ranks}_b{batch}.json"
        sh([str(ORCHID), "map", f"models/{model}.onnx", "--system",
            f"configs/systems/cpu{ranks}.toml", "--batch", str(batch), "--quiet",
            "--json", str(plan)])
        j = json.loads(plan.read_text())
        kinds = sorted({l["sharding"] for l in j["layers"]})
        row = {"measured_at": stamp, "commit": commit(),
               "model": model, "batch": batch, "ranks": ranks, "plan": "GA",
               "groups": len(j["groups"]), "shardings": " ".join(kinds),
               "predicted_ms": j["latency_s"] * 1e3}
        row.update(run_plan(model, plan, ranks, batch, args.stream, args.repeats,
                            row["predicted_ms"]))
        rows.append(row)
        dp = next((b for b in j["baselines"] if b["name"] == "data-parallel"), None)
        if ranks > 1 and dp and dp.get("available"):
            j["groups"] = [{"design": j["groups"][0]["design"], "devices": ranks,
                            "first_device": 0}]
            for l in j["layers"]:
                l["group"], l["sharding"] = 0, "batch"
            j["latency_s"] = dp["latency_s"]
            dplan = work / f"{model}_cpu{ranks}_b{batch}_dp.json"
            dplan.write_text(json.dumps(j))
            row = {"measured_at": stamp, "commit": commit(),
                   "model": model, "batch": batch, "ranks": ranks, "plan": "data-parallel",
                   "groups": 1, "shardings": "batch", "predicted_ms": dp["latency_s"] * 1e3}
            row.update(run_plan(model, dplan, ranks, batch, args.stream, args.repeats,
                                row["predicted_ms"]))
            rows.append(row)
        for r in rows[-2:]:
            print(r, flush=True)
    rows = merged + rows
    with open(res / "distributed.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()) + ["error_pct"])
        w.writeheader()
        for r in rows:
            w.writerow(dict(r, error_pct=f"{(r['measured_ms'] / r['predicted_ms'] - 1) * 100:.0f}"))
    errors = [abs(r["measured_ms"] / r["predicted_ms"] - 1) * 100 for r in rows]
    lines = [
        "# Distributed execution: predicted vs measured (generated by bench/distributed_benchmark.py)",
        "",
        f"Measured on {machine()}: " + "; ".join(
            f"{', '.join(dict.fromkeys(r['model'] for r in rows if (r['measured_at'], r['commit']) == when))}"
            f" from {when[0]} at commit {when[1]}"
            for when in dict.fromkeys((r["measured_at"], r["commit"]) for r in rows)) + ".",
        "",
        f"Batch (samples per inference) {' and '.join(map(str, dict.fromkeys(r['batch'] for r in rows)))}; measured = latency of one inference: per run (mpirun) the median "
        f"of 'rounds' timed inferences after the runner's warm-up (at least 0.2 s of untimed "
        f"rounds), the lowest of {args.repeats} runs' medians (all runs' range in 'runs'); "
        f"'inf/s': throughput, the median round of a stream of {args.stream} inferences "
        f"pipelined through the groups; machine: {os.cpu_count()} cores "
        + (f"(1-minute load average {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at "
           "the end of this run; " if cases else "(") + "'load' is the load average at the end of each run; above the core count the "
        "timings say more about the other jobs than about the plans). More ranks than cores are "
        "oversubscribed. Every run's outputs were checked against the reference interpreter "
        "(--check, |d| <= 1e-4 + 1e-3 |ref|); 'bit-identical' compares with the reference "
        "interpreter (the CPU executor's float results differ in the last bits; repeated runs "
        "of one plan are identical, tested). 'cpu share': CPU time / wall time of the ranks' "
        "computations of 100 us or more ('-': none); 'comm': the busiest rank's time in collectives and receives per inference.",
        "",
        f"Error |measured / predicted - 1|: median {statistics.median(errors):.0f} %, "
        f"max {max(errors):.0f} %, within 15 %: {sum(e <= 15 for e in errors)} of {len(errors)}.",
        "",
        "| model | batch | ranks | plan | groups | shardings | predicted ms | measured ms | runs | rounds | error | inf/s | load | cpu share | comm ms | max abs diff | bit-identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | {r['batch']} | {r['ranks']} | {r['plan']} | {r['groups']} | {r['shardings']} | "
                     f"{r['predicted_ms']:.3f} | {r['measured_ms']:.3f} | {r['measured_spread_ms']} | {r['rounds']} | "
                     f"{(r['measured_ms'] / r['predicted_ms'] - 1) * 100:+.0f} % | "
                     f"{r['stream_inferences_per_s']:.1f} | {r['load']:.1f} | "
                     f"{'-' if r['cpu_share'] is None else format(r['cpu_share'], '.2f')} | {r['max_rank_comm_ms']:.3f} | "
                     f"{r['max_abs_diff']:.3g} | {r['bit_identical']} |")
    # The GA plan against data parallelism: predicted and measured gain.
    lines += ["", "GA plan vs data parallelism (gain = 1 - GA / data-parallel):", "",
              "| model | batch | ranks | predicted gain | measured gain | same sign, at least half |",
              "|---|---|---|---|---|---|"]
    for ga in rows:
        dp = next((r for r in rows if r["plan"] == "data-parallel" and r["model"] == ga["model"]
                   and r["ranks"] == ga["ranks"] and r["batch"] == ga["batch"]), None)
        if ga["plan"] != "GA" or dp is None:
            continue
        pg = 1 - ga["predicted_ms"] / dp["predicted_ms"]
        mg = 1 - ga["measured_ms"] / dp["measured_ms"]
        # A predicted gain under 1 % is no gain (the plans differ by less than the noise).
        ok = ("no gain predicted" if abs(pg) < 0.01
              else "yes" if pg * mg > 0 and abs(mg) >= abs(pg) / 2 else "no")
        lines.append(f"| {ga['model']} | {ga['batch']} | {ga['ranks']} | {pg * 100:+.1f} % | {mg * 100:+.1f} % | {ok} |")
    (res / "distributed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {res / 'distributed.md'}")


if __name__ == "__main__":
    main()
