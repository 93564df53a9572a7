#!/usr/bin/env python3
"""Plots the benchmark tables in bench/results/ as PNGs beside them.

    python3 bench/plot_results.py        # any Python with matplotlib (pip install matplotlib)

Reads only the committed CSVs (what the benchmark scripts measured); writes
  executor.png       CPU inference time per model: orchid's plans vs ONNX Runtime and PyTorch
  orchestration.png  predicted latency per model and GPU: optimal plan vs the baselines
  mapping.png        multi-accelerator latency per workload and strategy, one panel per system
"""
import argparse
import csv
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def rows(name):
    with open(os.path.join(HERE, name), newline="") as f:
        return list(csv.DictReader(f))


def number(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return math.nan
    return v


def grouped_bars(ax, groups, series, values, errors=None, log=False):
    """One cluster of bars per group, one bar per series."""
    width = 0.8 / len(series)
    for s, name in enumerate(series):
        xs = [g + (s - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ys = [values[g][s] for g in range(len(groups))]
        yerr = None
        if errors is not None:
            yerr = [[errors[g][s][0] for g in range(len(groups))],
                    [errors[g][s][1] for g in range(len(groups))]]
        ax.bar(xs, ys, width, label=name, yerr=yerr, capsize=2 if yerr else 0)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def plot_executor(out):
    table = rows("executor.csv")
    engines = [("optimal", "orchid optimal plan"), ("greedy-fusion", "orchid greedy fusion"),
               ("operator-level", "orchid operator level"), ("onnxruntime", "ONNX Runtime"),
               ("pytorch", "PyTorch")]
    models = [r["model"] for r in table]
    values, errors = [], []
    for r in table:
        med = [number(r[f"{e}_median_ms"]) for e, _ in engines]
        lo = [max(0.0, m - number(r[f"{e}_p10_ms"])) for m, (e, _) in zip(med, engines)]
        hi = [max(0.0, number(r[f"{e}_p90_ms"]) - m) for m, (e, _) in zip(med, engines)]
        values.append(med)
        errors.append(list(zip(lo, hi)))
    fig, ax = plt.subplots(figsize=(11, 4.8))
    grouped_bars(ax, models, [n for _, n in engines], values, errors, log=True)
    ax.set_ylabel("median inference time (ms, log scale; whiskers p10-p90)")
    ax.set_title("CPU inference, 2 threads each (bench/results/executor.md): lower is better")
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_orchestration(out):
    # The zoo's real models; the tiny_* test graphs would crowd the picture.
    table = [r for r in rows("orchestration.csv")
             if not r["error"] and not r["model"].startswith("tiny_")]
    devices = sorted({r["device"] for r in table},
                     key=lambda d: ["v100", "a100", "h100", "h200", "cpu"].index(d)
                     if d in ["v100", "a100", "h100", "h200", "cpu"] else 99)
    fig, axes = plt.subplots(len(devices), 1, figsize=(10, 2.7 * len(devices)), sharex=True)
    if len(devices) == 1:
        axes = [axes]
    series = [("vs_greedy", "greedy fusion"), ("vs_operator", "operator level"),
              ("vs_primitive", "one kernel per primitive")]
    for ax, device in zip(axes, devices):
        sub = [r for r in table if r["device"] == device]
        models = [r["model"] for r in sub]
        values = [[number(r[key]) for key, _ in series] for r in sub]
        grouped_bars(ax, models, [n for _, n in series], values)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_title(device, fontsize=10)
        ax.set_ylabel("x optimal")
    axes[0].legend(fontsize=8, ncol=3)
    fig.suptitle("Kernel orchestration: predicted latency of each baseline plan / the optimal "
                 "plan's\n(bench/results/orchestration.md; above 1: the optimal plan is faster)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_mapping(out):
    table = rows("mapping.csv")
    systems = []
    for r in table:
        if r["system"] not in systems:
            systems.append(r["system"])
    series = [("latency_ms", "orchid GA"), ("h2h_ms", "H2H"), ("dp_ms", "data parallel"),
              ("greedy_ms", "greedy"), ("lower_bound_ms", "lower bound")]
    fig, axes = plt.subplots(len(systems), 1, figsize=(12, 3.4 * len(systems)))
    if len(systems) == 1:
        axes = [axes]
    for ax, system in zip(axes, systems):
        sub = [r for r in table if r["system"] == system]
        values = [[number(r[key]) for key, _ in series] for r in sub]
        grouped_bars(ax, [r["workload"] for r in sub], [n for _, n in series], values, log=True)
        ax.set_title(f"{system} ({sub[0]['devices']} devices)")
        ax.set_ylabel("latency (ms, log)")
    axes[0].legend(fontsize=8, ncol=5)
    fig.suptitle("Multi-accelerator mapping latency per strategy (bench/results/mapping.md): "
                 "lower is better")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=HERE, help="folder for the PNGs (default: bench/results)")
    args = parser.parse_args()
    for name, plot in [("executor.png", plot_executor), ("orchestration.png", plot_orchestration),
                       ("mapping.png", plot_mapping)]:
        path = os.path.join(args.out, name)
        plot(path)
        print("wrote", path)


if __name__ == "__main__":
    main()
