#!/usr/bin/env python3
"""Exports common third-party models (torchvision classification and detection, Hugging
Face encoders) with random weights and runs `orchid inspect` and `orchid run` on each,
recording whether orchid accepts it and, if not, the one-line reason it gives.

Usage: .venv/bin/python tools/check_third_party.py [--orchid build/orchid] [--out FILE.md]
                                                    [--only PREFIX[,PREFIX...]] [--ort]

--only keeps the models whose name starts with one of the prefixes (e.g. transformers);
--ort also runs ONNX Runtime on the same inputs and reports orchid's largest deviation
(tolerance |a - b| <= 1e-4 + 1e-3 |b|, as for the zoo).
"""
import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torchvision_models():
    import torchvision.models as tvm
    import torchvision.models.detection as det
    classification = ["efficientnet_b0", "densenet121", "squeezenet1_1", "shufflenet_v2_x1_0",
                      "mobilenet_v3_large", "regnet_y_400mf", "convnext_tiny", "swin_t",
                      "resnext50_32x4d", "googlenet", "inception_v3", "mnasnet1_0", "alexnet",
                      "vgg11", "wide_resnet50_2"]
    for name in classification:
        kwargs = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
        size = 299 if name == "inception_v3" else 224
        yield f"torchvision.{name}", lambda n=name, k=kwargs: getattr(tvm, n)(weights=None, **k), \
            (torch.randn(1, 3, size, size),), ["input"]
    for name in ["fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large",
                 "retinanet_resnet50_fpn", "fcos_resnet50_fpn", "maskrcnn_resnet50_fpn",
                 "keypointrcnn_resnet50_fpn"]:
        yield f"torchvision.detection.{name}", \
            lambda n=name: getattr(det, n)(weights=None, weights_backbone=None), \
            ([torch.rand(3, 320, 320)],), ["images"]


class Encoder(torch.nn.Module):
    """(input_ids, attention_mask) -> last hidden state, by keyword: newer transformers
    models take other arguments in second place, and no cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        kwargs = {"use_cache": False} if "use_cache" in self.model.forward.__code__.co_varnames else {}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)[0]


def huggingface_models():
    import transformers as tf
    seq = 64
    for name, cfg, cls in [("distilbert", tf.DistilBertConfig(), tf.DistilBertModel),
                           ("roberta", tf.RobertaConfig(), tf.RobertaModel),
                           ("albert", tf.AlbertConfig(), tf.AlbertModel),
                           ("electra", tf.ElectraConfig(), tf.ElectraModel),
                           ("deberta_v2", tf.DebertaV2Config(), tf.DebertaV2Model),
                           ("gpt2", tf.GPT2Config(n_layer=4), tf.GPT2Model)]:
        ids = torch.randint(0, 1000, (1, seq))
        mask = torch.ones(1, seq, dtype=torch.int64)
        yield f"transformers.{name}", lambda c=cfg, k=cls: Encoder(k(c)), (ids, mask), \
            ["input_ids", "attention_mask"]


def sanitize(name):
    for c in "/:\\":
        name = name.replace(c, "_")
    return name


def ort_inputs(path, folder):
    """Deterministic inputs (tools/compare_onnxruntime.py's make_inputs) saved as .npy,
    as `orchid run --input` arguments."""
    import numpy as np
    import onnx
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from compare_onnxruntime import make_inputs
    os.makedirs(folder, exist_ok=True)
    args = []
    for k, v in make_inputs(onnx.load(path, load_external_data=False)).items():
        f = os.path.join(folder, sanitize(k) + ".npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    return args


def compare_with_ort(path, inputs, outs):
    import numpy as np
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: np.load(os.path.join(inputs, sanitize(i.name) + ".npy"))
            for i in sess.get_inputs()}
    worst, bad = 0.0, []
    for meta, want in zip(sess.get_outputs(), sess.run(None, feed)):
        got = np.load(os.path.join(outs, sanitize(meta.name) + ".npy")).astype(np.float64)
        want = np.asarray(want).astype(np.float64)
        d = np.abs(got - want)
        worst = max(worst, float(d.max(initial=0)))
        if got.shape != want.shape or not np.all(d <= 1e-4 + 1e-3 * np.abs(want)):
            bad.append(meta.name)
    if bad and "detection" in path:
        return match_detections(sess, feed, outs)
    first = sess.get_outputs()[0].name
    rows = np.load(os.path.join(outs, sanitize(first) + ".npy")).shape
    size = f"; {first} {'x'.join(map(str, rows))}" if "detection" in path else ""
    return (f"MISMATCH vs ONNX Runtime ({', '.join(bad)}; max err {worst:.2g}{size})" if bad
            else f"matches ONNX Runtime (max err {worst:.1g}{size})")


def match_detections(sess, feed, outs):
    """Detection outputs row-aligned per detection (boxes first): pairs each orchid
    detection with the ONNX Runtime one whose box is nearest and compares every output
    row by row. With random weights many scores are nearly equal, and inputs that differ
    in the last bits (ResNet-FPN sums in another order) reorder them in TopK/NMS, so
    the raw outputs differ in order although the detections agree."""
    import numpy as np
    names = [o.name for o in sess.get_outputs()]
    want = [np.asarray(w).astype(np.float64) for w in sess.run(None, feed)]
    got = [np.load(os.path.join(outs, sanitize(n) + ".npy")).astype(np.float64) for n in names]
    n_got, n_want = got[0].shape[0], want[0].shape[0]
    if any(g.shape[:1] != (n_got,) for g in got) or any(w.shape[:1] != (n_want,) for w in want):
        return "MISMATCH vs ONNX Runtime (outputs not row-aligned per detection)"
    scale = max(float(np.abs(want[0]).max(initial=0)), 1.0)
    # Pairs by box distance, closest pairs first (a greedy pass in row order would let
    # one detection take its neighbour's partner).
    dist = np.abs(got[0][:, None, :] - want[0][None, :, :]).max(axis=2) if n_got and n_want \
        else np.zeros((n_got, n_want))
    pairs = sorted((float(dist[i, j]), i, j) for i in range(n_got) for j in range(n_want)
                   if dist[i, j] <= 1e-3 * scale)
    used_got, used_want = set(), set()
    matched, worst = 0, 0.0
    for _, i, j in pairs:
        if i in used_got or j in used_want:
            continue
        used_got.add(i)
        used_want.add(j)
        errs = [float(np.abs(g[i] - w[j]).max(initial=0)) / max(float(np.abs(w[j]).max(initial=0)), 1.0)
                for g, w in zip(got, want)]
        if max(errs) <= 1e-3:
            matched += 1
            worst = max(worst, max(errs))
    return (f"{'matches' if matched == n_got == n_want else 'MISMATCH'} ONNX Runtime up to the "
            f"order of near-equal scores: {matched} of {n_got} detections (ORT {n_want}) agree in "
            f"every output (max err {worst:.1g} of magnitude)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--orchid", default=os.path.join(ROOT, "build", "orchid"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "third_party.md"))
    parser.add_argument("--only", default="", help="comma-separated name prefixes")
    parser.add_argument("--ort", action="store_true", help="compare outputs with ONNX Runtime")
    parser.add_argument("--work", default="",
                        help="keep exports, inputs and outputs in this folder (default: a temporary one)")
    parser.add_argument("--out-append", action="store_true",
                        help="replace only the rows of the models checked in an existing table")
    args = parser.parse_args()
    prefixes = [p for p in args.only.split(",") if p]
    torch.manual_seed(0)
    rows = []
    if args.work:
        os.makedirs(args.work, exist_ok=True)
    with (contextlib.nullcontext(args.work) if args.work else tempfile.TemporaryDirectory()) as tmp:
        for family, source in (("torchvision", torchvision_models),
                               ("transformers", huggingface_models)):
            # Only import what --only asks for (transformers may not be installed).
            if prefixes and not any(p.startswith(family) or family.startswith(p) for p in prefixes):
                continue
            for name, make, example, input_names in source():
                if prefixes and not any(name.startswith(p) for p in prefixes):
                    continue
                path = os.path.join(tmp, name + ".onnx")
                try:
                    model = make().eval()
                    with torch.no_grad():
                        torch.onnx.export(model, example, path, opset_version=17,
                                          input_names=input_names, dynamo=False)
                except Exception as e:  # export failures are torch's, not orchid's
                    rows.append((name, "export failed", str(e).splitlines()[0][:160], ""))
                    continue
                inspect = subprocess.run([args.orchid, "inspect", path], capture_output=True,
                                         text=True)
                if inspect.returncode != 0:
                    rows.append((name, "refused", inspect.stderr.strip().replace(path, name + ".onnx")
                                 .replace("|", "/")[:300], ""))
                    print(rows[-1], flush=True)
                    continue
                t0 = time.monotonic()
                outs = os.path.join(tmp, name + ".out")
                cmd = [args.orchid, "run", path, "--save-outputs", outs]
                if args.ort:
                    cmd += ort_inputs(path, os.path.join(tmp, name + ".in"))
                run = subprocess.run(cmd, capture_output=True, text=True)
                wall = time.monotonic() - t0
                if run.returncode == 0:
                    note = compare_with_ort(path, os.path.join(tmp, name + ".in"), outs) \
                        if args.ort else ""
                    rows.append((name, "runs", note, f"{wall:.1f} s"))
                else:
                    rows.append((name, "refused", run.stderr.strip().replace(path, name + ".onnx")
                                 .replace("|", "/")[:300], ""))
                print(rows[-1], flush=True)
    if args.out_append and os.path.exists(args.out):
        # Keep the table's notes and other rows; rows of the models checked here are
        # replaced (or added at the end of the table).
        with open(args.out) as f:
            old = f.read().rstrip("\n").split("\n")
        fresh = {n: f"| {n} | {r} | {m} | {t} |" for n, r, m, t in rows}
        out = []
        for line in old:
            name = line.split("|")[1].strip() if line.startswith("| ") else None
            if name in fresh:
                out.append(fresh.pop(name))
            else:
                out.append(line)
        out += list(fresh.values())
        with open(args.out + ".tmp", "w") as f:
            f.write("\n".join(out) + "\n")
        os.replace(args.out + ".tmp", args.out)
        return 0
    lines = ["# Third-party ONNX exports", "",
             f"`tools/check_third_party.py`: torch {torch.__version__}, opset 17, random weights; "
             "`orchid run` with random inputs.", "",
             "| model | result | orchid's message | run time |", "|---|---|---|---|"]
    lines += [f"| {n} | {r} | {m} | {t} |" for n, r, m, t in rows]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
